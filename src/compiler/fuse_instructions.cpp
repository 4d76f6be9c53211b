#include "compiler/fuse_instructions.h"

#include <algorithm>
#include <unordered_map>

namespace chorus::compiler {

namespace {

bool hintsCompatible(int a, int b) {
  return a < 0 || b < 0 || a == b;
}

bool isSubsetOf(const std::vector<int>& items, int self, const std::vector<int>& allowed) {
  for (int x : items)
    if (x != self && !std::binary_search(allowed.begin(), allowed.end(), x)) return false;
  return true;
}

// Whether the final contents of (canonical) `buffer` on `rank` matter: postconditions cover the
// output only, so scratch never does and the input only when the output aliases it.
bool observedAtEnd(const ir::Collective& c, int rank, ir::BufferKind buffer) {
  if (buffer == ir::BufferKind::output) return true;
  if (buffer == ir::BufferKind::input)
    return c.canonical(rank, {ir::BufferKind::output, 0}).buffer == ir::BufferKind::input;
  return false;
}

// True when R's written value is never needed after S: in every written chunk, the first
// access after R by an instruction other than R and S is a pure overwrite, or nothing follows
// and the chunk's final value is not observed.
bool valueDeadAfter(const InstrGraph& graph, const Instr& r, const Instr& s,
                    const LocationIndex& index, const std::vector<std::vector<Access>>& accesses) {
  for (int i = 0; i < r.count; ++i) {
    const auto& list = accesses[index.id(r.rank, r.dstBuffer, r.dstIndex + i)];
    auto it = std::find_if(list.begin(), list.end(),
                           [&](const Access& a) { return a.instr == r.id && a.write; });
    if (it == list.end()) return false;
    ++it;
    while (it != list.end() && it->instr == s.id)
      ++it;
    if (it == list.end()) {
      if (observedAtEnd(*graph.collective, r.rank, r.dstBuffer)) return false;
      continue;
    }
    if (!it->write) return false;
  }
  return true;
}

void replacePred(std::vector<int>& preds, int from, int to);

// Folds instruction `gone` into `kept`: `gone` dies and its successors depend on `kept`.
void absorb(InstrGraph& graph, std::vector<std::vector<int>>& succs, int kept, int gone) {
  graph.instrs[gone].dead = true;
  for (int x : succs[gone]) {
    if (x == kept) continue;
    replacePred(graph.instrs[x].preds, gone, kept);
    succs[kept].push_back(x);
  }
}

void replacePred(std::vector<int>& preds, int from, int to) {
  for (auto& p : preds)
    if (p == from) p = to;
  std::sort(preds.begin(), preds.end());
  preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
}

// Receive-copy folding: a receive into X whose only use is a local copy X -> Y receives into Y
// directly (a recvReduceCopy keeps X as its local operand). Saves a copy and keeps the
// intermediate out of X (e.g. out of the user's input buffer).
void foldReceiveCopies(InstrGraph& graph, std::vector<std::vector<int>>& succs) {
  const LocationIndex index(graph);
  const auto accesses = collectAccesses(graph, index);
  for (auto& r : graph.instrs) {
    if (r.dead || (r.op != ir::OpKind::recv && r.op != ir::OpKind::recvReduceCopy)) continue;
    for (int cid : succs[r.id]) {
      Instr& c = graph.instrs[cid];
      if (c.dead || c.op != ir::OpKind::copy || c.rank != r.rank) continue;
      if (c.srcBuffer != r.dstBuffer || c.srcIndex != r.dstIndex || c.count != r.count) continue;
      if (!hintsCompatible(c.sendTbHint, r.recvTbHint) || !isSubsetOf(c.preds, r.id, r.preds))
        continue;
      if (!valueDeadAfter(graph, r, c, index, accesses)) continue;
      r.dstBuffer = c.dstBuffer;
      r.dstIndex = c.dstIndex;
      absorb(graph, succs, r.id, c.id);
      break;
    }
  }
}

// The hops of each flow (a send and the receives that forward it) per rank. A fused chain runs
// on one channel, so two hops of one flow on one rank must fit one set of threadblocks: the
// same send peer with two different recv peers (or the reverse) cannot.
class FlowHops {
 public:
  explicit FlowHops(const InstrGraph& graph) : graph_(graph), flowOf_(graph.instrs.size(), -1) {}

  // Registers receive `r` (and its sender, for a flow's first hop) in its sender's flow.
  void addReceive(const Instr& r) {
    const Instr& sender = graph_.instrs[r.recvMatch];
    if (flowOf_[sender.id] < 0) {
      flowOf_[sender.id] = sender.id;
      hops_[sender.id][sender.rank].push_back(sender.id);
    }
    join(r.id, flowOf_[sender.id]);
  }
  // Whether r (on its rank) may become (recv r.recvPeer, send s.sendPeer) and s's receiver t
  // may join r's flow.
  bool canFuse(const Instr& r, const Instr& s) const {
    const int flow = flowOf_[r.id];
    const Instr& t = graph_.instrs[s.sendMatch];
    return fits(flow, r.rank, r.id, {s.sendPeer, r.recvPeer}) &&
           fits(flow, t.rank, t.id, {-1, t.recvPeer});
  }

 private:
  struct Tuple {
    int send;
    int recv;
  };
  static bool conflict(Tuple a, Tuple b) {
    const bool sameSend = a.send >= 0 && a.send == b.send;
    const bool sameRecv = a.recv >= 0 && a.recv == b.recv;
    return (sameSend && a.recv >= 0 && b.recv >= 0 && a.recv != b.recv) ||
           (sameRecv && a.send >= 0 && b.send >= 0 && a.send != b.send);
  }
  bool fits(int flow, int rank, int self, Tuple tuple) const {
    auto f = hops_.find(flow);
    if (f == hops_.end()) return true;
    auto r = f->second.find(rank);
    if (r == f->second.end()) return true;
    for (int h : r->second) {
      if (h == self) continue;
      const Instr& hop = graph_.instrs[h];
      if (conflict({hop.sendPeer, hop.recvPeer}, tuple)) return false;
    }
    return true;
  }
  void join(int id, int flow) {
    flowOf_[id] = flow;
    hops_[flow][graph_.instrs[id].rank].push_back(id);
  }

  const InstrGraph& graph_;
  std::vector<int> flowOf_;
  std::unordered_map<int, std::unordered_map<int, std::vector<int>>> hops_;
};

}  // namespace

InstrGraph fuseInstructions(InstrGraph graph, const PassContext&) {
  const int n = static_cast<int>(graph.instrs.size());
  std::vector<std::vector<int>> succs(n);
  for (const auto& in : graph.instrs)
    if (!in.dead)
      for (int p : in.preds)
        succs[p].push_back(in.id);
  foldReceiveCopies(graph, succs);
  const Depths depths = computeDepths(graph);
  const LocationIndex index(graph);
  const auto accesses = collectAccesses(graph, index);

  FlowHops flows(graph);
  for (auto& r : graph.instrs) {
    if (r.dead || (r.op != ir::OpKind::recv && r.op != ir::OpKind::recvReduceCopy)) continue;
    flows.addReceive(r);
    int best = -1;
    for (int sid : succs[r.id]) {
      const Instr& s = graph.instrs[sid];
      if (s.dead || s.op != ir::OpKind::send || s.rank != r.rank) continue;
      if (s.srcBuffer != r.dstBuffer || s.srcIndex != r.dstIndex || s.count != r.count) continue;
      if (s.replica != r.replica || !hintsCompatible(s.channelHint, r.channelHint) ||
          !hintsCompatible(s.sendTbHint, r.recvTbHint))
        continue;
      if (!isSubsetOf(s.preds, r.id, r.preds) || !flows.canFuse(r, s)) continue;
      if (best < 0 || depths.reverseDepth[sid] > depths.reverseDepth[best]) best = sid;
    }
    if (best < 0) continue;
    Instr& s = graph.instrs[best];
    if (r.op == ir::OpKind::recv)
      r.op = ir::OpKind::recvCopySend;
    else
      r.op = valueDeadAfter(graph, r, s, index, accesses) ? ir::OpKind::recvReduceSend
                                                          : ir::OpKind::recvReduceCopySend;
    r.sendPeer = s.sendPeer;
    r.sendMatch = s.sendMatch;
    graph.instrs[s.sendMatch].recvMatch = r.id;
    r.channelHint = std::max(r.channelHint, s.channelHint);
    r.sendTbHint = s.sendTbHint;
    absorb(graph, succs, r.id, s.id);
  }
  return graph;
}

}  // namespace chorus::compiler
