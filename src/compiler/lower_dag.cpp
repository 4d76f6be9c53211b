#include "compiler/lower_dag.h"

#include <algorithm>
#include <string>

#include "support/error.h"

namespace chorus::compiler {

namespace {

struct LocationState {
  int lastWriter = -1;
  int lastReader = -1;  // readers since the last write: a list in Readers, newest first
};

// The reads of all locations as linked lists in flat arrays (no vector per location). A write
// drops a location's list; its nodes stay unused.
struct Readers {
  std::vector<int> instr;
  std::vector<int> next;

  void add(LocationState& st, int id) {
    instr.push_back(id);
    next.push_back(st.lastReader);
    st.lastReader = static_cast<int>(instr.size()) - 1;
  }
};

// Adds processing edges for one instruction from the per-location states, then records its
// accesses. Reads are recorded before writes, so a reduce both reads and writes its dst.
void linkAccesses(Instr& in, const LocationIndex& index, std::vector<LocationState>& states,
                  Readers& readers, std::vector<int>& preds, std::vector<int>& predPool) {
  preds.clear();
  auto addPred = [&](int p) {
    if (p >= 0 && p != in.id) preds.push_back(p);
  };
  const bool readsSrc = ir::opReadsSrc(in.op);
  const bool readsDst = ir::opReadsDst(in.op);
  const bool writesDst = ir::opWritesDst(in.op);
  for (int i = 0; i < in.count; ++i) {
    if (readsSrc) addPred(states[index.id(in.rank, in.srcBuffer, in.srcIndex + i)].lastWriter);
    if (readsDst || writesDst) {
      auto& st = states[index.id(in.rank, in.dstBuffer, in.dstIndex + i)];
      addPred(st.lastWriter);
      if (writesDst)
        for (int r = st.lastReader; r >= 0; r = readers.next[r])
          addPred(readers.instr[r]);
    }
  }
  std::sort(preds.begin(), preds.end());
  preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
  in.predBegin = static_cast<int>(predPool.size());
  in.predCount = static_cast<int>(preds.size());
  predPool.insert(predPool.end(), preds.begin(), preds.end());
  for (int i = 0; i < in.count; ++i) {
    if (readsSrc) readers.add(states[index.id(in.rank, in.srcBuffer, in.srcIndex + i)], in.id);
    if (readsDst) readers.add(states[index.id(in.rank, in.dstBuffer, in.dstIndex + i)], in.id);
  }
  if (writesDst)
    for (int i = 0; i < in.count; ++i) {
      auto& st = states[index.id(in.rank, in.dstBuffer, in.dstIndex + i)];
      st.lastWriter = in.id;
      st.lastReader = -1;
    }
}

}  // namespace

InstrGraph lowerDag(const ir::Dag& dag, const PassContext&) {
  InstrGraph graph;
  graph.name = dag.name;
  graph.collective = dag.collective;
  graph.protocol = dag.protocol;
  graph.scratchChunks = dag.scratchChunks;
  for (const auto& op : dag.ops)
    graph.replicaCount = std::max(graph.replicaCount, op.replica + 1);

  const auto& c = *dag.collective;
  auto canonical = [&](const ir::ChunkLoc& loc) {
    const auto l = c.canonical(loc.rank, {loc.buffer, loc.index});
    return std::pair{l.buffer, l.index};
  };
  // The Dag's interned DSL locations; an op without one gets an empty location.
  graph.locations = dag.locations;
  int noLocation = -1;
  auto locationId = [&](int where) {
    if (where >= 0) return where;
    if (noLocation < 0) {
      noLocation = static_cast<int>(graph.locations.size());
      graph.locations.emplace_back();
    }
    return noLocation;
  };
  std::size_t instrCount = 0;
  for (const auto& op : dag.ops)
    instrCount += op.src.rank == op.dst.rank ? 1 : 2;
  graph.instrs.reserve(instrCount);
  auto add = [&](Instr in) {
    in.id = static_cast<int>(graph.instrs.size());
    graph.instrs.push_back(std::move(in));
    return graph.instrs.back().id;
  };

  for (const auto& op : dag.ops) {
    const auto [srcBuffer, srcIndex] = canonical(op.src);
    const auto [dstBuffer, dstIndex] = canonical(op.dst);
    Instr base;
    base.count = op.count;
    base.channelHint = op.channel;
    base.replica = op.replica;
    base.where = locationId(op.where);
    if (op.src.rank == op.dst.rank) {
      Instr in = base;
      in.rank = op.src.rank;
      in.op = op.kind == ir::DagOpKind::copy ? ir::OpKind::copy : ir::OpKind::reduce;
      in.srcBuffer = srcBuffer;
      in.srcIndex = srcIndex;
      in.dstBuffer = dstBuffer;
      in.dstIndex = dstIndex;
      in.sendTbHint = op.sendTb;
      add(std::move(in));
      continue;
    }
    Instr send = base;
    send.rank = op.src.rank;
    send.op = ir::OpKind::send;
    send.srcBuffer = srcBuffer;
    send.srcIndex = srcIndex;
    send.dstBuffer = dstBuffer;  // the peer's location, informational
    send.dstIndex = dstIndex;
    send.sendPeer = op.dst.rank;
    send.sendTbHint = op.sendTb;
    Instr recv = base;
    recv.rank = op.dst.rank;
    recv.recvPeer = op.src.rank;
    recv.recvTbHint = op.recvTb;
    recv.dstBuffer = dstBuffer;
    recv.dstIndex = dstIndex;
    if (op.kind == ir::DagOpKind::copy) {
      recv.op = ir::OpKind::recv;
      recv.srcBuffer = srcBuffer;  // the peer's location, informational
      recv.srcIndex = srcIndex;
    } else {
      recv.op = ir::OpKind::recvReduceCopy;  // dst = received ⊕ dst: the local operand is dst
      recv.srcBuffer = dstBuffer;
      recv.srcIndex = dstIndex;
    }
    const int s = add(std::move(send));
    const int r = add(std::move(recv));
    graph.instrs[s].sendMatch = r;
    graph.instrs[r].recvMatch = s;
  }

  const LocationIndex index(graph);
  std::vector<LocationState> states(index.size());
  // Only local operands are linked: a send's dst and a recv's src name the peer's buffer.
  Readers readers;
  std::vector<int> preds;
  for (auto& in : graph.instrs)
    linkAccesses(in, index, states, readers, preds, graph.predPool);
  return graph;
}

}  // namespace chorus::compiler
