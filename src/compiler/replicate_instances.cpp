#include "compiler/replicate_instances.h"

#include <numeric>
#include <string>
#include <vector>

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

// ir::DagOp's fields as withoutDeps() copies them: a field added to DagOp changes its size and
// stops the build here until withoutDeps() copies it too.
struct DagOpFields {
  int id;
  ir::DagOpKind kind;
  ir::ChunkLoc src, dst;
  int count, channel, sendTb, recvTb, parallel, replica;
  std::vector<int> trueDeps, falseDeps;
  int where;
};
static_assert(sizeof(DagOpFields) == sizeof(ir::DagOp),
              "ir::DagOp gained a field: copy it in withoutDeps() and list it in DagOpFields");

// A copy of `op` with empty dependency lists (the compiler derives its own edges), made without
// copying the lists.
ir::DagOp withoutDeps(const ir::DagOp& op) {
  ir::DagOp copy;
  copy.id = op.id;
  copy.kind = op.kind;
  copy.src = op.src;
  copy.dst = op.dst;
  copy.count = op.count;
  copy.channel = op.channel;
  copy.sendTb = op.sendTb;
  copy.recvTb = op.recvTb;
  copy.parallel = op.parallel;
  copy.replica = op.replica;
  copy.where = op.where;
  return copy;
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
  out.locations = dag.locations;
  for (auto& s : out.scratchChunks)
    s *= factor;
  out.ops.reserve(dag.ops.size());
  if (factor == 1) {
    for (const auto& op : dag.ops)
      out.ops.push_back(withoutDeps(op));
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
        ir::DagOp piece = withoutDeps(op);
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
        out.ops.push_back(std::move(piece));
      }
    }
  }
  return out;
}

}  // namespace chorus::compiler
