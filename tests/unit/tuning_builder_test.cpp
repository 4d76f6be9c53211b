// `chorus tune`'s decisions: which candidates it measures, and how measurements become a table
// (fastest per size, ties to the fewest steps, merged ranges with geometric-mean boundaries).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "selection/tuning_builder.h"
#include "support/error.h"

namespace chorus::selection {
namespace {

using ::testing::Contains;
using ::testing::Not;

std::vector<std::string> described(const std::vector<AlgorithmChoice>& choices) {
  std::vector<std::string> names;
  for (const AlgorithmChoice& choice : choices)
    names.push_back(choice.describe());
  return names;
}

TEST(TuningCandidatesTest, EveryAlgorithmOfTheCollectiveWithAFewSettings) {
  const auto names = described(tuningCandidates(ir::CollectiveKind::allreduce, 4));
  for (const char* expected :
       {"allreduce.ring", "allreduce.ring{channels=2}", "allreduce.ring{channels=4}",
        "allreduce.oneshot", "allreduce.allpairs", "allreduce.rabenseifner",
        "allreduce.recursive-doubling", "allreduce.binomial", "allreduce.double-binary-tree",
        "allreduce.hierarchical{nodes=2}", "allreduce.2d{nodes=2}"})
    EXPECT_THAT(names, Contains(expected));
  // Only other collectives' algorithms are left out; no duplicates.
  EXPECT_THAT(names, Not(Contains("allgather.ring")));
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
}

TEST(TuningCandidatesTest, NodeShapesNeedTwoLevels) {
  // 6 ranks: 2 x 3 and 3 x 2; 5 ranks (prime): no node-shaped candidate at all.
  const auto six = described(tuningCandidates(ir::CollectiveKind::alltoall, 6));
  EXPECT_THAT(six, Contains("alltoall.two-step{nodes=2}"));
  EXPECT_THAT(six, Contains("alltoall.two-step{nodes=3}"));
  const auto five = described(tuningCandidates(ir::CollectiveKind::alltoall, 5));
  EXPECT_TRUE(std::none_of(five.begin(), five.end(), [](const std::string& name) {
    return name.find("nodes=") != std::string::npos;
  }));
  EXPECT_THAT(five, Contains("alltoall.direct"));
}

TEST(TuningCandidatesTest, GridAddsProtocolsAndInstancesAndCanKeepDefaults) {
  CandidateGrid grid;
  grid.protocols = {ir::Protocol::simple, ir::Protocol::ll};
  grid.instances = {1, 2};
  grid.parameterValues = false;
  const auto names = described(tuningCandidates(ir::CollectiveKind::reducescatter, 4, grid));
  EXPECT_THAT(names, Contains("reducescatter.ring"));
  EXPECT_THAT(names, Contains("reducescatter.ring{protocol=ll}"));
  EXPECT_THAT(names, Contains("reducescatter.ring{instances=2,protocol=ll}"));
  EXPECT_THAT(names, Not(Contains("reducescatter.ring{channels=2}")));
}

CandidateMeasurements candidate(const std::string& name, std::size_t steps,
                                std::vector<std::pair<std::uint64_t, double>> times) {
  CandidateMeasurements m;
  m.choice = parseAlgorithmChoice(name, ir::CollectiveKind::allreduce, "test");
  m.steps = steps;
  for (const auto& [bytes, us] : times)
    m.points.push_back({bytes, us, 1.0});
  return m;
}

TEST(TuningTableBuilderTest, FastestPerSizeMergedWithGeometricBoundaries) {
  const std::vector<CandidateMeasurements> candidates = {
      candidate("oneshot", 10, {{8, 1.0}, {1024, 2.0}, {65536, 50.0}}),
      candidate("ring", 40, {{8, 5.0}, {1024, 6.0}, {65536, 20.0}}),
  };
  const TuningTable table =
      buildTuningTable(ir::CollectiveKind::allreduce, 4, "shm", candidates, 0.05);
  ASSERT_EQ(table.entries.size(), 2u);
  EXPECT_EQ(table.entries[0].choice.algorithm, "allreduce.oneshot");
  EXPECT_EQ(table.entries[0].range.min, 0u);
  EXPECT_EQ(table.entries[0].range.max, 8192u);  // sqrt(1024 * 65536)
  EXPECT_EQ(table.entries[1].choice.algorithm, "allreduce.ring");
  EXPECT_EQ(table.entries[1].range.max, kUnlimitedBytes);
  ASSERT_EQ(table.measured.size(), 3u);
  EXPECT_EQ(table.measured[2].algorithm, "allreduce.ring");
  EXPECT_EQ(table.measured[2].runnerUp, "allreduce.oneshot");
  EXPECT_DOUBLE_EQ(table.measured[2].runnerUpTimeUs, 50.0);
}

TEST(TuningTableBuilderTest, TiesGoToTheFewestSteps) {
  const std::vector<CandidateMeasurements> candidates = {
      candidate("ring{channels=4}", 90, {{1024, 10.0}}),
      candidate("ring", 40, {{1024, 10.4}}),      // within 5%: tied, and simpler
      candidate("allpairs", 20, {{1024, 11.0}}),  // 10% slower: not tied
  };
  EXPECT_EQ(buildTuningTable(ir::CollectiveKind::allreduce, 4, "shm", candidates, 0.05)
                .entries[0]
                .choice.describe(),
            "allreduce.ring");
  EXPECT_EQ(buildTuningTable(ir::CollectiveKind::allreduce, 4, "shm", candidates, 0.0)
                .entries[0]
                .choice.describe(),
            "allreduce.ring{channels=4}");
}

TEST(TuningTableBuilderTest, SizesAFailedCandidateMissedStillHaveAWinner) {
  const std::vector<CandidateMeasurements> candidates = {
      candidate("ring", 40, {{8, 5.0}}),
      candidate("allpairs", 20, {{8, 9.0}, {64, 9.0}}),
  };
  const TuningTable table =
      buildTuningTable(ir::CollectiveKind::allreduce, 4, "shm", candidates, 0.05);
  ASSERT_EQ(table.entries.size(), 2u);
  EXPECT_EQ(table.entries[1].choice.algorithm, "allreduce.allpairs");
  EXPECT_EQ(table.entries[1].range.min, 23u);  // round(sqrt(8 * 64))
  EXPECT_THROW(buildTuningTable(ir::CollectiveKind::allreduce, 4, "shm", {}, 0.05), OptionError);
}

}  // namespace
}  // namespace chorus::selection
