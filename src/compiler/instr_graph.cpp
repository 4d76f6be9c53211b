#include "compiler/instr_graph.h"

#include <algorithm>

#include <fmt/format.h>

#include "support/error.h"

namespace chorus::compiler {

LocationIndex::LocationIndex(const InstrGraph& graph) {
  const auto& c = *graph.collective;
  base_.resize(c.nranks());
  for (int r = 0; r < c.nranks(); ++r) {
    base_[r][0] = total_;
    total_ += c.inputChunks(r);
    base_[r][1] = total_;
    total_ += c.outputChunks(r);
    base_[r][2] = total_;
    total_ += r < static_cast<int>(graph.scratchChunks.size()) ? graph.scratchChunks[r] : 0;
  }
}

int LocationIndex::id(int rank, ir::BufferKind buffer, int index) const {
  return base_[rank][static_cast<int>(buffer)] + index;
}

AccessLists::AccessLists(const InstrGraph& graph, const LocationIndex& index)
    : begin_(index.size() + 1, 0) {
  // Two sweeps over the instructions: count the accesses per location, then fill them in.
  auto forEachAccess = [&](auto&& visit) {
    for (const auto& in : graph.instrs) {
      if (in.dead) continue;
      const bool readsSrc = ir::opReadsSrc(in.op);
      const bool readsDst = ir::opReadsDst(in.op);
      const bool writesDst = ir::opWritesDst(in.op);
      for (int i = 0; i < in.count; ++i) {
        if (readsSrc) visit(index.id(in.rank, in.srcBuffer, in.srcIndex + i), in.id, false);
        if (readsDst) visit(index.id(in.rank, in.dstBuffer, in.dstIndex + i), in.id, false);
        if (writesDst) visit(index.id(in.rank, in.dstBuffer, in.dstIndex + i), in.id, true);
      }
    }
  };
  forEachAccess([&](int location, int, bool) { ++begin_[location + 1]; });
  for (std::size_t l = 1; l < begin_.size(); ++l)
    begin_[l] += begin_[l - 1];
  items_.resize(begin_.back());
  std::vector<int> next(begin_.begin(), begin_.end() - 1);
  forEachAccess([&](int location, int instr, bool write) {
    items_[next[location]++] = {instr, write};
  });
}

Depths computeDepths(const InstrGraph& graph) {
  const int n = static_cast<int>(graph.instrs.size());
  Depths d;
  d.depth.assign(n, 0);
  d.reverseDepth.assign(n, 0);
  // Ids are a topological order: preds and matching sends always have smaller ids.
  for (const auto& in : graph.instrs) {
    if (in.dead) continue;
    int depth = 0;
    for (int p : graph.preds(in))
      depth = std::max(depth, d.depth[p] + 1);
    if (in.recvMatch >= 0) depth = std::max(depth, d.depth[in.recvMatch] + 1);
    d.depth[in.id] = depth;
  }
  for (int i = n - 1; i >= 0; --i) {
    const auto& in = graph.instrs[i];
    if (in.dead) continue;
    for (int p : graph.preds(in))
      d.reverseDepth[p] = std::max(d.reverseDepth[p], d.reverseDepth[i] + 1);
    if (in.recvMatch >= 0)
      d.reverseDepth[in.recvMatch] = std::max(d.reverseDepth[in.recvMatch], d.reverseDepth[i] + 1);
  }
  return d;
}

std::string printInstrGraph(const InstrGraph& graph) {
  std::string out =
      fmt::format("instruction graph '{}': {} instructions\n", graph.name, graph.instrs.size());
  for (const auto& in : graph.instrs) {
    if (in.dead) continue;
    out += fmt::format("  %{} r{} {} {}[{}] -> {}[{}] x{}", in.id, in.rank, ir::opName(in.op),
                       ir::bufferName(in.srcBuffer), in.srcIndex, ir::bufferName(in.dstBuffer),
                       in.dstIndex, in.count);
    if (in.sendPeer >= 0) out += fmt::format(" send->{} (%{})", in.sendPeer, in.sendMatch);
    if (in.recvPeer >= 0) out += fmt::format(" recv<-{} (%{})", in.recvPeer, in.recvMatch);
    if (in.channel >= 0) out += fmt::format(" ch={}", in.channel);
    if (in.tb >= 0) out += fmt::format(" tb={} step={}", in.tb, in.step);
    if (!graph.preds(in).empty()) {
      out += " after";
      for (int p : graph.preds(in))
        out += fmt::format(" %{}", p);
    }
    out += '\n';
  }
  return out;
}

}  // namespace chorus::compiler
