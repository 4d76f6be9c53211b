#include "verify/check_one_sided.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "ir/step_endpoints.h"

namespace chorus::verify {

namespace one_sided {

// Vector clocks over threads (2 per threadblock: all threads, signalling threads). `exec`
// orders execution; `data` also makes writes visible. Relaxed signals and waits carry `exec`
// only: enough to order a read before a later write, not a write before a later read.
struct Clock {
  std::vector<std::uint32_t> data, exec;
  Clock() = default;
  explicit Clock(std::size_t threads) : data(threads, 0), exec(threads, 0) {}
};

void joinVector(std::vector<std::uint32_t>& into, const std::vector<std::uint32_t>& other) {
  for (std::size_t i = 0; i < into.size(); ++i)
    into[i] = std::max(into[i], other[i]);
}
void joinInto(Clock& into, const Clock& other) {
  joinVector(into.data, other.data);
  joinVector(into.exec, other.exec);
}
void joinExecInto(Clock& into, const Clock& other) {
  joinVector(into.exec, other.exec);
}
void tick(Clock& clock, int thread) {
  ++clock.data[static_cast<std::size_t>(thread)];
  ++clock.exec[static_cast<std::size_t>(thread)];
}

bool isSyncOnChannel(ir::OpKind op) {
  return op == ir::OpKind::signal || op == ir::OpKind::wait || op == ir::OpKind::relaxedSignal ||
         op == ir::OpKind::relaxedWait || op == ir::OpKind::flush;
}

bool isLocalDataOrNop(ir::OpKind op) {
  return op == ir::OpKind::copy || op == ir::OpKind::reduce || op == ir::OpKind::nop;
}

int bufferChunks(const ir::Algorithm& algorithm, const ir::Collective& collective, int rank,
                 ir::BufferKind buffer) {
  switch (buffer) {
    case ir::BufferKind::input:
      return collective.inputChunks(rank);
    case ir::BufferKind::output:
      return collective.outputChunks(rank);
    case ir::BufferKind::scratch:
      return algorithm.ranks[static_cast<std::size_t>(rank)].scratchChunks;
  }
  return 0;
}

// The rank whose memory the step's src (or dst) lies in.
int srcOwner(int rank, const ir::Step& step) {
  return ir::opRemoteOperand(step.op) == ir::RemoteOperand::src ? step.peer : rank;
}
int dstOwner(int rank, const ir::Step& step) {
  return ir::opRemoteOperand(step.op) == ir::RemoteOperand::dst ? step.peer : rank;
}

}  // namespace one_sided

bool checkOneSidedStructure(const ir::Algorithm& algorithm, const ir::Collective& collective,
                            FindingSink& sink) {
  using namespace one_sided;
  bool sound = true;
  auto fail = [&](int rank, int tb, int step, std::string message) {
    sound = false;
    sink.add(FindingKind::malformed, rank, tb, step, std::move(message));
  };
  if (static_cast<int>(algorithm.ranks.size()) != algorithm.nranks) {
    fail(-1, -1, -1,
         fmt::format("'{}' declares {} ranks but has {} rank programs", algorithm.name,
                     algorithm.nranks, algorithm.ranks.size()));
    return false;
  }
  for (std::size_t r = 0; r < algorithm.ranks.size(); ++r)
    if (algorithm.ranks[r].rank != static_cast<int>(r)) {
      fail(-1, -1, -1,
           fmt::format("rank program {} of '{}' says it is rank {}", r, algorithm.name,
                       algorithm.ranks[r].rank));
      return false;
    }
  const auto pairs = ir::pairChannels(algorithm);
  for (const auto& program : algorithm.ranks) {
    const int r = program.rank;
    for (std::size_t c = 0; c < program.channels.size(); ++c) {
      const int peer = program.channels[c].peer;
      if (peer < 0 || peer >= algorithm.nranks || peer == r)
        fail(r, -1, -1,
             fmt::format("rank {} channel {} connects to rank {}, which is {}", r, c, peer,
                         peer == r ? "its own rank" : "not a rank of this plan"));
    }
    if (!sound) continue;
    for (const auto& tb : program.threadblocks) {
      for (std::size_t s = 0; s < tb.steps.size(); ++s) {
        const ir::Step& step = tb.steps[s];
        const int si = static_cast<int>(s);
        const std::string where =
            fmt::format("{} ({})", describeStepRef(r, tb.id, si), ir::opName(step.op));
        if (!ir::opIsOneSided(step.op) && !isLocalDataOrNop(step.op)) {
          fail(r, tb.id, si,
               fmt::format("{} is a two-sided op in a plan of one-sided ops; chorus verifies a "
                           "plan in one model or the other, not both",
                           where));
          continue;
        }
        if (std::string issue = ir::stepEndpointIssue(program, tb.id, si, algorithm.nranks);
            !issue.empty()) {
          fail(r, tb.id, si, std::move(issue));
          continue;
        }
        if (ir::opTakesStepPeer(step.op)) {
          if (step.channel >= static_cast<int>(program.channels.size())) {
            fail(r, tb.id, si,
                 fmt::format("{} names channel {}, but rank {} has {} channel(s)", where,
                             step.channel, r, program.channels.size()));
            continue;
          }
          if (step.channel < 0 && isSyncOnChannel(step.op)) {
            fail(r, tb.id, si,
                 fmt::format("{} names no channel; it signals or waits on one", where));
            continue;
          }
          if (step.channel >= 0) {
            const ir::Channel& channel = program.channels[static_cast<std::size_t>(step.channel)];
            if (channel.peer != step.peer) {
              fail(r, tb.id, si,
                   fmt::format("{} names peer {}, but its channel {} connects to rank {}", where,
                               step.peer, step.channel, channel.peer));
              continue;
            }
            if (step.op == ir::OpKind::flush && channel.type != ir::ChannelType::port) {
              fail(r, tb.id, si,
                   fmt::format("{} flushes channel {}, a memory channel; only port channels "
                               "have puts in flight to flush",
                               where, step.channel));
              continue;
            }
            if (isSyncOnChannel(step.op) && step.op != ir::OpKind::flush &&
                pairs[static_cast<std::size_t>(r)][static_cast<std::size_t>(step.channel)] < 0) {
              fail(r, tb.id, si,
                   fmt::format("{} uses channel {} ({} channel to rank {}), which has no "
                               "counterpart on rank {}: the k-th {} channel from rank {} to rank "
                               "{} pairs with the k-th from rank {} to rank {}, and rank {} "
                               "declares fewer; add the channel on rank {}",
                               where, step.channel, ir::channelTypeName(channel.type), step.peer,
                               step.peer, ir::channelTypeName(channel.type), r, step.peer,
                               step.peer, r, step.peer, step.peer));
              continue;
            }
          }
        }
        if (step.op == ir::OpKind::barrier &&
            (step.count < 1 || step.count > static_cast<int>(program.threadblocks.size()))) {
          fail(r, tb.id, si,
               fmt::format("{} joins {} threadblocks, but rank {} has {}", where, step.count, r,
                           program.threadblocks.size()));
          continue;
        }
        if ((step.op == ir::OpKind::semAcquire || step.op == ir::OpKind::semRelease) &&
            step.channel >= static_cast<int>(program.semaphores.size())) {
          fail(r, tb.id, si,
               fmt::format("{} names semaphore {}, but rank {} has {}", where, step.channel, r,
                           program.semaphores.size()));
          continue;
        }
        if (ir::opMovesNoData(step.op)) continue;
        if (step.count < 1) {
          fail(r, tb.id, si,
               fmt::format("{} moves {} chunks; a step moves at least one", where, step.count));
          continue;
        }
        auto checkRange = [&](const char* role, int owner, ir::BufferKind buffer, int index) {
          const int limit = bufferChunks(algorithm, collective, owner, buffer);
          if (index >= 0 && index + step.count <= limit) return true;
          fail(r, tb.id, si,
               fmt::format("{} {} {} lies outside rank {}'s {} buffer ({} chunks for {})", where,
                           role, describeRange(buffer, index, step.count), owner,
                           ir::bufferName(buffer), limit, collective.name()));
          return false;
        };
        if (ir::opReadsSrc(step.op) &&
            !checkRange("reads", srcOwner(r, step), step.srcBuffer, step.srcIndex))
          continue;
        if (ir::opWritesDst(step.op))
          checkRange("writes", dstOwner(r, step), step.dstBuffer, step.dstIndex);
      }
    }
  }
  return sound;
}

namespace one_sided {

struct Access {
  int thread = -1;  // -1: the initial value (before the launch)
  std::uint32_t time = 0;
  int node = -1;
};

struct SlotState {
  Access write;
  std::vector<Access> reads;  // since the last write, latest per thread
};

struct Token {
  Clock clock;
  bool publishes = true;  // false for a relaxed signal
};

struct Barrier {
  int generation = 0;
  int arrived = 0;
  int expected = 0;
  Clock joined;
  std::vector<int> arrivedTbs;  // global tb ids of the open generation
  std::vector<Clock> released;  // per finished generation
};

struct Semaphore {
  int value = 0;
  Clock released;
};

struct TbState {
  int pc = 0;
  Clock all;  // what every thread of the block has seen
  Clock sub;  // what the signalling threads have seen
  int barrierGeneration = -1;
};

class OneSidedRun {
 public:
  OneSidedRun(const ProgramModel& model, const VerifyOptions& options, FindingSink& sink)
      : model_(model), algorithm_(*model.algorithm), options_(options), sink_(sink) {}

  OneSidedResult run();

 private:
  bool stepOnce(int g);  // false: blocked
  bool onSignallingThreads(int rank, const ir::Step& step) const;
  void touch(int slot, int thread, const Clock& clock, int node, bool write);
  void reportRace(int slot, const Access& earlier, bool earlierWrites, int node, bool writes);
  void reportBlocked(int g);
  void reportUnbalanced();
  void reportUnfinishedRemoteAccesses();
  std::string slotText(int slot) const {
    return fmt::format("rank {}'s {}", model_.slotRank[static_cast<std::size_t>(slot)],
                       model_.slotName(slot));
  }
  std::string nodeText(int node) const {
    const int g = model_.nodeTb[static_cast<std::size_t>(node)];
    return fmt::format("{} ({})", model_.nodeName(node),
                       describeOp(model_.threadblock(g), model_.step(node)));
  }

  const ProgramModel& model_;
  const ir::Algorithm& algorithm_;
  const VerifyOptions& options_;
  FindingSink& sink_;
  std::vector<TbState> tbs_;
  std::vector<ir::ChunkValue> values_;
  std::vector<SlotState> slots_;
  std::vector<std::vector<std::vector<Token>>> tokens_;  // rank -> channel -> received
  std::vector<std::vector<std::size_t>> taken_;          // rank -> channel -> waits done
  std::vector<std::vector<int>> pairs_;
  std::vector<std::map<int, Barrier>> barriers_;  // rank -> barrier id
  std::vector<std::vector<Semaphore>> semaphores_;
  std::set<std::pair<int, int>> reportedRaces_;
  std::set<int> reportedNodes_;  // uninitialized / writes-input, once per step
};

bool OneSidedRun::onSignallingThreads(int rank, const ir::Step& step) const {
  switch (step.op) {
    case ir::OpKind::put:
    case ir::OpKind::get:
    case ir::OpKind::getReduce:
      // A port-channel put is a request the signalling thread hands to the proxy.
      return step.channel >= 0 && algorithm_.ranks[static_cast<std::size_t>(rank)]
                                          .channels[static_cast<std::size_t>(step.channel)]
                                          .type == ir::ChannelType::port;
    case ir::OpKind::copy:
    case ir::OpKind::reduce:
    case ir::OpKind::nop:
    case ir::OpKind::barrier:
      return false;
    default:
      return true;
  }
}

void OneSidedRun::reportRace(int slot, const Access& earlier, bool earlierWrites, int node,
                             bool writes) {
  if (!options_.checkRaces || sink_.full()) return;
  if (!reportedRaces_.insert({earlier.node, node}).second) return;
  const int g1 = model_.nodeTb[static_cast<std::size_t>(earlier.node)];
  const int g2 = model_.nodeTb[static_cast<std::size_t>(node)];
  const std::string hint =
      g1 == g2 ? "they run on different threads of one threadblock: put a nop between them"
               : "make the second wait for a signal (or semaphore, or barrier) that the first "
                 "one's threadblock gives after it";
  const TbInfo& info = model_.tbs[static_cast<std::size_t>(g2)];
  sink_.add(FindingKind::race, info.rank, info.tb, model_.stepOf(node),
            fmt::format("race on {}: {} {} it and {} {} it, and no signal/wait, barrier, "
                        "semaphore or nop orders the two; {}",
                        slotText(slot), nodeText(earlier.node), earlierWrites ? "writes" : "reads",
                        nodeText(node), writes ? "writes" : "reads", hint));
}

void OneSidedRun::touch(int slot, int thread, const Clock& clock, int node, bool write) {
  SlotState& state = slots_[static_cast<std::size_t>(slot)];
  // An earlier write must be visible (data); an earlier read need only have executed (exec).
  auto ordered = [&](const Access& a, const std::vector<std::uint32_t>& by) {
    return a.thread < 0 || a.thread == thread || by[static_cast<std::size_t>(a.thread)] >= a.time;
  };
  if (!ordered(state.write, clock.data)) reportRace(slot, state.write, true, node, write);
  const Access self{thread, clock.data[static_cast<std::size_t>(thread)], node};
  if (!write) {
    for (Access& read : state.reads)
      if (read.thread == thread) {
        read = self;
        return;
      }
    state.reads.push_back(self);
    return;
  }
  for (const Access& read : state.reads)
    if (!ordered(read, clock.exec)) reportRace(slot, read, false, node, true);
  state.write = self;
  state.reads.clear();
}

bool OneSidedRun::stepOnce(int g) {
  TbState& tb = tbs_[static_cast<std::size_t>(g)];
  const TbInfo& info = model_.tbs[static_cast<std::size_t>(g)];
  const int rank = info.rank;
  const ir::Step& step = model_.threadblock(g).steps[static_cast<std::size_t>(tb.pc)];
  const int node = model_.nodeOf(g, tb.pc);
  const bool sub = onSignallingThreads(rank, step);
  const int thread = 2 * g + (sub ? 1 : 0);
  Clock& clock = sub ? tb.sub : tb.all;
  const auto r = static_cast<std::size_t>(rank);
  switch (step.op) {
    case ir::OpKind::nop:
      joinInto(tb.all, tb.sub);
      tb.sub = tb.all;
      break;
    case ir::OpKind::barrier: {
      Barrier& barrier = barriers_[r][step.channel];
      if (tb.barrierGeneration < 0) {
        if (barrier.arrived == 0) {
          barrier.expected = step.count;
          barrier.joined = Clock(tb.all.data.size());
        } else if (barrier.expected != step.count && !sink_.full()) {
          sink_.add(FindingKind::malformed, rank, info.tb, tb.pc,
                    fmt::format("{} joins {} threadblocks, but the threadblocks already at "
                                "barrier {} of rank {} join {}; every step of one barrier names "
                                "the same count",
                                nodeText(node), step.count, step.channel, rank, barrier.expected));
        }
        joinInto(barrier.joined, tb.all);
        joinInto(barrier.joined, tb.sub);
        tb.barrierGeneration = barrier.generation;
        barrier.arrivedTbs.push_back(g);
        if (++barrier.arrived >= barrier.expected) {
          barrier.released.push_back(barrier.joined);
          ++barrier.generation;
          barrier.arrived = 0;
          barrier.arrivedTbs.clear();
        }
      }
      if (tb.barrierGeneration >= static_cast<int>(barrier.released.size())) return false;
      joinInto(tb.all, barrier.released[static_cast<std::size_t>(tb.barrierGeneration)]);
      tb.sub = tb.all;
      tb.barrierGeneration = -1;
      break;
    }
    case ir::OpKind::wait:
    case ir::OpKind::relaxedWait: {
      const auto c = static_cast<std::size_t>(step.channel);
      if (taken_[r][c] >= tokens_[r][c].size()) return false;
      const Token& token = tokens_[r][c][taken_[r][c]++];
      if (token.publishes && step.op == ir::OpKind::wait)
        joinInto(tb.sub, token.clock);
      else
        joinExecInto(tb.sub, token.clock);
      tick(tb.sub, thread);
      break;
    }
    case ir::OpKind::signal:
    case ir::OpKind::relaxedSignal: {
      tick(tb.sub, thread);
      const auto peer = static_cast<std::size_t>(step.peer);
      const auto paired =
          static_cast<std::size_t>(pairs_[r][static_cast<std::size_t>(step.channel)]);
      tokens_[peer][paired].push_back({tb.sub, step.op == ir::OpKind::signal});
      break;
    }
    case ir::OpKind::flush:
      // Port-channel puts are modelled as done when issued, so nothing is left to flush.
      tick(tb.sub, thread);
      break;
    case ir::OpKind::semRelease: {
      Semaphore& s = semaphores_[r][static_cast<std::size_t>(step.channel)];
      tick(tb.sub, thread);
      ++s.value;
      joinInto(s.released, tb.sub);
      break;
    }
    case ir::OpKind::semAcquire: {
      Semaphore& s = semaphores_[r][static_cast<std::size_t>(step.channel)];
      if (s.value <= 0) return false;
      --s.value;
      joinInto(tb.sub, s.released);
      tick(tb.sub, thread);
      break;
    }
    default: {  // data: copy, reduce, put, get, getReduce
      tick(clock, thread);
      const int from = srcOwner(rank, step);
      const int to = dstOwner(rank, step);
      std::vector<ir::ChunkValue> result(static_cast<std::size_t>(step.count));
      for (int i = 0; i < step.count; ++i) {
        const int src = model_.slotOf(from, step.srcBuffer, step.srcIndex + i);
        touch(src, thread, clock, node, false);
        ir::ChunkValue value = values_[static_cast<std::size_t>(src)];
        if (!value.initialized() && reportedNodes_.insert(node).second && !sink_.full())
          sink_.add(FindingKind::uninitialized, rank, info.tb, tb.pc,
                    fmt::format("{} reads {}, which holds no value at that point", nodeText(node),
                                slotText(src)));
        if (ir::opReadsDst(step.op)) {
          const int dst = model_.slotOf(to, step.dstBuffer, step.dstIndex + i);
          touch(dst, thread, clock, node, false);
          const ir::ChunkValue& old = values_[static_cast<std::size_t>(dst)];
          // An uninitialized operand (reported above or by its own read) poisons the result.
          value = old.initialized() && value.initialized() ? ir::ChunkValue::reduce(old, value)
                                                           : ir::ChunkValue();
        }
        result[static_cast<std::size_t>(i)] = std::move(value);
      }
      for (int i = 0; i < step.count; ++i) {
        const int dst = model_.slotOf(to, step.dstBuffer, step.dstIndex + i);
        touch(dst, thread, clock, node, true);
        values_[static_cast<std::size_t>(dst)] = std::move(result[static_cast<std::size_t>(i)]);
        if (options_.checkWritesInput && !algorithm_.inPlace &&
            model_.slotLocation[static_cast<std::size_t>(dst)].buffer == ir::BufferKind::input &&
            reportedNodes_.insert(-1 - node).second && !sink_.full())
          sink_.add(FindingKind::writesInput, rank, info.tb, tb.pc,
                    fmt::format("{} writes {}, the input of an out-of-place plan (the caller's "
                                "send buffer, which a collective leaves unchanged); write to "
                                "output or scratch instead",
                                nodeText(node), slotText(dst)));
      }
      break;
    }
  }
  ++tb.pc;
  return true;
}

void OneSidedRun::reportBlocked(int g) {
  const TbState& tb = tbs_[static_cast<std::size_t>(g)];
  const TbInfo& info = model_.tbs[static_cast<std::size_t>(g)];
  const ir::Step& step = model_.threadblock(g).steps[static_cast<std::size_t>(tb.pc)];
  const int node = model_.nodeOf(g, tb.pc);
  const auto r = static_cast<std::size_t>(info.rank);
  std::string why;
  if (step.op == ir::OpKind::wait || step.op == ir::OpKind::relaxedWait) {
    const auto c = static_cast<std::size_t>(step.channel);
    why = fmt::format(
        "it is wait number {} on channel {}, but rank {} signals the paired channel {} only {} "
        "time(s) in a launch; add the missing signal on rank {} (or drop this wait)",
        taken_[r][c] + 1, step.channel, step.peer, pairs_[r][c], tokens_[r][c].size(), step.peer);
  } else if (step.op == ir::OpKind::semAcquire) {
    why = fmt::format("semaphore {} of rank {} stays at 0 and no semRelease is left to raise it",
                      step.channel, info.rank);
  } else {
    const Barrier& barrier = barriers_[r].at(step.channel);
    why = fmt::format("barrier {} of rank {} waits for {} threadblocks and only {} arrive",
                      step.channel, info.rank, barrier.expected, barrier.arrived);
  }
  sink_.add(FindingKind::deadlock, info.rank, info.tb, tb.pc,
            fmt::format("{} never completes: {}", nodeText(node), why));
}

void OneSidedRun::reportUnbalanced() {
  for (const auto& program : algorithm_.ranks) {
    const auto r = static_cast<std::size_t>(program.rank);
    for (std::size_t c = 0; c < program.channels.size() && !sink_.full(); ++c) {
      if (tokens_[r][c].size() == taken_[r][c]) continue;
      sink_.add(FindingKind::race, program.rank, -1, -1,
                fmt::format("rank {} signals rank {}'s channel {} {} time(s) in a launch, but "
                            "rank {} waits on it {} time(s): tokens persist across launches, so "
                            "the next launch's waits pass before their signals; balance them",
                            program.channels[c].peer, program.rank, c, tokens_[r][c].size(),
                            program.rank, taken_[r][c]));
    }
    for (std::size_t s = 0; s < program.semaphores.size() && !sink_.full(); ++s) {
      if (semaphores_[r][s].value == program.semaphores[s]) continue;
      sink_.add(FindingKind::race, program.rank, -1, -1,
                fmt::format("semaphore {} of rank {} starts at {} and ends a launch at {}; "
                            "semaphores persist across launches, so acquires and releases must "
                            "balance",
                            s, program.rank, program.semaphores[s], semaphores_[r][s].value));
    }
  }
}

// A rank's launch ends when its own threadblocks end; the caller then reads its output and
// reuses its buffers. So every access another rank makes to its memory must happen before
// that end (MSCCL++ plans close with a signal after the last put and a wait for it).
void OneSidedRun::reportUnfinishedRemoteAccesses() {
  std::vector<Clock> ends(algorithm_.ranks.size(), Clock(2 * model_.tbs.size()));
  for (std::size_t g = 0; g < model_.tbs.size(); ++g) {
    Clock& end = ends[static_cast<std::size_t>(model_.tbs[g].rank)];
    joinInto(end, tbs_[g].all);
    joinInto(end, tbs_[g].sub);
  }
  std::set<int> reported;  // nodes
  auto check = [&](int slot, const Access& access, bool writes) {
    if (access.thread < 0 || sink_.full()) return;
    const int owner = model_.slotRank[static_cast<std::size_t>(slot)];
    const TbInfo& by = model_.tbs[static_cast<std::size_t>(access.thread / 2)];
    if (by.rank == owner) return;
    const Clock& end = ends[static_cast<std::size_t>(owner)];
    if ((writes ? end.data : end.exec)[static_cast<std::size_t>(access.thread)] >= access.time)
      return;
    if (!reported.insert(access.node).second) return;
    sink_.add(FindingKind::race, by.rank, by.tb, model_.stepOf(access.node),
              fmt::format("{} {} {}, but nothing orders it before rank {}'s launch ends, when "
                          "the caller {} that buffer; have rank {} signal after it (past a nop) "
                          "and rank {} wait for that signal",
                          nodeText(access.node), writes ? "writes" : "reads", slotText(slot), owner,
                          writes ? "reads" : "may overwrite", by.rank, owner));
  };
  for (std::size_t slot = 0; slot < slots_.size(); ++slot) {
    check(static_cast<int>(slot), slots_[slot].write, true);
    for (const Access& read : slots_[slot].reads)
      check(static_cast<int>(slot), read, false);
  }
}

OneSidedResult OneSidedRun::run() {
  const std::size_t tbCount = model_.tbs.size();
  tbs_.resize(tbCount);
  for (TbState& tb : tbs_) {
    tb.all = Clock(2 * tbCount);
    tb.sub = Clock(2 * tbCount);
  }
  const std::size_t slotCount = model_.slotRank.size();
  values_.resize(slotCount);
  slots_.resize(slotCount);
  for (int r = 0; r < algorithm_.nranks; ++r)
    for (std::size_t i = 0; i < model_.inputSlot[static_cast<std::size_t>(r)].size(); ++i)
      values_[static_cast<std::size_t>(model_.inputSlot[static_cast<std::size_t>(r)][i])] =
          model_.collective->initialInput(r, static_cast<int>(i));
  pairs_ = ir::pairChannels(algorithm_);
  tokens_.resize(algorithm_.ranks.size());
  taken_.resize(algorithm_.ranks.size());
  barriers_.resize(algorithm_.ranks.size());
  semaphores_.resize(algorithm_.ranks.size());
  for (const auto& program : algorithm_.ranks) {
    const auto r = static_cast<std::size_t>(program.rank);
    tokens_[r].resize(program.channels.size());
    taken_[r].assign(program.channels.size(), 0);
    for (int init : program.semaphores)
      semaphores_[r].push_back({init, Clock(2 * tbCount)});
  }

  // Run every threadblock as far as it goes, round after round, until none moves. Waits and
  // barriers only ever unblock, so with them the order does not change whether the launch
  // finishes; a semaphore several threadblocks acquire is explored in this one order.
  bool moved = true;
  while (moved) {
    moved = false;
    for (std::size_t g = 0; g < tbCount; ++g) {
      const int steps = model_.tbs[g].steps;
      while (tbs_[g].pc < steps && stepOnce(static_cast<int>(g)))
        moved = true;
    }
  }
  OneSidedResult result;
  result.finished = true;
  for (std::size_t g = 0; g < tbCount; ++g)
    if (tbs_[g].pc < model_.tbs[g].steps) {
      result.finished = false;
      if (!sink_.full()) reportBlocked(static_cast<int>(g));
    }
  if (result.finished && options_.checkRaces) {
    reportUnbalanced();
    reportUnfinishedRemoteAccesses();
  }
  result.slots = std::move(values_);
  return result;
}

}  // namespace one_sided

OneSidedResult simulateOneSided(const ProgramModel& model, const VerifyOptions& options,
                                FindingSink& sink) {
  return one_sided::OneSidedRun(model, options, sink).run();
}

}  // namespace chorus::verify
