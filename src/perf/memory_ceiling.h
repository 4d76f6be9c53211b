// The memory-bandwidth ceiling of a collective on one host (issues 17 and 34): what this
// machine's memory allows a 2-rank shared-memory collective, as nccl-tests busbw, so benchmarks
// can print each size's fraction of it. The rates come from a probe run in the same benchmark
// invocation, since this machine's memory bandwidth drifts between runs
// (docs/sources.md "Peer benchmarks"), at several working-set sizes: a call whose buffers fit
// the cache is held to the cache's rates, one that does not to DRAM's.
//
// Model (2 ranks, n = the benchmark's size; the least data the collective must move, at the
// probed rates of the working set it has):
//   allreduce      5n of traffic at the `a += b` rate: inputs read (2n), outputs written (2n)
//                  and the half reduced by one rank read by the other (n); busbw = rate / 5.
//                  Working set: 4n out of place, 2n in place.
//   reducescatter  3n of traffic at the `a += b` rate: inputs read (2n), outputs written
//                  (2 · n/2); busbw = rate / 6. Working set 3n out of place, 2n in place.
//   allgather,     in place: one copy of the received bytes (n/2 per rank, n in all) at the
//   alltoall       2-thread copy rate, busbw = rate / 2; out of place also each rank's own
//                  block, copied from its input (another n in all), busbw = rate / 4.
//                  Working set: allgather 3n out of place, alltoall 4n; 2n in place.
// Rates for a working set W come from the smallest probe whose buffers (both threads, both
// buffers) hold at least W bytes, or the largest probe where none does. Sizes whose probe the
// data outgrows only in part can beat their ceiling: their fraction may exceed 100%.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace chorus::perf {

// Aggregate rates of 2 threads streaming over buffers of their own, GB/s (1e9 B/s).
struct MemoryRates {
  double addTrafficGbps = 0;  // a[i] += b[i] on float: memory traffic (3 bytes per byte of a)
  double copyGbps = 0;        // bytes copied: the faster of memcpy and streaming stores
  // Bytes of the probe's buffers, both threads' a and b together (0: not known, as in files
  // written before the probe took sizes).
  std::uint64_t workingSetBytes = 0;
};

// Rates at several working-set sizes, ascending by workingSetBytes.
struct MemoryProfile {
  std::vector<MemoryRates> points;
};

// Runs both probes on 2 threads, each with its own two `bytes`-byte buffers: the median of
// `repeats` timed passes after one warm-up. A pass repeats each kernel until it has moved at
// least 64 MiB per thread, so small (cache-resident) buffers are timed as well as large ones.
MemoryRates probeMemoryRates(std::size_t bytes = std::size_t{64} << 20, int repeats = 5);

// probeMemoryRates at each of `bytesPerBuffer`.
MemoryProfile probeMemoryProfile(std::span<const std::size_t> bytesPerBuffer, int repeats = 5);

// The bytes both ranks' buffers of a 2-rank call of `collective` hold (the model above);
// nullopt where the model has none (ranks other than 2, broadcast, reduce).
std::optional<std::uint64_t> ceilingWorkingSetBytes(std::string_view collective, int ranks,
                                                    std::uint64_t bytes, bool inPlace);

// The probe point whose rates hold for working set `bytes` (the model above). `profile` must
// not be empty.
const MemoryRates& ratesForWorkingSet(const MemoryProfile& profile, std::uint64_t bytes);

// The busbw ceiling (GB/s) of `collective` ("allreduce", ...) on `ranks` ranks at `rates`;
// nullopt where the model has none.
std::optional<double> ceilingBusbw(std::string_view collective, int ranks, bool inPlace,
                                   const MemoryRates& rates);

// The busbw ceiling of one benchmark cell: its working set's rates from `profile`.
std::optional<double> ceilingBusbw(std::string_view collective, int ranks, std::uint64_t bytes,
                                   bool inPlace, const MemoryProfile& profile);

// {"add_traffic_gbps": ..., "copy_gbps": ... (the largest probe), "by_working_set": [{
// "working_set_bytes": ..., "add_traffic_gbps": ..., "copy_gbps": ...}, ...]}
std::string memoryProfileJson(const MemoryProfile& profile);
// Reads memoryProfileJson's text from a file (a file with only the two top-level rates is one
// point of unknown size); throws ParseError naming the file and the field.
MemoryProfile readMemoryProfileFile(const std::string& path);
// The per-point median of several profiles (one per round) probed at the same sizes; throws
// ParseError if their sizes differ.
MemoryProfile medianProfile(std::span<const MemoryProfile> profiles);

}  // namespace chorus::perf
