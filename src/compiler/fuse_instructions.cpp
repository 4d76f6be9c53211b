#include "compiler/fuse_instructions.h"

#include <algorithm>
#include <span>
#include <unordered_map>

namespace chorus::compiler {

namespace {

bool hintsCompatible(int a, int b) {
  return a < 0 || b < 0 || a == b;
}

bool isSubsetOf(std::span<const int> items, int self, std::span<const int> allowed) {
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
                    const LocationIndex& index, const AccessLists& accesses) {
  for (int i = 0; i < r.count; ++i) {
    const auto list = accesses.of(index.id(r.rank, r.dstBuffer, r.dstIndex + i));
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

void replacePred(InstrGraph& graph, Instr& in, int from, int to);

// Per instruction, its same-rank successors in the order they were added, as linked lists in
// flat arrays: appending never allocates per instruction.
class SuccessorLists {
 public:
  explicit SuccessorLists(int n) : head_(n, -1), tail_(n, -1) {}

  void add(int from, int to) {
    const int e = static_cast<int>(to_.size());
    to_.push_back(to);
    next_.push_back(-1);
    (tail_[from] < 0 ? head_[from] : next_[tail_[from]]) = e;
    tail_[from] = e;
  }

  // Iterates one list; stays valid while lists grow.
  class Iterator {
   public:
    Iterator(const SuccessorLists* lists, int edge) : lists_(lists), edge_(edge) {}
    int operator*() const { return lists_->to_[edge_]; }
    Iterator& operator++() {
      edge_ = lists_->next_[edge_];
      return *this;
    }
    bool operator!=(const Iterator& other) const { return edge_ != other.edge_; }

   private:
    const SuccessorLists* lists_;
    int edge_;
  };
  struct Range {
    Iterator first;
    Iterator begin() const { return first; }
    Iterator end() const { return {nullptr, -1}; }
  };
  Range operator[](int id) const { return {{this, head_[id]}}; }

 private:
  std::vector<int> head_, tail_;  // per instruction: first and last edge, -1 = none
  std::vector<int> to_, next_;    // per edge: successor and next edge of the same list
};

// Folds instruction `gone` into `kept`: `gone` dies and its successors depend on `kept`.
void absorb(InstrGraph& graph, SuccessorLists& succs, int kept, int gone) {
  graph.instrs[gone].dead = true;
  for (int x : succs[gone]) {
    if (x == kept) continue;
    replacePred(graph, graph.instrs[x], gone, kept);
    succs.add(kept, x);
  }
}

// Renames predecessor `from` to `to` in `in`'s list, keeping it sorted and unique (it can only
// shrink, so it stays in place in the pool).
void replacePred(InstrGraph& graph, Instr& in, int from, int to) {
  const auto preds = graph.preds(in);
  for (auto& p : preds)
    if (p == from) p = to;
  std::sort(preds.begin(), preds.end());
  in.predCount = static_cast<int>(std::unique(preds.begin(), preds.end()) - preds.begin());
}

// Receive-copy folding: a receive into X whose only use is a local copy X -> Y receives into Y
// directly (a recvReduceCopy keeps X as its local operand). Saves a copy and keeps the
// intermediate out of X (e.g. out of the user's input buffer). `accesses` describes the graph
// as it was before; returns whether anything was folded.
bool foldReceiveCopies(InstrGraph& graph, SuccessorLists& succs, const LocationIndex& index,
                       const AccessLists& accesses) {
  bool folded = false;
  for (auto& r : graph.instrs) {
    if (r.dead || (r.op != ir::OpKind::recv && r.op != ir::OpKind::recvReduceCopy)) continue;
    for (int cid : succs[r.id]) {
      Instr& c = graph.instrs[cid];
      if (c.dead || c.op != ir::OpKind::copy || c.rank != r.rank) continue;
      if (c.srcBuffer != r.dstBuffer || c.srcIndex != r.dstIndex || c.count != r.count) continue;
      if (!hintsCompatible(c.sendTbHint, r.recvTbHint) ||
          !isSubsetOf(graph.preds(c), r.id, graph.preds(r)))
        continue;
      if (!valueDeadAfter(graph, r, c, index, accesses)) continue;
      r.dstBuffer = c.dstBuffer;
      r.dstIndex = c.dstIndex;
      absorb(graph, succs, r.id, c.id);
      folded = true;
      break;
    }
  }
  return folded;
}

// The hops of each flow (a send and the receives that forward it) per rank. A fused chain runs
// on one channel, so two hops of one flow on one rank must fit one set of threadblocks: the
// same send peer with two different recv peers (or the reverse) cannot.
class FlowHops {
 public:
  explicit FlowHops(const InstrGraph& graph)
      : graph_(graph), flowOf_(graph.instrs.size(), -1), nextHop_(graph.instrs.size(), -1) {}

  // Registers receive `r` (and its sender, for a flow's first hop) in its sender's flow.
  void addReceive(const Instr& r) {
    const Instr& sender = graph_.instrs[r.recvMatch];
    if (flowOf_[sender.id] < 0) join(sender.id, sender.id);
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
    auto f = lastHop_.find(flow);
    if (f == lastHop_.end()) return true;
    auto r = f->second.find(rank);
    if (r == f->second.end()) return true;
    for (int h = r->second; h >= 0; h = nextHop_[h]) {
      if (h == self) continue;
      const Instr& hop = graph_.instrs[h];
      if (conflict({hop.sendPeer, hop.recvPeer}, tuple)) return false;
    }
    return true;
  }
  void join(int id, int flow) {
    flowOf_[id] = flow;
    auto [it, added] = lastHop_[flow].try_emplace(graph_.instrs[id].rank, id);
    if (!added) {
      nextHop_[id] = it->second;
      it->second = id;
    }
  }

  const InstrGraph& graph_;
  std::vector<int> flowOf_;
  // The hops of a flow on a rank, newest first: a list through nextHop_ from
  // lastHop_[flow][rank].
  std::unordered_map<int, std::unordered_map<int, int>> lastHop_;
  std::vector<int> nextHop_;
};

}  // namespace

InstrGraph fuseInstructions(InstrGraph graph, const PassContext&) {
  const int n = static_cast<int>(graph.instrs.size());
  SuccessorLists succs(n);
  for (const auto& in : graph.instrs)
    if (!in.dead)
      for (int p : graph.preds(in))
        succs.add(p, in.id);
  const LocationIndex index(graph);
  AccessLists accesses(graph, index);
  if (foldReceiveCopies(graph, succs, index, accesses)) accesses = AccessLists(graph, index);
  const Depths depths = computeDepths(graph);

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
      if (!isSubsetOf(graph.preds(s), r.id, graph.preds(r)) || !flows.canFuse(r, s)) continue;
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
