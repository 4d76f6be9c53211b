#include "compiler/fuse_instructions.h"

#include <algorithm>

namespace chorus::compiler {

namespace {

bool hintsCompatible(int a, int b) { return a < 0 || b < 0 || a == b; }

bool isSubsetOf(const std::vector<int>& items, int self, const std::vector<int>& allowed) {
  for (int x : items)
    if (x != self && !std::binary_search(allowed.begin(), allowed.end(), x)) return false;
  return true;
}

// True when R's written value is never needed after S: in every written chunk, the first
// access after R by an instruction other than R and S is a pure overwrite, or nothing follows
// and the chunk is scratch.
bool valueDeadAfter(const Instr& r, const Instr& s, const LocationIndex& index,
                    const std::vector<std::vector<Access>>& accesses) {
  for (int i = 0; i < r.count; ++i) {
    const auto& list = accesses[index.id(r.rank, r.dstBuffer, r.dstIndex + i)];
    auto it = std::find_if(list.begin(), list.end(),
                           [&](const Access& a) { return a.instr == r.id && a.write; });
    if (it == list.end()) return false;
    ++it;
    while (it != list.end() && it->instr == s.id) ++it;
    if (it == list.end()) {
      if (r.dstBuffer != ir::BufferKind::scratch) return false;
      continue;
    }
    if (!it->write) return false;
  }
  return true;
}

void replacePred(std::vector<int>& preds, int from, int to) {
  for (auto& p : preds)
    if (p == from) p = to;
  std::sort(preds.begin(), preds.end());
  preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
}

}  // namespace

InstrGraph fuseInstructions(InstrGraph graph, const PassContext&) {
  const int n = static_cast<int>(graph.instrs.size());
  std::vector<std::vector<int>> succs(n);
  for (const auto& in : graph.instrs)
    if (!in.dead)
      for (int p : in.preds) succs[p].push_back(in.id);
  const Depths depths = computeDepths(graph);
  const LocationIndex index(graph);
  const auto accesses = collectAccesses(graph, index);

  for (auto& r : graph.instrs) {
    if (r.dead || (r.op != ir::OpKind::recv && r.op != ir::OpKind::recvReduceCopy)) continue;
    int best = -1;
    for (int sid : succs[r.id]) {
      const Instr& s = graph.instrs[sid];
      if (s.dead || s.op != ir::OpKind::send || s.rank != r.rank) continue;
      if (s.srcBuffer != r.dstBuffer || s.srcIndex != r.dstIndex || s.count != r.count) continue;
      if (s.replica != r.replica || !hintsCompatible(s.channelHint, r.channelHint) ||
          !hintsCompatible(s.sendTbHint, r.recvTbHint))
        continue;
      if (!isSubsetOf(s.preds, r.id, r.preds)) continue;
      if (best < 0 || depths.reverseDepth[sid] > depths.reverseDepth[best]) best = sid;
    }
    if (best < 0) continue;
    Instr& s = graph.instrs[best];
    if (r.op == ir::OpKind::recv)
      r.op = ir::OpKind::recvCopySend;
    else
      r.op = valueDeadAfter(r, s, index, accesses) ? ir::OpKind::recvReduceSend
                                                   : ir::OpKind::recvReduceCopySend;
    r.sendPeer = s.sendPeer;
    r.sendMatch = s.sendMatch;
    graph.instrs[s.sendMatch].recvMatch = r.id;
    r.channelHint = std::max(r.channelHint, s.channelHint);
    r.sendTbHint = s.sendTbHint;
    s.dead = true;
    for (int x : succs[s.id]) {
      if (x == r.id) continue;
      replacePred(graph.instrs[x].preds, s.id, r.id);
      succs[r.id].push_back(x);
    }
  }
  return graph;
}

}  // namespace chorus::compiler
