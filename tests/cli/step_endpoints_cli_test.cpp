// `chorus verify`, `run` and `simulate` on a plan file whose two-sided step names its own peer and
// channel (only one-sided ops may): verify reports the step, run and simulate refuse the plan
// (exit 1) instead of running it on the threadblock's connection; and an MSCCL++ execution plan
// is read, verified, run on thread ranks and shm processes (tcp refuses its memory channel) and
// simulated.
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

TEST(StepEndpointsCli, MscclppPlanIsReadVerifiedRunAndSimulated) {
  TempDir dir;
  // Rank 0 puts its input into rank 1's output and signals; rank 1 waits, then copies its own.
  const std::string plan = dir.write("mscclpp.json", R"({
    "name": "gather_to_1", "collective": "custom_put", "protocol": "Simple", "inplace": false,
    "gpus": [
      {"id": 0, "input_chunks": 1, "output_chunks": 2, "scratch_chunks": 0,
       "channels": [{"channel_type": "memory", "connected_to": [1]}],
       "remote_buffers": [{"rank": 1, "type": "o", "access_channel_types": ["memory"]}],
       "threadblocks": [{"id": 0, "channels": [{"channel_type": "memory", "channel_ids": [0]}],
         "remote_buffer_refs": [{"access_channel_type": "memory", "remote_buffer_ids": [0]}],
         "ops": [{"name": "put", "channel_type": "memory",
                  "src_buff": [{"type": "i", "index": 0, "size": 1}],
                  "dst_buff": [{"buffer_id": 0, "index": 0, "size": 1}]},
                 {"name": "nop"},
                 {"name": "signal", "channel_type": "memory", "channel_ids": [0]}]}]},
      {"id": 1, "input_chunks": 1, "output_chunks": 2, "scratch_chunks": 0,
       "channels": [{"channel_type": "memory", "connected_to": [0]}],
       "remote_buffers": [],
       "threadblocks": [{"id": 0, "channels": [{"channel_type": "memory", "channel_ids": [0]}],
         "ops": [{"name": "wait", "channel_type": "memory", "channel_ids": [0]},
                 {"name": "nop"},
                 {"name": "copy", "src_buff": [{"type": "o", "index": 0, "size": 1}],
                  "dst_buff": [{"type": "o", "index": 1, "size": 1}]}]}]}],
    "num_threads_per_block": 1024})");
  const CommandResult verified = runCli("verify '" + plan + "'");
  EXPECT_EQ(verified.exitCode, 0) << verified.output;
  EXPECT_THAT(verified.output, HasSubstr("[gather_to_1]: ok: deadlock freedom (one launch: "
                                         "signals, waits, barriers, semaphores) and races "
                                         "checked on 2 ranks"));
  // Its collective is unknown to chorus, so the run is not checked; thread ranks run it.
  const CommandResult run = runCli("run '" + plan + "' --bytes 4K --transport thread");
  EXPECT_EQ(run.exitCode, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("ran, NOT checked"));
  const CommandResult shm = runCli("run '" + plan + "' --bytes 4K --transport shm");
  EXPECT_EQ(shm.exitCode, 0) << shm.output;
  EXPECT_THAT(shm.output, HasSubstr("ran, NOT checked"));
  const CommandResult tcp = runCli("run '" + plan + "' --bytes 4K --transport tcp");
  EXPECT_EQ(tcp.exitCode, 2) << tcp.output;  // an option error
  EXPECT_THAT(tcp.output, HasSubstr("reaches rank 1's memory through a memory channel"));
  const CommandResult simulate =
      runCli("simulate '" + plan + "' --topology dgx1 --bytes 64K --critical-path");
  EXPECT_EQ(simulate.exitCode, 0) << simulate.output;
  EXPECT_THAT(simulate.output, HasSubstr("one-sided plan: each step moves its whole chunks"));
  EXPECT_THAT(simulate.output, HasSubstr("signal from rank 0 on channel 0"));
}

TEST(StepEndpointsCli, CompiledPlanIsWrittenAsMscclppJsonVerifiedAndRun) {
  TempDir dir;
  const std::string plan = dir.file("ring.json");
  const CommandResult compiled =
      runCli("compile allreduce.ring --ranks 3 --format mscclpp-json -o '" + plan + "'");
  ASSERT_EQ(compiled.exitCode, 0) << compiled.output;
  const CommandResult verified = runCli("verify '" + plan + "'");
  EXPECT_EQ(verified.exitCode, 0) << verified.output;
  EXPECT_THAT(verified.output, HasSubstr("[allreduce.ring]: ok: postcondition, deadlock freedom"));
  const CommandResult run = runCli("run '" + plan + "' --bytes 4K --transport thread");
  EXPECT_EQ(run.exitCode, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("correct"));
  // LL: messages land as packets; the plan runs on rank processes too.
  const std::string llPlan = dir.file("ring_ll.json");
  const CommandResult ll = runCli(
      "compile allreduce.ring --ranks 3 --protocol ll --format "
      "mscclpp-json -o '" +
      llPlan + "'");
  ASSERT_EQ(ll.exitCode, 0) << ll.output;
  const CommandResult llVerified = runCli("verify '" + llPlan + "'");
  EXPECT_EQ(llVerified.exitCode, 0) << llVerified.output;
  const CommandResult llRun = runCli("run '" + llPlan + "' --bytes 4K --transport shm");
  EXPECT_EQ(llRun.exitCode, 0) << llRun.output;
  EXPECT_THAT(llRun.output, HasSubstr("correct"));
  const CommandResult unknown =
      runCli("compile allreduce.ring --ranks 3 --format mscclpp -o '" + plan + "'");
  EXPECT_NE(unknown.exitCode, 0) << unknown.output;
  EXPECT_THAT(unknown.output, HasSubstr("mscclpp-json"));
}

}  // namespace
