// What every executor is called with (runtime layer): one rank's buffers, element count, type
// and operator, and the buffer sizes an ir::Algorithm implies for a count.
#pragma once

#include <cstddef>

#include "ir/algorithm.h"
#include "runtime/datatype.h"

namespace chorus::runtime {

// One rank's buffers and element type. `count` follows NCCL: elements of the AllReduce,
// Broadcast and Reduce buffers, the per-rank input of AllGather, the per-rank output of
// ReduceScatter and the per-peer block of AllToAll; custom collectives use the whole buffer.
struct CollectiveArgs {
  const void* input = nullptr;
  void* output = nullptr;
  std::size_t count = 0;
  DataType type = DataType::float32;
  ReduceOp op = ReduceOp::sum;
};

// Elements the input/output buffer of `rank` must hold for `count` (see CollectiveArgs).
std::size_t inputElements(const ir::Algorithm& algorithm, int rank, std::size_t count);
std::size_t outputElements(const ir::Algorithm& algorithm, int rank, std::size_t count);

// The largest count whose biggest buffer on rank 0 holds at most `bytes` of elements of
// `elementSize` bytes (nccl-tests' "size": `chorus run --bytes`); at least 0.
std::size_t countForBytes(const ir::Algorithm& algorithm, std::size_t bytes,
                          std::size_t elementSize);

}  // namespace chorus::runtime
