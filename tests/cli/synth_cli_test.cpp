// End-to-end tests of `chorus synth trees` (path in CHORUS_CLI): the DGX-1 trees as text and
// JSON, a user matrix, --emit writing MSCCL XML that `chorus run` executes with exact results,
// and usage mistakes (bad matrix files, missing source) exiting 2 with the fault named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "cli_run.h"
#include "runtime/plan_provider.h"
#include "selection/plan_files.h"
#include "temp_dir.h"

namespace {

using ::testing::HasSubstr;

using chorus::testing_support::CommandResult;
using chorus::testing_support::runCli;

using chorus::testing_support::tempPath;

std::filesystem::path writeFile(const std::string& name, const std::string& text) {
  const std::filesystem::path path = tempPath(name);
  std::ofstream(path) << text;
  return path;
}

int countMatches(const std::string& text, const std::regex& pattern) {
  return static_cast<int>(std::distance(std::sregex_iterator(text.begin(), text.end(), pattern),
                                        std::sregex_iterator()));
}

TEST(SynthTreesCli, Dgx1PrintsEightTreesWeightsAndUsage) {
  const CommandResult r = runCli("synth trees --topology dgx1 --strategy best");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(countMatches(r.output, std::regex("\ntree [0-7]: root [0-7], weight [0-9.]+")), 8)
      << r.output;
  EXPECT_THAT(r.output, HasSubstr("strategy best"));
  EXPECT_THAT(r.output, HasSubstr("PCIe links (1) become 0"));
  EXPECT_THAT(r.output, HasSubstr("level 3:"));
  EXPECT_THAT(r.output, HasSubstr("link usage"));
  EXPECT_THAT(r.output, HasSubstr("most-used link: "));
  EXPECT_THAT(r.output, HasSubstr("strategies: mxnet total weight"));
}

// The default strategy is MXNet's (MXNet trees as published): no --strategy prints what
// `--strategy mxnet` prints, and the help says so.
TEST(SynthTreesCli, DefaultStrategyIsMxnet) {
  const CommandResult byDefault = runCli("synth trees --topology dgx1");
  ASSERT_EQ(byDefault.exitCode, 0) << byDefault.output;
  EXPECT_THAT(byDefault.output, HasSubstr("strategy mxnet,"));
  const CommandResult mxnet = runCli("synth trees --topology dgx1 --strategy mxnet");
  ASSERT_EQ(mxnet.exitCode, 0) << mxnet.output;
  EXPECT_EQ(byDefault.output, mxnet.output);
  const CommandResult json = runCli("synth trees --topology dgx1 --json");
  ASSERT_EQ(json.exitCode, 0) << json.output;
  EXPECT_EQ(nlohmann::json::parse(json.output)["strategy"], "mxnet");
  const CommandResult help = runCli("synth trees --help");
  EXPECT_THAT(help.output, HasSubstr("mxnet (default)"));
}

// `--strategy mxnet` on the DGX-1 prints weights 19, 19, 20, 16, 19, 15, 20, 16: a regression pin
// of chorus's output (docs/synthesis.md "DGX-1 results"), not figures from MXNet.
TEST(SynthTreesCli, Dgx1MxnetStrategyTreeWeightsArePinned) {
  const CommandResult r = runCli("synth trees --topology dgx1 --strategy mxnet");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("strategy mxnet,"));
  const std::regex line("\ntree ([0-7]): root [0-7], weight ([0-9.]+)");
  std::vector<std::string> weights;
  for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), line);
       it != std::sregex_iterator(); ++it)
    weights.push_back((*it)[2]);
  EXPECT_EQ(weights, (std::vector<std::string>{"19", "19", "20", "16", "19", "15", "20", "16"}))
      << r.output;
  EXPECT_THAT(r.output, HasSubstr("total weight (sum of link weights, no penalties): 144"));
  // MXNet's switch by array size, as the text report states it.
  EXPECT_THAT(r.output,
              HasSubstr("tree mode by array size (MXNET_KVSTORE_TREE_ARRAY_BOUND = 10000000 "
                        "elements): single-tree (tree 0) below 10000001 elements, multi-tree "
                        "(8 trees) from 10000001"));
}

// The emitted pair carries the switch as plan size ranges, so plan selection (the match
// CHORUS_ALGO_DIR applies) runs tree 0 up to 10^7 float32 elements and the 8 trees above.
TEST(SynthTreesCli, EmittedProgramsSwitchByArraySizeInSelection) {
  const std::filesystem::path dir = tempPath("emit_switch");
  const CommandResult r =
      runCli("synth trees --topology dgx1 --strategy mxnet --json --emit '" + dir.string() + "'");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const nlohmann::json document = nlohmann::json::parse(r.output);
  const std::uint64_t edge = std::uint64_t{4} * 10'000'001;
  EXPECT_EQ(document["tree_mode"]["array_bound"], 10'000'000);
  EXPECT_EQ(document["tree_mode"]["first_multi_tree_elements"], 10'000'001);
  EXPECT_EQ(document["tree_mode"]["single_tree_bytes"], nlohmann::json({0, edge}));
  EXPECT_EQ(document["tree_mode"]["multi_tree_bytes"], nlohmann::json({edge, 0}));
  const auto single = chorus::selection::readPlanFile((dir / "allreduce_synth_tree.xml").string());
  const auto multi =
      chorus::selection::readPlanFile((dir / "allreduce_synth_multitree.xml").string());
  ASSERT_EQ(single.size(), 1u);
  ASSERT_EQ(multi.size(), 1u);
  auto request = [](std::uint64_t elements) {
    chorus::runtime::PlanRequest plan;
    plan.collective = chorus::ir::CollectiveKind::allreduce;
    plan.nranks = 8;
    plan.inPlace = true;
    plan.count = elements;
    plan.bytes = 4 * elements;
    return plan;
  };
  for (const std::uint64_t elements :
       {std::uint64_t{1}, std::uint64_t{9'999'999}, std::uint64_t{10'000'000}}) {
    EXPECT_EQ(chorus::selection::planMismatch(*single.front().algorithm, request(elements)), "")
        << elements;
    EXPECT_NE(chorus::selection::planMismatch(*multi.front().algorithm, request(elements)), "")
        << elements;
  }
  for (const std::uint64_t elements : {std::uint64_t{10'000'001}, std::uint64_t{100'000'000}}) {
    EXPECT_NE(chorus::selection::planMismatch(*single.front().algorithm, request(elements)), "")
        << elements;
    EXPECT_EQ(chorus::selection::planMismatch(*multi.front().algorithm, request(elements)), "")
        << elements;
  }
  // A smaller --array-bound moves the edge.
  const CommandResult small =
      runCli("synth trees --topology dgx1 --strategy mxnet --json --array-bound 1000");
  ASSERT_EQ(small.exitCode, 0) << small.output;
  EXPECT_EQ(nlohmann::json::parse(small.output)["tree_mode"]["multi_tree_bytes"][0], 4 * 1001);
  std::filesystem::remove_all(dir);
}

TEST(SynthTreesCli, JsonHasTreesAndLinkUsage) {
  const CommandResult r = runCli("synth trees --topology dgx1 --strategy mxnet --json");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const nlohmann::json document = nlohmann::json::parse(r.output);
  ASSERT_EQ(document["trees"].size(), 8u);
  double total = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    const nlohmann::json& tree = document["trees"][i];
    EXPECT_EQ(tree["root"], static_cast<int>(i));
    EXPECT_EQ(tree["topo"].size(), 15u);
    EXPECT_EQ(tree["topo"][0], static_cast<int>(i));
    EXPECT_GT(tree["weight"].get<double>(), 0);
    total += tree["weight"].get<double>();
  }
  EXPECT_DOUBLE_EQ(document["total_weight"].get<double>(), total);
  ASSERT_EQ(document["link_usage"].size(), 8u);
  int maxUsage = 0;
  for (const nlohmann::json& row : document["link_usage"]) {
    ASSERT_EQ(row.size(), 8u);
    for (const nlohmann::json& count : row)
      maxUsage = std::max(maxUsage, count.get<int>());
  }
  EXPECT_EQ(document["most_used_link"]["count"], maxUsage);
  EXPECT_EQ(document["strategy"], "mxnet");
  EXPECT_LE(document["strategies"]["best"]["max_link_usage"].get<int>(),
            document["strategies"]["mxnet"]["max_link_usage"].get<int>());
  EXPECT_GE(document["strategies"]["best"]["total_weight"].get<double>(),
            document["strategies"]["mxnet"]["total_weight"].get<double>());
}

TEST(SynthTreesCli, UserMatrixFile) {
  const std::filesystem::path matrix =
      writeFile("ring4.txt", "# a 4-GPU ring\n0 2 0 2\n2 0 2 0\n0 2 0 2\n2 0 2 0\n");
  const CommandResult r =
      runCli("synth trees --matrix '" + matrix.string() + "' --strategy best --json");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const nlohmann::json document = nlohmann::json::parse(r.output);
  ASSERT_EQ(document["trees"].size(), 4u);
  for (const nlohmann::json& tree : document["trees"]) {
    EXPECT_EQ(tree["topo"].size(), 7u);
    EXPECT_EQ(tree["weight"].get<double>(), 6);  // three ring links of weight 2
  }
  std::filesystem::remove(matrix);
}

TEST(SynthTreesCli, MatrixFromStandardInput) {
  const CommandResult r = chorus::testing_support::runShell(
      "printf '[[0, 3, 1], [3, 0, 2], [1, 2, 0]]' | " + chorus::testing_support::cli() +
      " synth trees --matrix - --strategy mxnet");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(countMatches(r.output, std::regex("\ntree [0-2]: root [0-2]")), 3) << r.output;
  EXPECT_THAT(r.output, HasSubstr("<stdin>"));
}

TEST(SynthTreesCli, EmittedProgramsRunWithExactResults) {
  const std::filesystem::path dir = tempPath("emit");
  const CommandResult r = runCli("synth trees --topology dgx1 --strategy best --emit '" +
                                 dir.string() + "' --pipeline 2");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  for (const char* file : {"allreduce_synth_tree.xml", "allreduce_synth_multitree.xml"}) {
    const std::filesystem::path path = dir / file;
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    EXPECT_THAT(r.output, HasSubstr("wrote " + path.string()));
    const CommandResult verify = runCli("verify '" + path.string() + "'");
    EXPECT_EQ(verify.exitCode, 0) << verify.output;
    const CommandResult run = runCli("run '" + path.string() + "' --bytes 100000 --dtype int32");
    EXPECT_EQ(run.exitCode, 0) << run.output;
    EXPECT_THAT(run.output, HasSubstr("on 8 ranks"));
    EXPECT_THAT(run.output, HasSubstr("correct"));
    EXPECT_THAT(run.output, ::testing::Not(HasSubstr("wrong")));
  }
  std::filesystem::remove_all(dir);
}

TEST(SynthTreesCli, BadMatrixFilesAreUsageErrors) {
  const std::filesystem::path asymmetric = writeFile("asym.txt", "0 2 1\n3 0 1\n1 1 0\n");
  const CommandResult r1 = runCli("synth trees --matrix '" + asymmetric.string() + "'");
  EXPECT_EQ(r1.exitCode, 2) << r1.output;
  EXPECT_THAT(r1.output, HasSubstr("row 0, column 1 is 2 but row 1, column 0 is 3"));
  EXPECT_THAT(r1.output, HasSubstr("symmetric"));

  const std::filesystem::path word = writeFile("word.txt", "0 2\n2 two\n");
  const CommandResult r2 = runCli("synth trees --matrix '" + word.string() + "'");
  EXPECT_EQ(r2.exitCode, 2) << r2.output;
  EXPECT_THAT(r2.output, HasSubstr(":2: row 1, column 1 is 'two', not a number"));

  const std::filesystem::path split =
      writeFile("split.txt", "0 2 0 0\n2 0 0 0\n0 0 0 3\n0 0 3 0\n");
  const CommandResult r3 = runCli("synth trees --matrix '" + split.string() + "'");
  EXPECT_EQ(r3.exitCode, 2) << r3.output;
  EXPECT_THAT(r3.output, HasSubstr("cannot be reached"));

  const CommandResult missing = runCli("synth trees --matrix /nonexistent/chorus_matrix.txt");
  EXPECT_EQ(missing.exitCode, 2) << missing.output;
  EXPECT_THAT(missing.output, HasSubstr("chorus_matrix.txt"));

  for (const auto& path : {asymmetric, word, split})
    std::filesystem::remove(path);
}

TEST(SynthTreesCli, OptionMistakesAreUsageErrors) {
  const CommandResult none = runCli("synth trees");
  EXPECT_EQ(none.exitCode, 2) << none.output;
  EXPECT_THAT(none.output, HasSubstr("--topology"));
  const CommandResult both = runCli("synth trees --topology dgx1 --matrix x.txt");
  EXPECT_EQ(both.exitCode, 2) << both.output;
  const CommandResult penalty = runCli("synth trees --topology dgx1 --penalty 1.5");
  EXPECT_EQ(penalty.exitCode, 2) << penalty.output;
  EXPECT_THAT(penalty.output, HasSubstr("(0, 1]"));
  const CommandResult strategy = runCli("synth trees --topology dgx1 --strategy fast");
  EXPECT_EQ(strategy.exitCode, 2) << strategy.output;
  const CommandResult group = runCli("synth");
  EXPECT_EQ(group.exitCode, 2) << group.output;
}

}  // namespace
