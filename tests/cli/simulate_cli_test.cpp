// End-to-end tests of `chorus simulate` (path in CHORUS_CLI): the nccl-tests style sweep, JSON,
// traces and critical paths, --analytic against the event simulation, plan files, and usage
// mistakes exiting 2. Never asserts a measured time; only model outputs are compared.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.h"
#include "temp_dir.h"

namespace {

using ::testing::HasSubstr;

using chorus::testing_support::CommandResult;
using chorus::testing_support::runCli;

using chorus::testing_support::tempPath;

// The table's data rows: lines that are neither empty nor comments.
std::vector<std::string> dataRows(const std::string& output) {
  std::vector<std::string> rows;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') rows.push_back(line);
  return rows;
}

nlohmann::json parseJson(const std::string& text) {
  return nlohmann::json::parse(text);
}

std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(SimulateCli, HierarchicalSweepOnTwoDgxA100NodesPrintsElevenRows) {
  const CommandResult r =
      runCli("simulate allreduce.hierarchical --topology dgx-a100 --nodes 2 -b 1K -e 1G -f 4");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("allreduce.hierarchical"));
  EXPECT_THAT(r.output, HasSubstr("16 ranks"));
  EXPECT_THAT(r.output, HasSubstr("dgx-a100"));
  EXPECT_THAT(r.output, HasSubstr("busbw"));
  const std::vector<std::string> rows = dataRows(r.output);
  ASSERT_EQ(rows.size(), 11u) << r.output;
  EXPECT_THAT(rows.front(), HasSubstr("1024"));
  EXPECT_THAT(rows.back(), HasSubstr("1073741824"));
}

TEST(SimulateCli, JsonOnStandardOutputParses) {
  const CommandResult r = runCli("simulate allreduce.ring --topology dgx1 --bytes 1M --json");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const nlohmann::json document = parseJson(r.output);
  EXPECT_EQ(document["topology"], "dgx1");
  ASSERT_EQ(document["rows"].size(), 1u);
  const nlohmann::json& row = document["rows"][0];
  EXPECT_EQ(row["algorithm"], "allreduce.ring");
  EXPECT_EQ(row["ranks"], 8);
  EXPECT_EQ(row["size"], 1 << 20);
  EXPECT_GT(row["seconds"].get<double>(), 0);
  EXPECT_GT(row["busbw"].get<double>(), 0);
  for (const char* key : {"algbw", "tiles", "steps", "events", "sim_seconds", "links"})
    EXPECT_TRUE(row.contains(key)) << key;
  EXPECT_FALSE(row["links"].empty());
}

TEST(SimulateCli, SingleSizePrintsTheBusiestLinks) {
  const CommandResult r = runCli("simulate alltoall.pairwise --topology dgx2 --bytes 1M");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("busiest links"));
  EXPECT_EQ(dataRows(r.output).size(), 1u + 5u) << r.output;  // the row, then 5 links
}

TEST(SimulateCli, JsonFileHasEverySweepRowAndTheTableStillPrints) {
  const auto json = tempPath("sweep.json");
  const CommandResult r = runCli(
      "simulate allgather.ring --topology dgx-h100 -b 64K -e 4M -f 4 "
      "--json " +
      json.string());
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(dataRows(r.output).size(), 4u) << r.output;
  const nlohmann::json document = parseJson(readFile(json));
  ASSERT_EQ(document["rows"].size(), 4u);
  EXPECT_EQ(document["rows"][3]["size"], 4 << 20);
  std::filesystem::remove(json);
}

TEST(SimulateCli, UnknownTopologyExitsTwo) {
  const CommandResult r = runCli("simulate allreduce.ring --topology no-such-machine");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("no-such-machine"));
}

TEST(SimulateCli, MissingTopologyAndBadOptionsExitTwo) {
  EXPECT_EQ(runCli("simulate allreduce.ring").exitCode, 2);
  EXPECT_EQ(runCli("simulate allreduce.ring --topology dgx1 --bytes 1M -b 1K").exitCode, 2);
  EXPECT_EQ(runCli("simulate allreduce.ring --topology dgx1 -b 1K -e 1M --critical-path").exitCode,
            2);
  EXPECT_EQ(runCli("simulate no.such.algorithm --topology dgx1").exitCode, 2);
  EXPECT_EQ(runCli("simulate allreduce.ring --topology dgx1 --ranks 16").exitCode, 2);
}

double jsonSeconds(const std::string& arguments) {
  const CommandResult r = runCli("simulate " + arguments + " --json");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  if (r.exitCode != 0) return 0;
  return parseJson(r.output)["rows"][0]["seconds"].get<double>();
}

TEST(SimulateCli, AnalyticRingMatchesTheEventSimulation) {
  // The uniform preset is the closed forms' own machine: without tiling they agree exactly.
  const double analytic = jsonSeconds("allreduce.ring --topology uniform --bytes 16M --analytic");
  const double untiled = jsonSeconds("allreduce.ring --topology uniform --bytes 16M --no-tiling");
  const double tiled = jsonSeconds("allreduce.ring --topology uniform --bytes 16M");
  ASSERT_GT(analytic, 0);
  EXPECT_NEAR(untiled, analytic, 0.01 * analytic);
  EXPECT_NEAR(tiled, analytic, 0.5 * analytic);
  // On a real topology α, β and γ come from its routes: same order of magnitude.
  const double dgx = jsonSeconds("allreduce.ring --topology dgx-a100 --bytes 64M --analytic");
  const double dgxSim = jsonSeconds("allreduce.ring --topology dgx-a100 --bytes 64M");
  EXPECT_GT(dgxSim, dgx / 4);
  EXPECT_LT(dgxSim, dgx * 4);
}

TEST(SimulateCli, AnalyticScalesPastTheCompiledRankBound) {
  // --analytic evaluates the closed form without compiling the plan: 4096 ranks work although
  // a compiled plan stops at 1024, and the ring's 2(p-1) latency terms grow with p.
  const CommandResult r =
      runCli("simulate allreduce.ring --topology dgx-a100 --nodes 512 --bytes 1G --analytic");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("4096 ranks"));
  const double large =
      jsonSeconds("allreduce.ring --topology dgx-a100 --nodes 512 --bytes 1G --analytic");
  const double small =
      jsonSeconds("allreduce.ring --topology dgx-a100 --nodes 128 --bytes 1G --analytic");
  EXPECT_GT(large, small);
  EXPECT_EQ(runCli("simulate allreduce.ring --topology dgx-a100 --ranks 1 --analytic").exitCode, 2);
}

TEST(SimulateCli, AnalyticWithoutAFormExplainsAndExitsTwo) {
  const CommandResult r =
      runCli("simulate allreduce.hierarchical --topology dgx-a100 --nodes 2 --analytic");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("no closed form"));
  EXPECT_THAT(r.output, HasSubstr("allreduce.ring"));
}

TEST(SimulateCli, InteropXmlPlanSimulates) {
  const std::string plan = std::string(CHORUS_SHARED_DIR) +
                           "/interop/msccl-xml/valid/allreduce_ring_8r_1ch_1inst_simple.xml";
  ASSERT_TRUE(std::filesystem::exists(plan)) << plan;
  const CommandResult r = runCli("simulate '" + plan + "' --topology dgx1 --bytes 4M --links 0");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(dataRows(r.output).size(), 1u) << r.output;
  EXPECT_THAT(r.output, HasSubstr("8 ranks"));
}

TEST(SimulateCli, CriticalPathAndTrace) {
  const auto trace = tempPath("trace.json");
  const CommandResult r = runCli(
      "simulate allreduce.ring --topology dgx1 --bytes 1M "
      "--critical-path --links 0 --trace " +
      trace.string());
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("critical path"));
  EXPECT_THAT(r.output, HasSubstr("send"));
  const nlohmann::json events = parseJson(readFile(trace));
  EXPECT_FALSE(events.empty());
  std::filesystem::remove(trace);
}

}  // namespace
