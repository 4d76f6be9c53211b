#include "compiler/insert_dependencies.h"

#include <algorithm>
#include <map>

#include "support/error.h"

namespace chorus::compiler {

namespace {

// Which buffer an in-place collective folds into the other one (it gets extent 0).
bool aliasedAway(const ir::Collective& c, int rank, ir::BufferKind buffer) {
  return c.canonical(rank, {buffer, 0}).buffer != buffer;
}

}  // namespace

void markDependents(ir::Algorithm& algorithm) {
  for (auto& rank : algorithm.ranks) {
    for (auto& tb : rank.threadblocks)
      for (auto& step : tb.steps)
        step.hasDependents = false;
    for (auto& tb : rank.threadblocks)
      for (auto& step : tb.steps)
        for (const auto& dep : step.deps)
          rank.threadblocks[dep.tb].steps[dep.step].hasDependents = true;
  }
}

ir::Algorithm insertDependencies(const InstrGraph& graph, const PassContext& context) {
  const auto& c = *graph.collective;
  ir::Algorithm a;
  a.name = graph.name;
  a.collective = c.kind();
  if (c.kind() == ir::CollectiveKind::custom) a.customName = c.name();
  a.root = c.root();
  a.protocol = graph.protocol;
  a.inPlace = c.inPlace();
  a.nranks = c.nranks();
  a.chunksPerLoop = c.chunksPerLoop();
  a.minBytes = context.options.minBytes;
  a.maxBytes = context.options.maxBytes;
  a.ranks.resize(a.nranks);
  for (int r = 0; r < a.nranks; ++r) {
    auto& rank = a.ranks[r];
    rank.rank = r;
    rank.inputChunks = aliasedAway(c, r, ir::BufferKind::input) ? 0 : c.inputChunks(r);
    rank.outputChunks = aliasedAway(c, r, ir::BufferKind::output) ? 0 : c.outputChunks(r);
    rank.scratchChunks = graph.scratchChunks[r];
  }
  // Threadblock headers and step counts.
  std::vector<std::map<int, int>> stepsPerTb(a.nranks);
  for (const auto& in : graph.instrs) {
    if (in.dead) continue;
    auto& count = stepsPerTb[in.rank][in.tb];
    count = std::max(count, in.step + 1);
  }
  for (const auto& in : graph.instrs) {
    if (in.dead) continue;
    auto& tbs = a.ranks[in.rank].threadblocks;
    if (static_cast<int>(tbs.size()) <= in.tb) {
      const int old = static_cast<int>(tbs.size());
      tbs.resize(in.tb + 1);
      for (int t = old; t <= in.tb; ++t)
        tbs[t].id = t;
    }
    auto& tb = tbs[in.tb];
    const TbSlot& slot = graph.slots[in.slot];
    tb.sendPeer = slot.sendPeer;
    tb.recvPeer = slot.recvPeer;
    tb.channel = slot.channel;
    if (tb.steps.empty()) tb.steps.resize(stepsPerTb[in.rank][in.tb]);
    ir::Step& step = tb.steps[in.step];
    step.op = in.op;
    step.count = in.count;
    step.srcBuffer = in.srcBuffer;
    step.srcIndex = in.srcIndex;
    step.dstBuffer = in.dstBuffer;
    step.dstIndex = in.dstIndex;
    if (in.op == ir::OpKind::send) {
      const Instr& peer = graph.instrs[in.sendMatch];
      step.dstBuffer = peer.dstBuffer;
      step.dstIndex = peer.dstIndex;
    } else if (in.op == ir::OpKind::recv) {
      const Instr& peer = graph.instrs[in.recvMatch];
      step.srcBuffer = peer.op == ir::OpKind::send ? peer.srcBuffer : peer.dstBuffer;
      step.srcIndex = peer.op == ir::OpKind::send ? peer.srcIndex : peer.dstIndex;
    } else if (in.op == ir::OpKind::recvCopySend) {
      step.srcBuffer = in.dstBuffer;
      step.srcIndex = in.dstIndex;
    }
    std::map<int, int> latest;  // dependee tb -> latest step
    for (int p : graph.preds(in)) {
      const Instr& pred = graph.instrs[p];
      CHORUS_INTERNAL_ASSERT(!pred.dead && pred.rank == in.rank, "bad processing edge");
      if (pred.tb == in.tb) continue;
      auto& s = latest[pred.tb];
      s = std::max(s, pred.step);
    }
    step.deps.clear();
    for (const auto& [tb2, s] : latest)
      step.deps.push_back({tb2, s});
  }
  markDependents(a);
  return a;
}

}  // namespace chorus::compiler
