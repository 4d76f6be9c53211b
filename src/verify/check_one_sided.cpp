#include "verify/check_one_sided.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "ir/one_sided_structure.h"
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

}  // namespace one_sided

bool checkOneSidedStructure(const ir::Algorithm& algorithm, const ir::Collective& collective,
                            FindingSink& sink) {
  const std::vector<ir::OneSidedIssue> issues = ir::findOneSidedIssues(algorithm, collective);
  for (const auto& issue : issues)
    sink.add(FindingKind::malformed, issue.rank, issue.tb, issue.step, issue.message);
  return issues.empty();
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

// The LL packets of one chunk: written at most once per launch (MSCCL++'s packets carry the
// launch's flag, so a second write in one launch leaves readers with either value).
struct PacketSlot {
  int rank = 0;
  ir::BufferKind buffer = ir::BufferKind::scratch;
  int index = 0;
  bool written = false;
  ir::ChunkValue value;
  std::shared_ptr<const Clock> clock;  // the writer's clock when it wrote
  Access write;
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
  void initPackets();
  PacketSlot& packet(int rank, ir::BufferKind buffer, int index) {
    return packets_[static_cast<std::size_t>(
        packetBase_[static_cast<std::size_t>(rank)][static_cast<std::size_t>(buffer)] + index)];
  }
  // The first packet slot the step waits for that nobody wrote yet, or nullptr.
  const PacketSlot* missingPacket(int rank, const ir::Step& step) {
    if (!step.srcPackets || step.rawPackets) return nullptr;
    for (int i = 0; i < step.count; ++i) {
      const PacketSlot& slot = packet(ir::srcOwner(rank, step), step.srcBuffer, step.srcIndex + i);
      if (!slot.written) return &slot;
    }
    return nullptr;
  }
  void moveData(int g, int thread, Clock& clock, int node);
  static std::string packetText(const PacketSlot& slot) {
    return fmt::format("rank {}'s packets of {}[{}]", slot.rank, ir::bufferName(slot.buffer),
                       slot.index);
  }
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
  std::vector<PacketSlot> packets_;
  std::vector<std::array<int, 3>> packetBase_;           // rank -> buffer -> its first packet slot
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
    default:  // data: copy, reduce, put, get, getReduce
      if (missingPacket(rank, step)) return false;
      moveData(g, thread, clock, node);
      break;
  }
  ++tb.pc;
  return true;
}

void OneSidedRun::moveData(int g, int thread, Clock& clock, int node) {
  const TbInfo& info = model_.tbs[static_cast<std::size_t>(g)];
  const int rank = info.rank;
  const int pc = tbs_[static_cast<std::size_t>(g)].pc;
  const ir::Step& step = model_.threadblock(g).steps[static_cast<std::size_t>(pc)];
  const int from = ir::srcOwner(rank, step);
  const int to = ir::dstOwner(rank, step);
  // A packet read waits for every packet of this launch and so acquires what each writer saw.
  if (step.srcPackets && !step.rawPackets)
    for (int i = 0; i < step.count; ++i)
      joinInto(clock, *packet(from, step.srcBuffer, step.srcIndex + i).clock);
  tick(clock, thread);
  std::vector<ir::ChunkValue> result(static_cast<std::size_t>(step.count));
  for (int i = 0; i < step.count; ++i) {
    ir::ChunkValue value;
    // What the step reads, named only when a finding needs it (this loop is hot).
    auto sourceText = [&] {
      return step.srcPackets ? packetText(packet(from, step.srcBuffer, step.srcIndex + i))
                             : slotText(model_.slotOf(from, step.srcBuffer, step.srcIndex + i));
    };
    if (step.srcPackets) {
      const PacketSlot& slot = packet(from, step.srcBuffer, step.srcIndex + i);
      const bool ordered =
          slot.written &&
          (slot.write.thread == thread ||
           clock.data[static_cast<std::size_t>(slot.write.thread)] >= slot.write.time);
      if (step.rawPackets && !ordered && options_.checkRaces && !sink_.full() &&
          reportedNodes_.insert(node).second)
        sink_.add(FindingKind::race, rank, info.tb, pc,
                  fmt::format("{} copies {} as they are, but {}: the proxy may copy packets "
                              "without this launch's flag, and rank {}'s reader then spins "
                              "forever; wait for the packets first (rppkt) or order their "
                              "writer before this put",
                              nodeText(node), sourceText(),
                              slot.written ? fmt::format("their write ({}) is not ordered before "
                                                         "it",
                                                         nodeText(slot.write.node))
                                           : std::string("nothing has written them yet"),
                              step.peer));
      if (slot.written) value = slot.value;
    } else {
      const int src = model_.slotOf(from, step.srcBuffer, step.srcIndex + i);
      touch(src, thread, clock, node, false);
      value = values_[static_cast<std::size_t>(src)];
    }
    if (!value.initialized() && reportedNodes_.insert(node).second && !sink_.full())
      sink_.add(FindingKind::uninitialized, rank, info.tb, pc,
                fmt::format("{} reads {}, which holds no value at that point", nodeText(node),
                            sourceText()));
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
  std::shared_ptr<const Clock> written;  // one copy of the clock for every packet written
  for (int i = 0; i < step.count; ++i) {
    const int index = step.dstIndex + i;
    auto targetText = [&] {
      return step.dstPackets ? packetText(packet(to, step.dstBuffer, index))
                             : slotText(model_.slotOf(to, step.dstBuffer, index));
    };
    if (step.dstPackets) {
      PacketSlot& slot = packet(to, step.dstBuffer, index);
      if (slot.written && options_.checkRaces && !sink_.full() &&
          reportedRaces_.insert({slot.write.node, node}).second)
        sink_.add(FindingKind::race, rank, info.tb, pc,
                  fmt::format("{} writes {}, which {} already wrote in this launch: packets "
                              "carry one flag per launch, so a reader gets either value; write "
                              "each packet once per launch",
                              nodeText(node), packetText(slot), nodeText(slot.write.node)));
      if (!written) written = std::make_shared<const Clock>(clock);
      slot.written = true;
      slot.value = std::move(result[static_cast<std::size_t>(i)]);
      slot.clock = written;
      slot.write = {thread, clock.data[static_cast<std::size_t>(thread)], node};
    } else {
      const int dst = model_.slotOf(to, step.dstBuffer, index);
      touch(dst, thread, clock, node, true);
      values_[static_cast<std::size_t>(dst)] = std::move(result[static_cast<std::size_t>(i)]);
    }
    if (options_.checkWritesInput && !algorithm_.inPlace &&
        step.dstBuffer == ir::BufferKind::input && reportedNodes_.insert(-1 - node).second &&
        !sink_.full())
      sink_.add(FindingKind::writesInput, rank, info.tb, pc,
                fmt::format("{} writes {}, the input of an out-of-place plan (the caller's "
                            "send buffer, which a collective leaves unchanged); write to output "
                            "or scratch instead",
                            nodeText(node), targetText()));
  }
}

void OneSidedRun::reportBlocked(int g) {
  const TbState& tb = tbs_[static_cast<std::size_t>(g)];
  const TbInfo& info = model_.tbs[static_cast<std::size_t>(g)];
  const ir::Step& step = model_.threadblock(g).steps[static_cast<std::size_t>(tb.pc)];
  const int node = model_.nodeOf(g, tb.pc);
  const auto r = static_cast<std::size_t>(info.rank);
  std::string why;
  if (const PacketSlot* missing = missingPacket(info.rank, step)) {
    why = fmt::format(
        "it reads {}, which no step writes in this launch (a packet read spins until the packet "
        "carries the launch's flag); write those packets first, or read the plain data",
        packetText(*missing));
  } else if (step.op == ir::OpKind::wait || step.op == ir::OpKind::relaxedWait) {
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
  for (const PacketSlot& slot : packets_) {
    const Access& write = slot.write;
    if (!slot.written || sink_.full()) continue;
    const TbInfo& by = model_.tbs[static_cast<std::size_t>(write.thread / 2)];
    if (by.rank == slot.rank ||
        ends[static_cast<std::size_t>(slot.rank)].data[static_cast<std::size_t>(write.thread)] >=
            write.time ||
        !reported.insert(write.node).second)
      continue;
    sink_.add(FindingKind::race, by.rank, by.tb, model_.stepOf(write.node),
              fmt::format("{} writes {}, which rank {} never reads in this launch, so nothing "
                          "orders the write before that rank's launch ends and the caller "
                          "reuses the buffer; read the packets, or drop the write",
                          nodeText(write.node), packetText(slot), slot.rank));
  }
}

void OneSidedRun::initPackets() {
  packetBase_.resize(algorithm_.ranks.size());
  bool anyPackets = false;
  for (const auto& program : algorithm_.ranks)
    for (const auto& tb : program.threadblocks)
      for (const auto& step : tb.steps)
        anyPackets = anyPackets || step.srcPackets || step.dstPackets;
  if (!anyPackets) return;
  const ir::Collective& collective = *model_.collective;
  int next = 0;
  for (const auto& program : algorithm_.ranks)
    for (int b = 0; b < 3; ++b) {
      const auto buffer = static_cast<ir::BufferKind>(b);
      packetBase_[static_cast<std::size_t>(program.rank)][static_cast<std::size_t>(b)] = next;
      const int chunks = ir::oneSidedBufferChunks(algorithm_, collective, program.rank, buffer);
      for (int i = 0; i < chunks; ++i)
        packets_.push_back({program.rank, buffer, i, false, {}, nullptr, {}});
      next += chunks;
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
  initPackets();
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
