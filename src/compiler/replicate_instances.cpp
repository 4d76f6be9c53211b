#include "compiler/replicate_instances.h"

#include <numeric>

#include "support/error.h"

namespace chorus::compiler {

namespace {

struct Unit {
  int src;
  int dst;
};

int physicalIndex(ir::BufferKind buffer, int index, int subPart, int factor, int scratchSize) {
  if (buffer == ir::BufferKind::scratch) return subPart * scratchSize + index;
  return index * factor + subPart;
}

// Groups units into maximal runs where both src and dst advance by one.
std::vector<std::pair<Unit, int>> contiguousRuns(const std::vector<Unit>& units) {
  std::vector<std::pair<Unit, int>> runs;
  for (const auto& u : units) {
    if (!runs.empty()) {
      auto& [start, length] = runs.back();
      if (u.src == start.src + length && u.dst == start.dst + length) {
        ++length;
        continue;
      }
    }
    runs.push_back({u, 1});
  }
  return runs;
}

}  // namespace

ir::Dag replicateInstances(const ir::Dag& dag, const PassContext&) {
  int lcm = 1;
  for (const auto& op : dag.ops)
    lcm = std::lcm(lcm, op.parallel);
  const int factor = dag.instances * lcm;
  ir::Dag out;
  out.name = dag.name;
  out.protocol = dag.protocol;
  out.instances = 1;
  out.collective = factor == 1 ? dag.collective : dag.collective->refined(factor);
  out.scratchChunks = dag.scratchChunks;
  for (auto& s : out.scratchChunks)
    s *= factor;
  if (factor == 1) {
    out.ops = dag.ops;
    for (auto& op : out.ops) {
      op.trueDeps.clear();
      op.falseDeps.clear();
    }
    return out;
  }
  for (const auto& op : dag.ops) {
    const int replicas = dag.instances * op.parallel;
    const int perReplica = factor / replicas;
    const int srcScratch = dag.scratchChunks[op.src.rank];
    const int dstScratch = dag.scratchChunks[op.dst.rank];
    for (int q = 0; q < replicas; ++q) {
      // Two enumeration orders of the (sub-part, chunk) units; keep the one with fewer runs.
      std::vector<Unit> partMajor, chunkMajor;
      for (int s = q * perReplica; s < (q + 1) * perReplica; ++s)
        for (int i = 0; i < op.count; ++i)
          partMajor.push_back(
              {physicalIndex(op.src.buffer, op.src.index + i, s, factor, srcScratch),
               physicalIndex(op.dst.buffer, op.dst.index + i, s, factor, dstScratch)});
      for (int i = 0; i < op.count; ++i)
        for (int s = q * perReplica; s < (q + 1) * perReplica; ++s)
          chunkMajor.push_back(
              {physicalIndex(op.src.buffer, op.src.index + i, s, factor, srcScratch),
               physicalIndex(op.dst.buffer, op.dst.index + i, s, factor, dstScratch)});
      auto runs = contiguousRuns(partMajor);
      auto other = contiguousRuns(chunkMajor);
      if (other.size() < runs.size()) runs = std::move(other);
      for (const auto& [start, length] : runs) {
        ir::DagOp piece = op;
        piece.id = static_cast<int>(out.ops.size());
        piece.src.index = start.src;
        piece.dst.index = start.dst;
        piece.count = length;
        piece.replica = replicas > 1 ? q : 0;
        // Manual threadblock t of replica q becomes t * replicas + q, as msccl-tools numbers
        // instances' threadblocks, so replicas never share a threadblock.
        if (replicas > 1) {
          if (piece.sendTb >= 0) piece.sendTb = piece.sendTb * replicas + q;
          if (piece.recvTb >= 0) piece.recvTb = piece.recvTb * replicas + q;
        }
        piece.trueDeps.clear();
        piece.falseDeps.clear();
        out.ops.push_back(std::move(piece));
      }
    }
  }
  return out;
}

}  // namespace chorus::compiler
