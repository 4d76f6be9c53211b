// `chorus verify`, `chorus run` and `chorus bench` on an out-of-place plan that writes its input
// (msccl-tools' ReduceScatter ring reduces inside the caller's send buffer): verify and run fail
// with exit 1 and say which rank, threadblock, step and input chunk, or which input element
// changed; bench's communicator refuses to load the plan.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "cli_run.h"

namespace {

using chorus::testing_support::CommandResult;
using chorus::testing_support::runCli;
using ::testing::HasSubstr;

const std::string kPlan =
    "'" CHORUS_SHARED_DIR "/interop/msccl-xml/invalid/reducescatter_ring_outofplace_4r.xml'";

TEST(WritesInputCli, VerifyNamesRankThreadblockStepAndChunk) {
  const CommandResult result = runCli("verify " + kPlan);
  EXPECT_EQ(result.exitCode, 1) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("writes-input: rank 0 tb 0 step 0 (recvReduceCopy from rank 3 with "
                        "input[0] into input[0]) writes input[0] of rank 0, but this "
                        "reducescatter is out-of-place"));
  EXPECT_THAT(result.output, HasSubstr("write into output or scratch instead"));
}

TEST(WritesInputCli, RunFailsOnTheChangedInput) {
  const CommandResult result = runCli("run " + kPlan + " --bytes 4K");
  EXPECT_EQ(result.exitCode, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("input["));
  EXPECT_THAT(result.output, HasSubstr("must leave its input unchanged"));
}

TEST(WritesInputCli, TheCommunicatorRefusesThePlan) {
  // `chorus bench --algo FILE` loads the plan as CHORUS_ALGO does: it is verified and refused.
  const CommandResult result =
      runCli("bench reducescatter --algo " + kPlan + " --ranks 4 -b 4K -e 4K --iters 2");
  EXPECT_EQ(result.exitCode, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("is not a valid reducescatter plan"));
  EXPECT_THAT(result.output, HasSubstr("writes-input: rank 0 tb 0 step 0"));
}

}  // namespace
