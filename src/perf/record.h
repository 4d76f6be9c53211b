// One benchmark result row (one size, out-of-place or in-place) as every chorus benchmark
// and peer benchmark records it; the JSON form is in record_json.h (perf layer).
#pragma once

#include <cstdint>
#include <string>

namespace chorus::perf {

struct BenchRecord {
  std::string library;     // "chorus", "openmpi", "gloo"
  std::string collective;  // collectiveName()
  std::string algorithm;   // what ran: a chorus plan name, "MPI_Allreduce", "gloo ring", ...
  int ranks = 0;
  std::string transport;    // "thread", "shm", "vader", "tcp", ...
  std::uint64_t bytes = 0;  // nccl-tests "size" (CollectiveShape::bytes)
  std::uint64_t count = 0;  // nccl-tests "count" (CollectiveShape::elements)
  std::string dtype = "float32";
  std::string op = "sum";  // "none" for allgather, alltoall and broadcast
  int root = -1;           // broadcast and reduce; -1 otherwise
  bool inplace = false;
  bool supported = true;  // false: the library cannot run this variant; `note` says why
  std::string note;
  double timeUs = 0;  // median over batches of the per-op time (max over ranks)
  double minUs = 0;   // best batch
  double algbwGbps = 0;
  double busbwGbps = 0;
  std::int64_t wrong = -1;      // wrong elements summed over ranks; -1: not checked
  std::int64_t iterations = 0;  // timed operations
  int batches = 0;
};

// Sets algbw = bytes / time (GB/s, 1e9 B/s) and busbw = algbw * factor from timeUs.
void setBandwidths(BenchRecord& record, double busFactor);

}  // namespace chorus::perf
