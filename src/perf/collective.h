// The six benchmarked collectives with nccl-tests' size conventions and bus-bandwidth factors
// (perf layer; shared by `chorus bench` and the peer benchmarks in bench/peers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "chorus/types.h"

namespace chorus::perf {

enum class Collective { allreduce, allgather, reducescatter, alltoall, broadcast, reduce };

// "allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "reduce".
std::string_view collectiveName(Collective collective);
// The names above, plus "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "bcast";
// nullopt for anything else.
std::optional<Collective> parseCollective(std::string_view name);
const std::vector<Collective>& allCollectives();

// "sum", "prod", "min", "max", "avg"; parseReduceOp also accepts "product" and "mean".
std::string_view reduceOpName(ReduceOp op);
std::optional<ReduceOp> parseReduceOp(std::string_view name);

bool isReduction(Collective collective);  // allreduce, reducescatter, reduce
bool hasRoot(Collective collective);      // broadcast, reduce

// Element counts of one benchmark row for a requested size (nccl-tests' getCollByteCount).
// Chunked collectives round the per-rank block down, to at least one element.
struct CollectiveShape {
  // The NCCL `count` argument: the AllReduce/Broadcast/Reduce buffer, each rank's AllGather
  // input, each rank's ReduceScatter output, each per-peer AllToAll block.
  std::size_t count = 0;
  std::size_t sendCount = 0;  // elements of each rank's input buffer
  std::size_t recvCount = 0;  // elements of each rank's output buffer
  // The row's "size" in bytes (the larger of input and output) and its "count" in elements.
  std::uint64_t bytes = 0;
  std::size_t elements = 0;
};
CollectiveShape shapeFor(Collective collective, std::uint64_t requestedBytes,
                         std::size_t elementSize, int nranks);

// busbw = algbw * factor: 2(n-1)/n for allreduce, (n-1)/n for allgather, reducescatter and
// alltoall, 1 for broadcast and reduce (nccl-tests doc/PERFORMANCE.md).
double busBandwidthFactor(Collective collective, int nranks);

}  // namespace chorus::perf
