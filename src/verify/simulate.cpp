#include "verify/simulate.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <queue>
#include <utility>

#include <fmt/format.h>

#include "ir/apply_step.h"

namespace chorus::verify {

namespace {

using ir::ChunkValue;

struct Message {
  std::vector<ChunkValue> payload;  // filled for iteration-0 messages when tracking data
};

ChunkValue reduceValues(const ChunkValue& a, const ChunkValue& b) {
  if (!a.initialized()) return b;
  if (!b.initialized()) return a;
  return ChunkValue::reduce(a, b);
}

class Simulator {
 public:
  Simulator(const ProgramModel& model, const SimOptions& options, FindingSink& sink)
      : model_(model), options_(options), sink_(sink) {
    const std::size_t ntbs = model.tbs.size();
    pos_.assign(ntbs, 0);
    total_.resize(ntbs);
    for (std::size_t t = 0; t < ntbs; ++t)
      total_[t] = static_cast<long>(options.iterations) * model.tbs[t].steps;
    depWaiters_.resize(ntbs);
    inReady_.assign(ntbs, 0);
    const std::size_t nconn = model.connections.size();
    fifos_.resize(nconn);
    receiverWaiting_.assign(nconn, 0);
    senderWaiting_.assign(nconn, 0);
    result_.blocks.resize(ntbs);
    if (options.trackData) initializeData();
  }

  SimResult run() {
    for (int t = static_cast<int>(model_.tbs.size()) - 1; t >= 0; --t)
      makeReady(t);
    while (!ready_.empty()) {
      const int t = ready_.back();
      ready_.pop_back();
      inReady_[t] = 0;
      advance(t);
    }
    result_.finished = true;
    result_.firstIterationComplete = true;
    for (std::size_t t = 0; t < model_.tbs.size(); ++t) {
      if (pos_[t] < total_[t]) result_.finished = false;
      if (pos_[t] < std::min<long>(total_[t], model_.tbs[t].steps))
        result_.firstIterationComplete = false;
    }
    for (const auto& fifo : fifos_)
      result_.queued.push_back(fifo.size());
    return std::move(result_);
  }

 private:
  void initializeData() {
    const ir::Collective& collective = *model_.collective;
    result_.slots.resize(model_.slotRank.size());
    for (int r = 0; r < static_cast<int>(model_.inputSlot.size()); ++r)
      for (int i = 0; i < static_cast<int>(model_.inputSlot[r].size()); ++i)
        result_.slots[model_.inputSlot[r][i]] = collective.initialInput(r, i);
  }

  void makeReady(int t) {
    if (inReady_[t]) return;
    inReady_[t] = 1;
    ready_.push_back(t);
  }

  void block(int t, BlockKind kind, int iteration, int step, int target, int depStep, int conn) {
    result_.blocks[t] = TbBlock{kind, iteration, step, target, depStep, conn};
  }

  void advance(int t) {
    const TbInfo& info = model_.tbs[t];
    const ir::Threadblock& tb = model_.threadblock(t);
    const int firstTb = model_.rankFirstTb[info.rank];
    while (pos_[t] < total_[t]) {
      const int iteration = static_cast<int>(pos_[t] / info.steps);
      const int s = static_cast<int>(pos_[t] % info.steps);
      const ir::Step& step = tb.steps[s];
      for (const ir::StepRef& dep : step.deps) {
        const int g = firstTb + dep.tb;
        const long need = static_cast<long>(iteration) * model_.tbs[g].steps + dep.step + 1;
        if (pos_[g] < need) {
          depWaiters_[g].push({need, t});
          block(t, BlockKind::dependency, iteration, s, g, dep.step, -1);
          return;
        }
      }
      if (ir::opReceives(step.op) && fifos_[info.inConn].empty()) {
        receiverWaiting_[info.inConn] = 1;
        block(t, BlockKind::emptyFifo, iteration, s, model_.connections[info.inConn].senderTb, -1,
              info.inConn);
        return;
      }
      if (ir::opSends(step.op) &&
          static_cast<long>(fifos_[info.outConn].size()) >= options_.fifoSlots) {
        senderWaiting_[info.outConn] = 1;
        block(t, BlockKind::fullFifo, iteration, s, model_.connections[info.outConn].receiverTb, -1,
              info.outConn);
        return;
      }
      execute(t, iteration, s, step);
      ++pos_[t];
      auto& waiters = depWaiters_[t];
      while (!waiters.empty() && waiters.top().first <= pos_[t]) {
        makeReady(waiters.top().second);
        waiters.pop();
      }
    }
    result_.blocks[t] = TbBlock{};
  }

  void execute(int t, int iteration, int s, const ir::Step& step) {
    const TbInfo& info = model_.tbs[t];
    const bool data = options_.trackData && iteration == 0;
    Message received;
    if (ir::opReceives(step.op)) {
      auto& fifo = fifos_[info.inConn];
      received = std::move(fifo.front());
      fifo.pop_front();
      if (senderWaiting_[info.inConn]) {
        senderWaiting_[info.inConn] = 0;
        makeReady(model_.connections[info.inConn].senderTb);
      }
    }
    Message sent;
    if (data) sent.payload = computeStep(t, s, step, received);
    if (ir::opSends(step.op)) {
      fifos_[info.outConn].push_back(std::move(sent));
      if (receiverWaiting_[info.outConn]) {
        receiverWaiting_[info.outConn] = 0;
        makeReady(model_.connections[info.outConn].receiverTb);
      }
    }
  }

  // Applies the step's data semantics (ir::applyStep on symbolic values); returns the outgoing
  // payload (empty when the step sends nothing).
  std::vector<ChunkValue> computeStep(int t, int s, const ir::Step& step, Message& received) {
    const auto n = static_cast<std::size_t>(step.count);
    std::vector<ChunkValue> sent;
    std::vector<ChunkValue>& src = srcScratch_;
    std::vector<ChunkValue>& dst = dstScratch_;
    if (ir::opReadsSrc(step.op)) read(t, s, step, step.srcBuffer, step.srcIndex, src);
    if (ir::opReadsDst(step.op))
      read(t, s, step, step.dstBuffer, step.dstIndex, dst);
    else if (ir::opWritesDst(step.op))
      dst.assign(n, ChunkValue());
    if (ir::opReceives(step.op)) received.payload.resize(n);  // a short message: unset values
    if (ir::opSends(step.op)) sent.resize(n);
    const ir::StepOperands<ChunkValue> io{src.data(), dst.data(), received.payload.data(),
                                          sent.data()};
    ir::applyStep(step.op, io, n, reduceValues);
    if (ir::opWritesDst(step.op)) write(t, step, dst);
    src.clear();
    dst.clear();
    return sent;
  }

  // Reads the step's `count` chunks at (buffer, index) into `values`; reports uninitialized ones.
  void read(int t, int s, const ir::Step& step, ir::BufferKind buffer, int index,
            std::vector<ChunkValue>& values) {
    const int rank = model_.tbs[t].rank;
    values.assign(static_cast<std::size_t>(step.count), ChunkValue());
    int firstEmpty = -1;
    int empties = 0;
    for (int i = 0; i < step.count; ++i) {
      values[i] = result_.slots[model_.slotOf(rank, buffer, index + i)];
      if (!values[i].initialized()) {
        if (firstEmpty < 0) firstEmpty = index + i;
        ++empties;
      }
    }
    if (empties > 0) reportUninitialized(t, s, step, buffer, firstEmpty, empties);
  }

  void write(int t, const ir::Step& step, const std::vector<ChunkValue>& values) {
    const int rank = model_.tbs[t].rank;
    for (int i = 0; i < step.count && i < static_cast<int>(values.size()); ++i)
      result_.slots[model_.slotOf(rank, step.dstBuffer, step.dstIndex + i)] = values[i];
  }

  void reportUninitialized(int t, int s, const ir::Step& step, ir::BufferKind buffer, int index,
                           int empties) {
    const TbInfo& info = model_.tbs[t];
    const ir::Location canonical = model_.collective->canonical(info.rank, {buffer, index});
    const std::string alias =
        canonical == ir::Location{buffer, index}
            ? std::string()
            : fmt::format(" (stored in {}[{}])", ir::bufferName(canonical.buffer), canonical.index);
    const std::string more =
        empties > 1 ? fmt::format(" and {} more of the chunks it reads", empties - 1) : "";
    const bool neverSet =
        canonical.buffer == ir::BufferKind::input &&
        !model_.collective->initialInput(info.rank, canonical.index).initialized();
    sink_.add(
        FindingKind::uninitialized, info.rank, info.tb, s,
        fmt::format("{} ({}) reads {}[{}]{}{}, which holds no value when the step runs{}; "
                    "make a step that writes it run first (reorder the steps or add a "
                    "dependency on the threadblock that writes it)",
                    describeStepRef(info.rank, info.tb, s), describeOp(model_.threadblock(t), step),
                    ir::bufferName(buffer), index, alias, more,
                    neverSet ? fmt::format(" ({} leaves rank {}'s input[{}] unset)",
                                           model_.collective->name(), info.rank, canonical.index)
                             : ""));
  }

  const ProgramModel& model_;
  const SimOptions& options_;
  FindingSink& sink_;
  std::vector<long> pos_;               // per tb: iteration * steps + step
  std::vector<long> total_;             // per tb: iterations * steps
  using Waiter = std::pair<long, int>;  // (position the waiter needs, waiting tb)
  std::vector<std::priority_queue<Waiter, std::vector<Waiter>, std::greater<Waiter>>> depWaiters_;
  std::vector<int> ready_;
  std::vector<char> inReady_;
  std::vector<std::deque<Message>> fifos_;
  std::vector<char> receiverWaiting_;
  std::vector<char> senderWaiting_;
  SimResult result_;
  // computeStep's operands, kept to reuse their storage.
  std::vector<ChunkValue> srcScratch_;
  std::vector<ChunkValue> dstScratch_;
};

}  // namespace

SimResult simulateProgram(const ProgramModel& model, const SimOptions& options, FindingSink& sink) {
  return Simulator(model, options, sink).run();
}

}  // namespace chorus::verify
