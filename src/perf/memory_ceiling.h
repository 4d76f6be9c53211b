// The memory-bandwidth ceiling of a collective on one host (issue 17): what this machine's DRAM
// streaming rates allow a 2-rank shared-memory collective, as nccl-tests busbw, so benchmarks
// can print each size's fraction of it. The rates come from a probe run in the same benchmark
// invocation, since this machine's memory bandwidth drifts between runs
// (docs/sources.md "Peer benchmarks").
//
// Model (2 ranks; bytes of DRAM traffic the data must cause at least, at the probed rates):
//   allreduce      5n of traffic at the `a += b` rate: inputs read (2n), outputs written (2n)
//                  and the half reduced by one rank read by the other (n); busbw = rate / 5
//   reducescatter  3n: inputs read (2n), outputs written (2 · n/2); busbw = rate / 6
//   allgather,     one copy of the received bytes (n/2 per rank, n in all) at the 2-thread
//   alltoall       memcpy rate; busbw = rate / 2
// Cache-resident sizes can beat the DRAM ceiling: their fraction may exceed 100%.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace chorus::perf {

// Aggregate rates of 2 threads streaming over buffers of their own, GB/s (1e9 B/s).
struct MemoryRates {
  double addTrafficGbps = 0;  // a[i] += b[i] on float: DRAM traffic (3 bytes per byte of a)
  double copyGbps = 0;        // memcpy: bytes copied
};

// Runs both probes on 2 threads, each with its own `bytes`-byte buffers (default 64 MiB, well
// beyond the caches): the median of `repeats` timed passes after one warm-up.
MemoryRates probeMemoryRates(std::size_t bytes = std::size_t{64} << 20, int repeats = 5);

// The busbw ceiling (GB/s) of `collective` ("allreduce", ...) on `ranks` ranks; nullopt where
// the model has none (ranks other than 2, broadcast, reduce).
std::optional<double> ceilingBusbw(std::string_view collective, int ranks,
                                   const MemoryRates& rates);

// {"add_traffic_gbps": ..., "copy_gbps": ...}
std::string memoryRatesJson(const MemoryRates& rates);
// Reads memoryRatesJson's text from a file; throws ParseError naming the file and the field.
MemoryRates readMemoryRatesFile(const std::string& path);

}  // namespace chorus::perf
