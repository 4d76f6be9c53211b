// The benchmarks' timing method (perf layer), identical for chorus, Open MPI and Gloo:
// calibrated warm-up, then batches each preceded by an untimed synchronising exchange; a
// batch's per-op time is the max over ranks; the result is the median over batches.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

namespace chorus::perf {

struct TimingOptions {
  // Warm-up: double the iteration count until one batch takes >= warmupSeconds (it also
  // estimates the per-op time). warmupIterations >= 0 replaces it with that many operations.
  double warmupSeconds = 0.02;
  std::int64_t warmupIterations = -1;
  // Timed part: enough operations for budgetSeconds (within [minIterations, maxIterations]),
  // or exactly `iterations` when > 0, split into at most maxBatches batches.
  double budgetSeconds = 0.2;
  std::int64_t iterations = 0;
  std::int64_t minIterations = 5;
  std::int64_t maxIterations = 200'000;
  int maxBatches = 50;
  // Collective early stop: no batch starts once this much time has passed in the timed part.
  double stopAfterSeconds = 1.0;
};

struct TimingResult {
  double medianUs = 0;  // median over batches of the per-op time (max over ranks)
  double minUs = 0;     // best batch
  std::int64_t iterations = 0;
  int batches = 0;
};

// Runs `runOps(k)` (k operations back to back) in batches as above. `maxOverRanks(values)`
// replaces each value with its maximum over all ranks; it is the untimed synchronising step.
// Every rank calls this with the same options; every decision uses values already reduced
// over the ranks, so all ranks run the same number of operations.
TimingResult measure(const TimingOptions& options, const std::function<void(std::int64_t)>& runOps,
                     const std::function<void(std::span<double>)>& maxOverRanks);

// The median of `values` (the mean of the middle two for an even count; 0 when empty).
double medianOf(std::span<const double> values);

}  // namespace chorus::perf
