#include "runtime/one_sided_runner.h"

#include <algorithm>
#include <memory>
#include <numeric>

#include "runtime/one_sided_engine.h"

namespace chorus::runtime {

RunReport runOneSidedOnThreads(const ir::Algorithm& algorithm, const RunOptions& options,
                               std::vector<std::vector<std::uint8_t>>* outputs) {
  requireRunnableOneSided(algorithm, options);
  const int n = algorithm.nranks;
  std::vector<std::unique_ptr<RankBuffers>> buffers;
  std::vector<OneSidedRegion> regions;
  std::vector<std::unique_ptr<std::uint8_t[]>> storage;
  std::vector<OneSidedRankMemory> memory;
  for (int r = 0; r < n; ++r) {
    buffers.push_back(std::make_unique<RankBuffers>(algorithm, r, options));
    regions.push_back(oneSidedRegion(algorithm, r, options, 0));
    storage.push_back(std::make_unique<std::uint8_t[]>(regions.back().bytes));
    memory.push_back(oneSidedMemoryAt(storage.back().get(), regions.back(), *buffers.back()));
  }
  std::vector<int> ranks(static_cast<std::size_t>(n));
  std::iota(ranks.begin(), ranks.end(), 0);
  RunReport report;
  for (int iteration = 0; iteration < std::max(1, options.iterations); ++iteration) {
    for (int r = 0; r < n; ++r) {
      buffers[static_cast<std::size_t>(r)]->reset();
      resetOneSidedRegion(storage[static_cast<std::size_t>(r)].get(),
                          regions[static_cast<std::size_t>(r)]);
    }
    report.seconds = OneSidedExecution(algorithm, options, memory, ranks).run();
  }
  checkThreadRanks(algorithm, options, buffers, &report, outputs);
  return report;
}

}  // namespace chorus::runtime
