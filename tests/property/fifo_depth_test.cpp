// Property test of the deadlock argument in docs/compiler.md ("Deadlock freedom at the
// runtime's FIFO depth") on every library algorithm and every valid interop file: the verdict
// at a FIFO depth does not change with the number of simulated tiles, deadlock freedom is
// monotone in the depth, and verify::minimumFifoSlots is the exact threshold. The population is
// fixed (no randomness): library plans at 2..8 ranks compiled for 8 slots and for 1, and the
// reference compiler's files.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "ir/msccl_xml.h"
#include "support/error.h"
#include "verify/fifo_depth.h"
#include "verify/verify.h"

namespace chorus {
namespace {

struct NamedPlan {
  std::string what;
  ir::Algorithm algorithm;
};

std::vector<NamedPlan> buildPopulation() {
  std::vector<NamedPlan> plans;
  for (const algorithms::AlgorithmInfo& info : algorithms::listAlgorithms()) {
    for (int ranks = std::max(2, info.minRanks); ranks <= 8; ranks += 3) {
      algorithms::BuildRequest request;
      request.algorithm = info.name;
      if (info.shape == algorithms::Shape::nodes) {
        if (ranks % 2 != 0) continue;
        request.nodes = 2;
        request.gpusPerNode = ranks / 2;
      } else {
        request.ranks = ranks;
      }
      for (const int slots : {8, 1}) {
        compiler::CompileOptions options;
        options.fifoSlots = slots;
        try {
          plans.push_back({info.name + " " + std::to_string(ranks) + " ranks, compiled for " +
                               std::to_string(slots) + " slot(s)",
                           algorithms::compileAlgorithm(request, options).algorithm});
        } catch (const UserError&) {
          // Not every shape suits every algorithm, nor every depth every schedule.
        }
      }
    }
  }
  const std::string dir = CHORUS_SHARED_DIR "/interop/msccl-xml/valid";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    for (ir::Algorithm& algorithm : ir::readMscclXmlFile(entry.path().string()))
      plans.push_back({entry.path().filename().string(), std::move(algorithm)});
  }
  return plans;
}

const std::vector<NamedPlan>& population() {
  static const std::vector<NamedPlan> plans = buildPopulation();
  return plans;
}

bool deadlocksAt(const ir::Algorithm& algorithm, int slots, int tiles) {
  verify::VerifyOptions options;
  options.fifoSlots = slots;
  options.iterations = tiles;
  options.checkPostcondition = false;
  options.checkRaces = false;
  options.checkWritesInput = false;
  const verify::VerifyReport report = verify::verifyAlgorithm(algorithm, options);
  EXPECT_TRUE(report.deadlockChecked) << report.describe();
  return std::any_of(report.findings.begin(), report.findings.end(), [](const auto& finding) {
    return finding.kind == verify::FindingKind::deadlock;
  });
}

TEST(FifoDepthProperty, OneTileDecidesAndDepthIsMonotone) {
  const std::vector<NamedPlan>& plans = population();
  ASSERT_GT(plans.size(), 100u);
  int deadlocking = 0;
  for (const NamedPlan& plan : plans) {
    SCOPED_TRACE(plan.what);
    bool deadlockedAbove = false;
    for (int slots = 4; slots >= 1; --slots) {
      const bool one = deadlocksAt(plan.algorithm, slots, 1);
      EXPECT_EQ(deadlocksAt(plan.algorithm, slots, 2), one) << "at " << slots << " slot(s)";
      EXPECT_EQ(deadlocksAt(plan.algorithm, slots, 3), one) << "at " << slots << " slot(s)";
      EXPECT_FALSE(deadlockedAbove && !one)
          << "deadlock-free at " << slots << " slot(s) but not at a greater depth";
      deadlockedAbove = deadlockedAbove || one;
      deadlocking += one;
    }
  }
  // The population must exercise shallow FIFOs, or the comparisons above prove nothing.
  EXPECT_GT(deadlocking, 10);
}

TEST(FifoDepthProperty, MinimumSlotsIsTheExactThreshold) {
  for (const NamedPlan& plan : population()) {
    SCOPED_TRACE(plan.what);
    const std::optional<int> needed = verify::minimumFifoSlots(plan.algorithm);
    ASSERT_TRUE(needed.has_value()) << "valid plans are deadlock-free at some depth";
    EXPECT_FALSE(deadlocksAt(plan.algorithm, *needed, 2));
    if (*needed > 1) {
      EXPECT_TRUE(deadlocksAt(plan.algorithm, *needed - 1, 2));
    }
  }
}

}  // namespace
}  // namespace chorus
