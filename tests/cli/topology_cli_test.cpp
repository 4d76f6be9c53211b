// `chorus topology list|show|detect` end to end: the preset table, a readable summary with
// the route matrix, --json that `show FILE` reads back, unknown names (exit 2 with the list),
// and detect writing a loadable local topology (without and with calibration).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_run.h"
#include "topology/presets.h"
#include "topology/topology_json.h"

namespace {

using chorus::testing_support::CommandResult;
using chorus::testing_support::runCli;
using chorus::testing_support::runShell;
using ::testing::HasSubstr;
using ::testing::Not;

class TopologyCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("chorus-topology-cli-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // `chorus ARGUMENTS` with CHORUS_TOPOLOGY_LOCAL inside the test's directory.
  CommandResult runWithLocal(const std::string& arguments) const {
    return runShell("CHORUS_TOPOLOGY_LOCAL='" + path("cache/local.json") + "' " +
                    chorus::testing_support::cli() + " " + arguments);
  }
  std::filesystem::path dir_;
};

TEST_F(TopologyCliTest, ListShowsEveryPreset) {
  const CommandResult result = runWithLocal("topology list");
  ASSERT_EQ(result.exitCode, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("NAME"));
  for (const chorus::topology::PresetInfo& info : chorus::topology::presets())
    EXPECT_THAT(result.output, HasSubstr(info.name));
  EXPECT_THAT(result.output, HasSubstr("not measured yet"));
}

TEST_F(TopologyCliTest, ShowDescribesDgx1) {
  const CommandResult result = runCli("topology show dgx1");
  ASSERT_EQ(result.exitCode, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("8 devices (gpu0..gpu7)"));
  EXPECT_THAT(result.output, HasSubstr("nvlink gpu0-gpu3 x2"));
  EXPECT_THAT(result.output, HasSubstr("nic0         7.50 GB/s"));
  EXPECT_THAT(result.output, HasSubstr("socket         {0 1 2 3} {4 5 6 7}"));
  EXPECT_THAT(result.output, HasSubstr("route bandwidth inside a node"));
  EXPECT_THAT(result.output, HasSubstr("  gpu0         -   22.5   22.5   45.0   45.0    6.0"));

  const CommandResult twoNodes = runCli("topology show dgx-1 --nodes 2");
  ASSERT_EQ(twoNodes.exitCode, 0) << twoNodes.output;
  EXPECT_THAT(twoNodes.output,
              HasSubstr("across nodes: rank 0 -> rank 8: 7.50 GB/s, 4 us via node0 nic0 tx, "
                        "node1 nic0 rx"));
}

TEST_F(TopologyCliTest, JsonRoundTripsThroughAFile) {
  const CommandResult json = runCli("topology show summit --nodes 2 --json");
  ASSERT_EQ(json.exitCode, 0) << json.output;
  EXPECT_THAT(json.output, HasSubstr("\"format\": \"chorus-topology/1\""));
  const std::string file = path("summit.json");
  std::ofstream(file) << json.output;
  const CommandResult shown = runCli("topology show " + file);
  ASSERT_EQ(shown.exitCode, 0) << shown.output;
  EXPECT_THAT(shown.output, HasSubstr("2 nodes of \"Summit (IBM AC922, 6 GPUs)\": 12 ranks"));
  const CommandResult again = runCli("topology show " + file + " --json");
  ASSERT_EQ(again.exitCode, 0) << again.output;
  EXPECT_EQ(again.output, json.output);
}

TEST_F(TopologyCliTest, UnknownNamesAndBadFilesExitWithUsage) {
  const CommandResult unknown = runCli("topology show dgx9");
  EXPECT_EQ(unknown.exitCode, 2) << unknown.output;
  EXPECT_THAT(unknown.output, HasSubstr("unknown topology 'dgx9'"));
  EXPECT_THAT(unknown.output, HasSubstr("dgx1, dgx2, dgx-a100, dgx-h100, hgx-a100-16"));

  const std::string bad = path("bad.json");
  std::ofstream(bad) << R"({"format": "chorus-topology/1", "name": "t", "node": {"devices": 2}})";
  const CommandResult parse = runCli("topology show " + bad);
  EXPECT_EQ(parse.exitCode, 2) << parse.output;
  EXPECT_THAT(parse.output, HasSubstr("node.links: device 'gpu0' cannot reach device 'gpu1'"));

  const CommandResult nodes = runCli("topology show uniform --nodes 2");
  EXPECT_EQ(nodes.exitCode, 2) << nodes.output;
  EXPECT_THAT(nodes.output, HasSubstr("has no NIC"));

  const CommandResult local = runWithLocal("topology show local");
  EXPECT_EQ(local.exitCode, 2) << local.output;
  EXPECT_THAT(local.output, HasSubstr("run `chorus topology detect`"));
}

TEST_F(TopologyCliTest, DetectWithoutCalibrationWritesALoadableFile) {
  const std::string file = path("out/local.json");
  const CommandResult result = runCli("topology detect --no-calibrate --ranks 3 -o " + file);
  ASSERT_EQ(result.exitCode, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("host: "));
  EXPECT_THAT(result.output, HasSubstr("skipped (--no-calibrate)"));
  EXPECT_THAT(result.output, HasSubstr("message latency (alpha)"));
  const chorus::topology::Topology local = chorus::topology::readTopologyFile(file);
  EXPECT_EQ(local.name, "local");
  EXPECT_EQ(local.node.devices, 3);
  EXPECT_EQ(local.node.device.engines, 1);

  // The default path comes from CHORUS_TOPOLOGY_LOCAL; `local` then names it everywhere.
  const CommandResult cached = runWithLocal("topology detect --no-calibrate --ranks 2");
  ASSERT_EQ(cached.exitCode, 0) << cached.output;
  EXPECT_TRUE(std::filesystem::exists(path("cache/local.json")));
  const CommandResult shown = runWithLocal("topology show local");
  ASSERT_EQ(shown.exitCode, 0) << shown.output;
  EXPECT_THAT(shown.output, HasSubstr("2 devices (rank0..rank1)"));
  EXPECT_THAT(runWithLocal("topology list").output, Not(HasSubstr("not measured yet")));
}

TEST_F(TopologyCliTest, DetectCalibratesTheShmTransport) {
  const std::string file = path("calibrated.json");
  // --quick runs every calibration step once: the same code and output, at a cost that stays
  // small under the sanitizers (the full effort is only more repeats of the same sweeps).
  const CommandResult result = runCli("topology detect --quick --ranks 2 --json -o " + file);
  ASSERT_EQ(result.exitCode, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("allreduce.ring, 2 ranks"));
  EXPECT_THAT(result.output, HasSubstr("broadcast.chain pipeline 8 / 64"));
  const chorus::topology::Topology local = chorus::topology::readTopologyFile(file);
  EXPECT_GT(local.node.device.copyRate, 0);
  EXPECT_GT(local.node.device.reduceRate, 0);
  EXPECT_GT(local.node.vertices.back().bandwidth, 0);
  EXPECT_GE(local.node.device.messageLatency, 0);
  EXPECT_GE(local.node.device.stepOverhead, 0);
  // Rate curves fitted to allgather.ring / reducescatter.ring, 64 KiB to 64 MiB by 4x.
  EXPECT_THAT(result.output, HasSubstr("rates fitted to allgather.ring / reducescatter.ring"));
  ASSERT_EQ(local.node.device.copyCurve.size(), 6u);
  ASSERT_EQ(local.node.device.reduceCurve.size(), 6u);
  for (std::size_t i = 1; i < 6; ++i)
    EXPECT_GT(local.node.device.copyCurve[i].workingSet,
              local.node.device.copyCurve[i - 1].workingSet);
  // The wake latency comes from 2 x cores ranks sharing the cores.
  EXPECT_THAT(result.output, HasSubstr("wake latency"));
  EXPECT_GE(local.node.wakeLatency, 0);
  // --json prints the document on stdout as well.
  EXPECT_THAT(result.output, HasSubstr("\"format\": \"chorus-topology/1\""));
}

}  // namespace
