// `chorus verify`, `run` and `simulate` on a plan file whose two-sided step names its own peer and
// channel (only one-sided ops may): verify reports the step, run and simulate refuse the plan
// (exit 1) instead of running it on the threadblock's connection; and an MSCCL++ execution plan
// is recognised and refused as not supported yet (exit 2).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "cli_run.h"
#include "temp_dir.h"

namespace {

using chorus::testing_support::CommandResult;
using chorus::testing_support::runCli;
using chorus::testing_support::TempDir;
using ::testing::HasSubstr;

// allreduce.ring on 4 ranks as chorus JSON, its first send naming peer 3 and channel 1.
std::string writePlanWithStepPeer(const TempDir& dir) {
  const std::string plain = dir.file("ring.json");
  const CommandResult compiled =
      runCli("compile allreduce.ring --ranks 4 --format json -o '" + plain + "'");
  EXPECT_EQ(compiled.exitCode, 0) << compiled.output;
  const std::string edited = dir.file("ring_peer.json");
  const CommandResult sed = chorus::testing_support::runShell(
      "sed '0,/\"op\": \"send\"/s//\"op\": \"send\", \"peer\": 3, \"channel\": 1/' '" + plain +
      "' > '" + edited + "' && grep -c '\"peer\": 3' '" + edited + "'");
  EXPECT_EQ(sed.output, "1\n");
  return edited;
}

constexpr const char* kStepIssue =
    "rank 0 tb 0 step 0 (send) names peer 3 / channel 1; send moves data over its threadblock's "
    "connection (send peer 1, channel 0): remove the step's peer and channel (set both to -1)";

TEST(StepEndpointsCli, VerifyReportsTheStep) {
  TempDir dir;
  const CommandResult result = runCli("verify '" + writePlanWithStepPeer(dir) + "'");
  EXPECT_EQ(result.exitCode, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr(std::string("malformed: ") + kStepIssue));
}

TEST(StepEndpointsCli, RunAndSimulateRefuseThePlan) {
  TempDir dir;
  const std::string plan = writePlanWithStepPeer(dir);
  const CommandResult run = runCli("run '" + plan + "' --bytes 4K");
  EXPECT_EQ(run.exitCode, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr(std::string("chorus: error: plan 'allreduce.ring' cannot be "
                                                "run: ") +
                                    kStepIssue + "; 'chorus verify' reports every such step"));
  const CommandResult shm = runCli("run '" + plan + "' --bytes 4K --transport shm");
  EXPECT_EQ(shm.exitCode, 1) << shm.output;
  EXPECT_THAT(shm.output, HasSubstr("cannot be run: rank 0 tb 0 step 0 (send) names peer 3"));
  const CommandResult simulate = runCli("simulate '" + plan + "' --topology dgx1");
  EXPECT_EQ(simulate.exitCode, 1) << simulate.output;
  EXPECT_THAT(simulate.output,
              HasSubstr("plan 'allreduce.ring' cannot be simulated: rank 0 tb 0 step 0 (send)"));
}

TEST(StepEndpointsCli, WithoutTheStepsPeerAndChannelThePlanIsValid) {
  TempDir dir;
  const std::string plan = writePlanWithStepPeer(dir);
  const CommandResult result =
      chorus::testing_support::runShell("sed 's/\"peer\": 3, \"channel\": 1, //' '" + plan +
                                        "' | " + chorus::testing_support::cli() + " verify -");
  EXPECT_EQ(result.exitCode, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("[allreduce.ring]: ok"));
}

TEST(StepEndpointsCli, MscclppPlanIsRecognisedAndNotSupportedYet) {
  TempDir dir;
  const std::string plan = dir.write(
      "mscclpp.json",
      R"({"name": "allreduce", "collective": "allreduce", "protocol": "Simple", "inplace": true,
          "gpus": [{"id": 0, "threadblocks": [{"id": 0, "ops": [{"name": "put"}]}]}],
          "num_threads_per_block": 1024})");
  const CommandResult result = runCli("verify '" + plan + "'");
  EXPECT_EQ(result.exitCode, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("mscclpp.json: this is an MSCCL++ execution plan"));
  EXPECT_THAT(result.output, HasSubstr("chorus does not read those yet"));
}

}  // namespace
