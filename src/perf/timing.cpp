#include "perf/timing.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <vector>

namespace chorus::perf {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Times `iterations` operations on this rank; returns the slowest rank's seconds.
double timeBatch(std::int64_t iterations, const std::function<void(std::int64_t)>& runOps,
                 const std::function<void(std::span<double>)>& maxOverRanks) {
  const auto start = Clock::now();
  runOps(iterations);
  std::array<double, 1> seconds = {secondsSince(start)};
  maxOverRanks(seconds);
  return seconds[0];
}

}  // namespace

double medianOf(std::span<const double> values) {
  if (values.empty()) return 0;
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  const std::size_t mid = sorted.size() / 2;
  return sorted.size() % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

TimingResult measure(const TimingOptions& options, const std::function<void(std::int64_t)>& runOps,
                     const std::function<void(std::span<double>)>& maxOverRanks) {
  std::array<double, 1> sync = {0};
  maxOverRanks(sync);

  // Warm-up and per-op estimate.
  double perOpSeconds = 0;
  if (options.warmupIterations >= 0) {
    const std::int64_t iterations = std::max<std::int64_t>(1, options.warmupIterations);
    perOpSeconds = timeBatch(iterations, runOps, maxOverRanks) / static_cast<double>(iterations);
  } else {
    for (std::int64_t iterations = 1;; iterations *= 2) {
      const double seconds = timeBatch(iterations, runOps, maxOverRanks);
      perOpSeconds = seconds / static_cast<double>(iterations);
      if (seconds >= options.warmupSeconds || iterations >= options.maxIterations) break;
    }
  }

  std::int64_t total = options.iterations;
  if (total <= 0) {
    const double wanted = std::ceil(options.budgetSeconds / std::max(perOpSeconds, 1e-9));
    total = static_cast<std::int64_t>(std::clamp(wanted, static_cast<double>(options.minIterations),
                                                 static_cast<double>(options.maxIterations)));
  }
  const std::int64_t batches = std::clamp<std::int64_t>(total, 1, std::max(1, options.maxBatches));
  const std::int64_t perBatch = (total + batches - 1) / batches;

  // Timed batches. The exchange after each batch carries its time and the early-stop vote and
  // synchronises the ranks before the next batch.
  std::vector<double> perOpUs;
  const auto start = Clock::now();
  for (std::int64_t batch = 0; batch < batches; ++batch) {
    const auto batchStart = Clock::now();
    runOps(perBatch);
    std::array<double, 2> exchange = {secondsSince(batchStart),
                                      secondsSince(start) >= options.stopAfterSeconds ? 1.0 : 0.0};
    maxOverRanks(exchange);
    perOpUs.push_back(exchange[0] * 1e6 / static_cast<double>(perBatch));
    if (exchange[1] > 0) break;
  }

  TimingResult result;
  result.medianUs = medianOf(perOpUs);
  result.minUs = *std::min_element(perOpUs.begin(), perOpUs.end());
  result.batches = static_cast<int>(perOpUs.size());
  result.iterations = result.batches * perBatch;
  return result;
}

}  // namespace chorus::perf
