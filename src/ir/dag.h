// ir::Dag: the traced chunk graph of a DSL program (GC3 §4.1): one node per copy/reduce in
// trace order, with true (data) and false (buffer-reuse) dependencies. Produced by lang/,
// consumed by the compiler's lowering pass. Plain data.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/algorithm.h"
#include "ir/collective.h"

namespace chorus::ir {

struct ChunkLoc {
  int rank = 0;
  BufferKind buffer = BufferKind::input;
  int index = 0;
  friend bool operator==(const ChunkLoc&, const ChunkLoc&) = default;
};

enum class DagOpKind : std::uint8_t { copy, reduce };

struct DagOp {
  int id = 0;  // == position in Dag::ops
  DagOpKind kind = DagOpKind::copy;
  // copy: dst[0..count) = src[0..count).
  // reduce (GC3 c1.reduce(c2)): dst = dst ⊕ src, where dst is c1 and src is c2.
  ChunkLoc src;
  ChunkLoc dst;
  int count = 1;
  // Scheduling directives (never change the result): -1 = the compiler chooses.
  int channel = -1;
  int sendTb = -1;
  int recvTb = -1;
  int parallel = 1;            // product of the enclosing parallelize(n) factors
  int replica = 0;             // set by the compiler's replication: which copy of a parallelized op
  std::vector<int> trueDeps;   // ops whose results this op reads (read-after-write)
  std::vector<int> falseDeps;  // ops whose locations this op overwrites (write-after-read/write)
  int where = -1;              // DSL source location: index into Dag::locations, -1 if none
};

struct Dag {
  std::string name;
  std::shared_ptr<const Collective> collective;
  Protocol protocol = Protocol::simple;
  int instances = 1;
  std::vector<int> scratchChunks;      // per rank: highest scratch index used + 1
  std::vector<DagOp> ops;              // trace order, which is a topological order
  std::vector<std::string> locations;  // distinct DSL source locations "file:line" (DagOp::where)

  // The DSL source location of `op` ("file:line"); empty when it has none.
  const std::string& whereOf(const DagOp& op) const {
    static const std::string none;
    return op.where >= 0 ? locations[static_cast<std::size_t>(op.where)] : none;
  }
};

}  // namespace chorus::ir
