// End-to-end tests of `chorus synth reduction` (path in CHORUS_CLI): P² placements and
// programs on the DGX-1 preset as a table and as JSON, P²'s findings on two A100 nodes,
// --emit writing synthesized programs
// (an AllReduce, group reductions) that `chorus run` executes with exact results, and usage
// mistakes exiting 2.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cli_run.h"
#include "temp_dir.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using chorus::testing_support::CommandResult;
using chorus::testing_support::runCli;
using chorus::testing_support::runShell;

// A fresh temporary path for this test process.
using chorus::testing_support::tempPath;

// Runs `synth reduction ARGUMENTS --json FILE` and returns the parsed file (null on failure,
// with the test failed).
nlohmann::json synthJson(const std::string& arguments) {
  const std::filesystem::path file = tempPath("synth_reduction.json");
  const CommandResult r =
      runCli("synth reduction " + arguments + " --json '" + file.string() + "'");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  if (r.exitCode != 0) return nullptr;
  std::ifstream in(file);
  nlohmann::json json = nlohmann::json::parse(in);
  std::filesystem::remove(file);
  return json;
}

// Runs `synth reduction ARGUMENTS --emit DIR`, then `chorus run` on every emitted file;
// returns the runs' results.
std::vector<CommandResult> runEmitted(const std::string& arguments,
                                      const std::filesystem::path& dir) {
  const CommandResult r = runCli("synth reduction " + arguments + " --emit '" + dir.string() + "'");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("wrote "));
  std::vector<CommandResult> runs;
  if (r.exitCode != 0) return runs;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    runs.push_back(runCli("run '" + entry.path().string() + "' --bytes 100000 --dtype int32"));
  return runs;
}

TEST(SynthReductionCli, Dgx1PlacementsAndProgramsAsATable) {
  // DGX-1 is [(node,1),(socket,2),(pcie-switch,2),(device,2)]: data 2 x shards 4 has 3
  // placements (the data axis on one of the three levels of size 2), each reducing pairs.
  const CommandResult r =
      runCli("synth reduction --topology dgx1 --axes 2,4 --reduce 0 --quiet --instances 1");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("[(node, 1), (socket, 2), (pcie-switch, 2), (device, 2)]"));
  EXPECT_THAT(r.output, HasSubstr("3 placements, 9 valid programs (size <= 5)"));
  EXPECT_THAT(r.output, HasSubstr("(node, InsideGroup, ReduceScatter); (node, InsideGroup, "
                                  "AllGather)"));
  EXPECT_THAT(r.output, HasSubstr("placement: the single AllReduce takes"));
}

TEST(SynthReductionCli, JsonListsEveryCandidateWithItsSpeedup) {
  const nlohmann::json json =
      synthJson("--topology dgx1 --axes 2,4 --reduce 0 --quiet --threadblocks 6");
  ASSERT_FALSE(json.is_null());
  EXPECT_EQ(json.at("axes"), nlohmann::json({2, 4}));
  // Every program in both lowerings (--lowering both, the default).
  EXPECT_EQ(json.at("lowering"), "both");
  ASSERT_EQ(json.at("candidates").size(), 18u);
  std::set<int> placements;
  std::map<std::string, int> lowerings;
  for (const auto& candidate : json.at("candidates")) {
    placements.insert(candidate.at("placement").get<int>());
    ASSERT_EQ(candidate.at("matrix").size(), 2u);
    EXPECT_EQ(candidate.at("matrix")[0].size(), 4u);
    EXPECT_GT(candidate.at("seconds").get<double>(), 0);
    const double speedup = candidate.at("speedup").get<double>();
    EXPECT_NEAR(
        speedup,
        candidate.at("allreduce_seconds").get<double>() / candidate.at("seconds").get<double>(),
        1e-9);
    ++lowerings[candidate.at("lowering").get<std::string>()];
    // The baseline is the single AllReduce in its faster lowering.
    if (candidate.at("program") == "(node, InsideGroup, AllReduce)") {
      if (candidate.at("lowering") == candidate.at("allreduce_lowering")) {
        EXPECT_DOUBLE_EQ(speedup, 1.0);
      } else {
        EXPECT_LE(speedup, 1.0);
      }
    }
    // Every program is replicated as far as the budget allows, and only one instance may
    // exceed it.
    const int instances = candidate.at("instances").get<int>();
    const int threadblocks = candidate.at("threadblocks").get<int>();
    EXPECT_GE(instances, 1);
    EXPECT_EQ(threadblocks % instances, 0);
    if (instances > 1) {
      EXPECT_LE(threadblocks, 6);
    }
    EXPECT_GT(threadblocks + threadblocks / instances, 6) << "one more instance would fit";
  }
  EXPECT_EQ(placements, (std::set<int>{0, 1, 2}));
  EXPECT_EQ(lowerings, (std::map<std::string, int>{{"ring", 9}, {"tree", 9}}));
}

TEST(SynthReductionCli, OneLoweringRanksEachProgramOnce) {
  for (const std::string lowering : {"ring", "tree"}) {
    const nlohmann::json json = synthJson(
        "--topology dgx1 --axes 2,4 --reduce 0 --quiet "
        "--instances 1 --lowering " +
        lowering);
    ASSERT_FALSE(json.is_null());
    ASSERT_EQ(json.at("candidates").size(), 9u);
    for (const auto& candidate : json.at("candidates")) {
      EXPECT_EQ(candidate.at("lowering"), lowering);
      EXPECT_EQ(candidate.at("allreduce_lowering"), lowering);
    }
  }
  const CommandResult bad =
      runCli("synth reduction --topology dgx1 --axes 2,4 --reduce 0 --lowering chain");
  EXPECT_EQ(bad.exitCode, 2) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("--lowering chain is not known; use ring"));
}

TEST(SynthReductionCli, P2FindingsOnTwoA100Nodes) {
  // P² §5 on two 16-GPU A100 nodes, data 4 x shards 8, reducing data: placement changes
  // the AllReduce time by orders of magnitude; a reduction that crosses nodes is beaten by a
  // topology-aware program; one that stays inside a node is best as a single AllReduce
  // (every program on the same threadblock budget). Ring lowering only, as in the paper's Ring
  // columns, to keep the test short; the tree lowering has its own tests.
  const nlohmann::json json = synthJson(
      "--topology hgx-a100-16 --nodes 2 --axes 4,8 --reduce 0 --size-limit 4 --quiet "
      "--lowering ring");
  ASSERT_FALSE(json.is_null());
  std::map<int, double> bestSpeedup;
  std::map<int, bool> crossesNodes;
  double fastestAllReduce = 1e9;
  double slowestAllReduce = 0;
  for (const auto& candidate : json.at("candidates")) {
    const int placement = candidate.at("placement").get<int>();
    bestSpeedup[placement] =
        std::max(bestSpeedup[placement], candidate.at("speedup").get<double>());
    crossesNodes[placement] = candidate.at("matrix")[0][0].get<int>() > 1;
    fastestAllReduce = std::min(fastestAllReduce, candidate.at("allreduce_seconds").get<double>());
    slowestAllReduce = std::max(slowestAllReduce, candidate.at("allreduce_seconds").get<double>());
  }
  ASSERT_EQ(bestSpeedup.size(), 4u);
  EXPECT_GT(slowestAllReduce / fastestAllReduce, 10);
  for (const auto& [placement, speedup] : bestSpeedup) {
    SCOPED_TRACE("placement " + std::to_string(placement));
    if (crossesNodes[placement])
      EXPECT_GT(speedup, 1.2);
    else
      EXPECT_LT(speedup, 1.0 + 1e-9);
  }
}

TEST(SynthReductionCli, EmittedProgramRunsWithExactResults) {
  // Reducing all 8 GPUs makes the program an AllReduce that `chorus run` checks.
  const std::filesystem::path dir = tempPath("synth_reduction_emit");
  const std::vector<CommandResult> runs =
      runEmitted("--topology dgx1 --axes 8 --reduce 0 --quiet --instances 1 --top 1", dir);
  EXPECT_EQ(runs.size(), 1u);
  for (const CommandResult& run : runs) {
    EXPECT_EQ(run.exitCode, 0) << run.output;
    EXPECT_THAT(run.output, HasSubstr("on 8 ranks"));
    EXPECT_THAT(run.output, HasSubstr("correct"));
  }
  std::filesystem::remove_all(dir);
}

TEST(SynthReductionCli, EmittedTreeLoweredProgramsRunWithExactResults) {
  // The two fastest tree-lowered programs of all 8 GPUs (AllReduces `chorus run` checks) and of
  // 2 x 4 reducing axis 1 (group reductions): double binary trees, tree Reduce / Broadcast.
  const std::filesystem::path dir = tempPath("synth_reduction_tree");
  std::vector<CommandResult> runs = runEmitted(
      "--topology dgx1 --axes 8 --reduce 0 --quiet --instances 1 --top 2 --lowering tree", dir);
  const std::filesystem::path groups = tempPath("synth_reduction_tree_groups");
  for (CommandResult& run :
       runEmitted("--topology dgx1 --axes 2,4 --reduce 1 --quiet --instances 1 --top 2 "
                  "--lowering tree",
                  groups))
    runs.push_back(std::move(run));
  EXPECT_EQ(runs.size(), 4u);
  for (const CommandResult& run : runs) {
    EXPECT_EQ(run.exitCode, 0) << run.output;
    EXPECT_THAT(run.output, HasSubstr("correct ("));
  }
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    EXPECT_THAT(entry.path().filename().string(), ::testing::EndsWith("-tree.xml"));
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(groups);
}

TEST(SynthReductionCli, EmittedGroupReductionsRunWithExactResults) {
  // Reducing one axis of 2 x 4 gives several reduction groups: the XML names its group
  // reduction, so `chorus run` checks every rank against its own group's sum.
  const std::filesystem::path dir = tempPath("synth_reduction_groups");
  const std::vector<CommandResult> runs =
      runEmitted("--topology dgx1 --axes 2,4 --reduce 1 --quiet --instances 1 --top 2", dir);
  EXPECT_EQ(runs.size(), 2u);
  for (const CommandResult& run : runs) {
    EXPECT_EQ(run.exitCode, 0) << run.output;
    EXPECT_THAT(run.output, HasSubstr("correct (200000 elements checked)"));
  }
  ASSERT_FALSE(runs.empty());
  // Without its name the collective is unknown: `chorus run` says it did not check.
  const std::filesystem::path first = *std::filesystem::directory_iterator(dir);
  const std::filesystem::path plain = dir / "plain.xml";
  ASSERT_EQ(
      runShell("sed 's/ custom=\"[^\"]*\"//' '" + first.string() + "' > '" + plain.string() + "'")
          .exitCode,
      0);
  const CommandResult unknown = runCli("run '" + plain.string() + "' --bytes 100000 --dtype int32");
  EXPECT_EQ(unknown.exitCode, 0) << unknown.output;
  EXPECT_THAT(unknown.output, HasSubstr("NOT checked"));
  std::filesystem::remove_all(dir);
}

TEST(SynthReductionCli, RunMeasuresTheFastestProgramsOnThisHost) {
  const std::filesystem::path dir = tempPath("synth_reduction_run");
  std::filesystem::create_directories(dir);
  const std::string topology = (dir / "local.json").string();
  ASSERT_EQ(runCli("topology detect --no-calibrate --ranks 4 -o '" + topology + "'").exitCode, 0);
  const std::string json = (dir / "run.json").string();
  const CommandResult r = runCli("synth reduction --topology '" + topology +
                                 "' --axes 2,2 --reduce 0 --quiet --bytes 64K --run 2 "
                                 "--budget 0.02 --json '" +
                                 json + "'");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("measured on this host"));
  EXPECT_THAT(r.output, Not(HasSubstr("note: the predictions are for")));
  std::ifstream in(json);
  const nlohmann::json parsed = nlohmann::json::parse(in);
  int measured = 0;
  for (const auto& candidate : parsed.at("candidates")) {
    if (!candidate.contains("measured_seconds")) continue;
    ++measured;
    EXPECT_GT(candidate.at("measured_seconds").get<double>(), 0);
    EXPECT_TRUE(candidate.at("measured_correct").get<bool>());
  }
  // The 2 fastest and their placement's single AllReduce (one of them, or a third).
  EXPECT_GE(measured, 2);
  EXPECT_LE(measured, 3);
  std::filesystem::remove_all(dir);
}

TEST(SynthReductionCli, RunOnAModelledSystemSaysTheTimesAreThisHosts) {
  const CommandResult r = runCli(
      "synth reduction --topology dgx1 --axes 2,4 --reduce 0 --quiet --bytes 16K --run 1 "
      "--budget 0.01");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("note: the predictions are for dgx1"));
}

TEST(SynthReductionCli, UsageMistakesExitTwo) {
  CommandResult r = runCli("synth reduction --topology dgx1 --axes 2,4 --reduce 2");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_THAT(r.output, HasSubstr("--reduce 2 is not an axis of --axes"));
  r = runCli("synth reduction --topology dgx1 --axes 3,3 --reduce 0");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_THAT(r.output, HasSubstr("use 9 devices but the hierarchy"));
  r = runCli("synth reduction --topology no-such-topology --axes 8 --reduce 0");
  EXPECT_EQ(r.exitCode, 2);
  r = runCli("synth reduction --topology dgx1 --axes 8 --reduce 0 --instances 0");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_THAT(r.output, HasSubstr("--instances 0"));
  r = runCli("synth reduction --topology dgx1 --axes 8 --reduce 0 --threadblocks 0");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_THAT(r.output, HasSubstr("--threadblocks 0"));
  r = runCli("synth reduction --topology dgx1 --axes 8 --reduce 0 --threadblocks 4 --instances 2");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_THAT(r.output, HasSubstr("excludes"));
  r = runCli("synth reduction --topology dgx1 --axes 8 --reduce 0 --run 1 --budget 0");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_THAT(r.output, HasSubstr("--budget 0"));
  r = runCli("synth reduction --topology dgx1 --axes 8 --reduce 0 --lowering trees");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_THAT(r.output, HasSubstr("--lowering trees is not known"));
}

}  // namespace
