// --msccl-max-steps: the MSCCL XML writers' steps-per-threadblock limit (MSCCL_MAX_NUM_STEPS)
// is 64 by default, as the MSCCL executor is built, and settable on every command that writes
// XML; the refusal says how to raise it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "cli_run.h"

namespace chorus {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing_support::cli;
using testing_support::CommandResult;
using testing_support::runCli;
using testing_support::runShell;

TEST(CliMscclMaxSteps, A64RankRingIsRefusedByDefaultNamingTheOption) {
  const CommandResult r = runCli("compile allreduce.ring --ranks 64 --format xml");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("exceed the MSCCL runtime limit of 64 steps per threadblock"));
  EXPECT_THAT(r.output, HasSubstr("--msccl-max-steps N"));
  EXPECT_THAT(r.output, HasSubstr("built with MSCCL_MAX_NUM_STEPS >= N"));
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("<algo")));
}

TEST(CliMscclMaxSteps, A64RankRingIsWrittenWithALargerLimitAndVerifies) {
  const CommandResult r = runShell(cli() +
                                   " compile allreduce.ring --ranks 64 --format xml "
                                   "--msccl-max-steps 256 | " +
                                   cli() + " verify -");
  EXPECT_EQ(r.exitCode, 0) << r.output.substr(0, 2000);
  const CommandResult xml =
      runCli("compile allreduce.ring --ranks 64 --format xml --msccl-max-steps 256");
  EXPECT_EQ(xml.exitCode, 0) << xml.output.substr(0, 2000);
  EXPECT_THAT(xml.output, StartsWith("<algo"));
  EXPECT_THAT(xml.output, HasSubstr("ngpus=\"64\""));
}

TEST(CliMscclMaxSteps, TheLimitIsCheckedAgainstTheValueGiven) {
  // 64 ranks of ring AllReduce need more than 100 steps on some threadblock.
  const CommandResult r =
      runCli("compile allreduce.ring --ranks 64 --format xml --msccl-max-steps 100");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("limit of 100 steps per threadblock"));
}

TEST(CliMscclMaxSteps, OtherFormatsIgnoreIt) {
  const CommandResult r = runCli("compile allreduce.ring --ranks 64 --format json");
  EXPECT_EQ(r.exitCode, 0) << r.output.substr(0, 2000);
}

TEST(CliMscclMaxSteps, ANonPositiveLimitIsAUsageError) {
  for (const char* value : {"0", "-3"}) {
    const CommandResult r =
        runCli(std::string("compile allreduce.ring --ranks 4 --msccl-max-steps ") + value);
    EXPECT_EQ(r.exitCode, 2) << value << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr("--msccl-max-steps")) << value;
  }
}

TEST(CliMscclMaxSteps, EveryXmlWriterTakesIt) {
  for (const char* command : {"compile", "synth trees", "synth reduction"}) {
    const CommandResult r = runCli(std::string(command) + " --help");
    EXPECT_EQ(r.exitCode, 0) << command << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr("--msccl-max-steps")) << command;
  }
}

}  // namespace
}  // namespace chorus
