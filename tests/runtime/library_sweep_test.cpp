// Every library algorithm at every rank count 2..16 (node-shaped ones at every N x G up to
// 4 x 4; with `channels`, also k = 2, 3 at 2x2, 2x3, 3x2, and the rings one ring per GPU at 2x2,
// 2x3, 3x4), and each other named value of its parameters (alltonext direction=backward), runs on
// the thread transport with the exact result: one element, and a count no chunking divides
// (int32 sum; other types and ops are covered by thread_run_test.cpp); the odd count also with
// every message by reference and with streaming stores.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/registry.h"
#include "compile_for_test.h"
#include "library_cases.h"
#include "runtime/thread_runner.h"

namespace chorus {
namespace {

using testing_support::libraryCaseName;
using testing_support::LibrarySweepCase;
using testing_support::namedSettings;
using testing_support::takesParam;

std::vector<LibrarySweepCase> sweepCases() {
  std::vector<LibrarySweepCase> cases;
  for (const algorithms::AlgorithmInfo& info : algorithms::listAlgorithms()) {
    for (const auto& params : namedSettings(info)) {
      if (info.shape == algorithms::Shape::ranks) {
        for (int ranks = std::max(2, info.minRanks); ranks <= 16; ++ranks)
          cases.push_back({info.name, ranks, 0, 0, params});
        if (info.alsoByNodes) {  // the rail rings: one ring per channel over N x G
          for (const auto& [nodes, gpus] : {std::pair{2, 2}, {2, 3}, {3, 4}}) {
            std::map<std::string, int> withChannels = params;
            withChannels["channels"] = gpus;
            cases.push_back({info.name, 0, nodes, gpus, withChannels});
          }
        }
      } else {
        for (int nodes = 1; nodes <= 4; ++nodes)
          for (int gpus = 1; gpus <= 4; ++gpus)
            if (nodes * gpus >= std::max(2, info.minRanks))
              cases.push_back({info.name, 0, nodes, gpus, params});
        if (takesParam(info, "channels")) {  // k instances (hierarchical, two-step, 2d)
          for (const auto& [nodes, gpus] : {std::pair{2, 2}, {2, 3}, {3, 2}}) {
            for (int channels : {2, 3}) {
              std::map<std::string, int> withChannels = params;
              withChannels["channels"] = channels;
              cases.push_back({info.name, 0, nodes, gpus, withChannels});
              if (takesParam(info, "schedule")) {  // the compiler's schedule: parallelize(k)
                withChannels["schedule"] = 0;
                cases.push_back({info.name, 0, nodes, gpus, withChannels});
              }
            }
          }
        }
      }
    }
  }
  return cases;
}

class LibrarySweepOnThreads : public ::testing::TestWithParam<LibrarySweepCase> {};

TEST_P(LibrarySweepOnThreads, ExactResult) {
  const LibrarySweepCase& c = GetParam();
  const ir::Algorithm algorithm =
      testing_support::compileForTest(c.algorithm, c.ranks, c.nodes, c.gpus, c.params);
  for (std::size_t count : {std::size_t{1}, std::size_t{1031}}) {
    runtime::ThreadRunOptions options;
    options.count = count;
    options.type = runtime::DataType::int32;
    options.op = runtime::ReduceOp::sum;
    options.timeout = std::chrono::milliseconds(60'000);
    options.fifo.slotBytes = 4096;
    const runtime::ThreadRunReport report = runtime::runOnThreads(algorithm, options);
    EXPECT_TRUE(report.ok()) << libraryCaseName(c) << " count " << count << ": "
                             << report.firstWrong;
    EXPECT_GT(report.checkedElements, 0u);
  }
  // The same with every message by reference (single copy), then with every write to the
  // caller's buffers streamed.
  runtime::ThreadRunOptions options;
  options.count = 1031;
  options.type = runtime::DataType::int32;
  options.timeout = std::chrono::milliseconds(60'000);
  options.fifo.slotBytes = 4096;
  options.fifo.singleCopyBytes = 1;
  options.alwaysByReference = true;
  runtime::ThreadRunReport report = runtime::runOnThreads(algorithm, options);
  EXPECT_TRUE(report.ok()) << libraryCaseName(c) << " by reference: " << report.firstWrong;
  options.fifo.singleCopyBytes = 0;
  options.streamingWorkingSetBytes = 1;
  report = runtime::runOnThreads(algorithm, options);
  EXPECT_TRUE(report.ok()) << libraryCaseName(c) << " streamed: " << report.firstWrong;
}

INSTANTIATE_TEST_SUITE_P(Registry, LibrarySweepOnThreads, ::testing::ValuesIn(sweepCases()),
                         [](const auto& info) { return libraryCaseName(info.param); });

// Past the sweep's 16 ranks: the recursive-doubling ReduceScatter at 17 (core of 16, one extra)
// and 32 ranks, exact at a count no chunking divides.
TEST(LibraryBeyondTheSweep, ReduceScatterRecursiveDoublingIsExact) {
  for (int ranks : {17, 32}) {
    const ir::Algorithm algorithm =
        testing_support::compileForTest("reducescatter.recursive-doubling", ranks, 0, 0, {});
    runtime::ThreadRunOptions options;
    options.count = 1031;
    options.type = runtime::DataType::int32;
    options.op = runtime::ReduceOp::sum;
    options.timeout = std::chrono::milliseconds(60'000);
    options.fifo.slotBytes = 4096;
    const runtime::ThreadRunReport report = runtime::runOnThreads(algorithm, options);
    EXPECT_TRUE(report.ok()) << ranks << " ranks: " << report.firstWrong;
    EXPECT_GT(report.checkedElements, 0u);
  }
}

}  // namespace
}  // namespace chorus
