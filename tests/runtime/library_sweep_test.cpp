// Every library algorithm at every rank count 2..16 (node-shaped ones at every N x G up to
// 4 x 4) runs on the thread transport with the exact result: one element, and a count no
// chunking divides (int32 sum; other types and ops are covered by thread_run_test.cpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "compile_for_test.h"
#include "runtime/thread_runner.h"

namespace chorus {
namespace {

struct SweepCase {
  std::string algorithm;
  int ranks = 0, nodes = 0, gpus = 0;
};

std::vector<SweepCase> sweepCases() {
  std::vector<SweepCase> cases;
  for (const algorithms::AlgorithmInfo& info : algorithms::listAlgorithms()) {
    if (info.shape == algorithms::Shape::ranks) {
      for (int ranks = std::max(2, info.minRanks); ranks <= 16; ++ranks)
        cases.push_back({info.name, ranks, 0, 0});
    } else {
      for (int nodes = 1; nodes <= 4; ++nodes)
        for (int gpus = 1; gpus <= 4; ++gpus)
          if (nodes * gpus >= std::max(2, info.minRanks))
            cases.push_back({info.name, 0, nodes, gpus});
    }
  }
  return cases;
}

std::string caseName(const SweepCase& c) {
  std::string name = c.algorithm + "_" +
                     (c.ranks != 0 ? std::to_string(c.ranks) + "r"
                                   : std::to_string(c.nodes) + "x" + std::to_string(c.gpus));
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

class LibrarySweepOnThreads : public ::testing::TestWithParam<SweepCase> {};

TEST_P(LibrarySweepOnThreads, ExactResult) {
  const SweepCase& c = GetParam();
  const ir::Algorithm algorithm =
      testing_support::compileForTest(c.algorithm, c.ranks, c.nodes, c.gpus);
  for (std::size_t count : {std::size_t{1}, std::size_t{1031}}) {
    runtime::ThreadRunOptions options;
    options.count = count;
    options.type = runtime::DataType::int32;
    options.op = runtime::ReduceOp::sum;
    options.timeout = std::chrono::milliseconds(60'000);
    options.fifo.slotBytes = 4096;
    const runtime::ThreadRunReport report = runtime::runOnThreads(algorithm, options);
    EXPECT_TRUE(report.ok()) << caseName(c) << " count " << count << ": " << report.firstWrong;
    EXPECT_GT(report.checkedElements, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, LibrarySweepOnThreads, ::testing::ValuesIn(sweepCases()),
                         [](const auto& info) { return caseName(info.param); });

}  // namespace
}  // namespace chorus
