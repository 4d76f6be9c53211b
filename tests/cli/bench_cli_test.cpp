// End-to-end tests of `chorus bench` (path in CHORUS_CLI): every collective runs and checks
// clean on both transports, --json/--plot write what they promise, usage mistakes exit 2.
// Tiny sweeps with fixed iteration counts; never asserts a time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli_run.h"
#include "perf/record_json.h"
#include "temp_dir.h"

namespace {

using ::testing::HasSubstr;

using chorus::testing_support::CommandResult;
using chorus::testing_support::runCli;

using chorus::testing_support::tempPath;

constexpr const char* kQuick = "-b 8 -e 4K -f 8 --iters 3 --warmup 1";

class BenchEveryCollective : public ::testing::TestWithParam<std::string> {};

TEST_P(BenchEveryCollective, ChecksCleanOnThreadsAndProcesses) {
  for (const char* transport : {"thread", "shm"}) {
    const auto json = tempPath(GetParam() + transport + ".json");
    const CommandResult bench = runCli("bench " + GetParam() + " --ranks 3 --root 2 --transport " +
                                       transport + " " + kQuick + " --json " + json.string());
    ASSERT_EQ(bench.exitCode, 0) << bench.output;
    EXPECT_THAT(bench.output, HasSubstr("# Wrong elements       : 0 OK"));
    EXPECT_THAT(bench.output, HasSubstr("busbw"));
    const auto records = chorus::perf::readRecordsFile(json.string());
    ASSERT_EQ(records.size(), 8u) << bench.output;  // 8, 64, 512, 4096 B x 2 variants
    for (const auto& record : records) {
      EXPECT_EQ(record.library, "chorus");
      EXPECT_EQ(record.collective, GetParam());
      EXPECT_EQ(record.ranks, 3);
      EXPECT_EQ(record.transport, transport);
      EXPECT_TRUE(record.supported) << record.note;
      EXPECT_EQ(record.wrong, 0);
      EXPECT_FALSE(record.algorithm.empty());
      EXPECT_EQ(record.iterations, 3);
    }
    std::filesystem::remove(json);
  }
}

INSTANTIATE_TEST_SUITE_P(Collectives, BenchEveryCollective,
                         ::testing::Values("allreduce", "allgather", "reducescatter", "alltoall",
                                           "broadcast", "reduce"));

TEST(BenchCli, WritesAnSvgPlot) {
  const auto svg = tempPath("plot.svg");
  const CommandResult result = runCli(std::string("bench allreduce --ranks 2 ") + kQuick +
                                      " --dtype bfloat16 --op max --plot " + svg.string());
  ASSERT_EQ(result.exitCode, 0) << result.output;
  std::ifstream in(svg);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("<svg"));
  EXPECT_THAT(text.str(), HasSubstr("chorus out-of-place"));
  EXPECT_THAT(text.str(), HasSubstr("</svg>"));
  std::filesystem::remove(svg);
}

TEST(BenchCli, BuffersOffTheirPageStillCheckClean) {
  // Where malloc puts large blocks (16), and one float32 element off a page (4).
  for (const char* offset : {"16", "4"}) {
    for (const char* collective : {"allreduce", "allgather", "reducescatter"}) {
      const CommandResult result =
          runCli(std::string("bench ") + collective + " --ranks 2 --transport shm " + kQuick +
                 " --buffer-offset " + offset);
      ASSERT_EQ(result.exitCode, 0) << result.output;
      EXPECT_THAT(result.output, HasSubstr("# Wrong elements       : 0 OK"));
      EXPECT_THAT(result.output, HasSubstr(std::string("buffers ") + offset + " B past a page"));
    }
  }
  const CommandResult tooFar = runCli("bench allreduce --ranks 2 --buffer-offset 4096");
  EXPECT_EQ(tooFar.exitCode, 2);
  EXPECT_THAT(tooFar.output, HasSubstr("--buffer-offset"));
  const CommandResult unaligned = runCli("bench allreduce --ranks 2 --buffer-offset 3");
  EXPECT_EQ(unaligned.exitCode, 2);
  EXPECT_THAT(unaligned.output, HasSubstr("not a multiple of the 4-byte float32 element"));
}

TEST(BenchCli, RegisteredBuffersCheckCleanAcrossProcesses) {
  // Forked ranks over shm read each other's registered buffers through their own mappings;
  // messages of 64 KiB and more go by reference, so the larger sizes take that path.
  for (const char* collective : {"allreduce", "allgather", "reducescatter", "alltoall"}) {
    const CommandResult result =
        runCli(std::string("bench ") + collective +
               " --ranks 3 --transport shm -b 4K -e 2M -f 8 --iters 3 --warmup 1 --registered"
               " --buffer-offset 4");
    ASSERT_EQ(result.exitCode, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("# Wrong elements       : 0 OK"));
    EXPECT_THAT(result.output, HasSubstr("registered buffers (chorus::memAlloc)"));
  }
}

// --device cuda needs a GPU (and chorus built with CUDA): without one it fails with a message
// that says so, never a crash; the run itself is checked by scripts/gpu_check.sh.
TEST(BenchCli, DeviceCudaWithoutAGpuSaysWhatIsMissing) {
  if (::access("/dev/nvidiactl", F_OK) == 0) GTEST_SKIP() << "a GPU driver is present";
  const CommandResult result =
      runCli("bench allreduce --ranks 2 --device cuda " + std::string(kQuick));
  EXPECT_NE(result.exitCode, 0);
  EXPECT_THAT(result.output, ::testing::AnyOf(HasSubstr("found no CUDA GPU visible"),
                                              HasSubstr("needs chorus built with CUDA")));
  const CommandResult both = runCli("bench allreduce --ranks 2 --device cuda --registered");
  EXPECT_EQ(both.exitCode, 2);
  EXPECT_THAT(both.output, ::testing::AnyOf(HasSubstr("leave --registered out"),
                                            HasSubstr("needs chorus built with CUDA")));
  EXPECT_EQ(runCli("bench allreduce --ranks 2 --device gpu").exitCode, 2);
}

TEST(BenchCli, UsageMistakesExitTwoAndSayWhatToDo) {
  CommandResult result = runCli("bench gather --ranks 2");
  EXPECT_EQ(result.exitCode, 2);
  EXPECT_THAT(result.output, HasSubstr("use allreduce, allgather"));
  result = runCli("bench allreduce --ranks 2 -b 8 -e 1K -f 1");
  EXPECT_EQ(result.exitCode, 2);
  EXPECT_THAT(result.output, HasSubstr("factor of at least 2"));
  result = runCli("bench allreduce --ranks 2 --transport carrier-pigeon");
  EXPECT_EQ(result.exitCode, 2);
  EXPECT_THAT(result.output, HasSubstr("use thread"));
  result = runCli("bench broadcast --ranks 2 --root 5");
  EXPECT_EQ(result.exitCode, 2);
  EXPECT_THAT(result.output, HasSubstr("--root 5"));
  result = runCli("bench allreduce --ranks 2 --algo no-such-algorithm -b 8 -e 8");
  EXPECT_EQ(result.exitCode, 2);
  EXPECT_THAT(result.output, HasSubstr("--algo no-such-algorithm"));
}

}  // namespace
