// `chorus run --transport tcp`: the ranks are forked processes joined by TCP over loopback, and
// every output element is checked, as with --transport shm.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "cli_run.h"

namespace chorus {
namespace {

using ::testing::HasSubstr;
using testing_support::CommandResult;
using testing_support::runCli;

// The count and the number of elements checked in a `chorus run` report line.
struct RunLine {
  std::size_t count = 0;
  std::size_t checked = 0;
};

RunLine parseRunLine(const std::string& output) {
  static const std::regex line(R"(count (\d+), .*: correct \((\d+) elements checked\))");
  std::smatch match;
  if (!std::regex_search(output, match, line)) return {};
  return {std::stoul(match[1].str()), std::stoul(match[2].str())};
}

TEST(CliRunTcp, AllReduceRingChecksEveryElement) {
  const CommandResult r = runCli("run allreduce.ring --ranks 3 --transport tcp --bytes 64K");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("on 3 ranks (tcp transport): 64 KiB per rank"));
  const RunLine run = parseRunLine(r.output);
  EXPECT_EQ(run.count, (64u << 10) / 4) << r.output;
  // Every rank's whole output (and, when the run checks them, its unchanged inputs).
  EXPECT_GE(run.checked, 3 * run.count) << r.output;
}

TEST(CliRunTcp, AllToAllChecksEveryElement) {
  const CommandResult r =
      runCli("run alltoall.direct --ranks 3 --transport tcp --bytes 64K --dtype int32");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("on 3 ranks (tcp transport)"));
  const RunLine run = parseRunLine(r.output);
  EXPECT_GT(run.count, 0u) << r.output;
  // Each rank's output holds one block of `count` from every rank.
  EXPECT_GE(run.checked, 3 * 3 * run.count) << r.output;
}

TEST(CliRunTcp, AnMscclFileRunsOverTcp) {
  const CommandResult r = runCli("run '" CHORUS_SHARED_DIR
                                 "/interop/msccl-xml/valid/allgather_ring_simple_4r.xml' "
                                 "--transport tcp --bytes 4K --iters 3");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("(tcp transport)"));
  EXPECT_THAT(r.output, HasSubstr("correct ("));
}

TEST(CliRunTcp, HelpNamesTcpAndNothingSaysNotYet) {
  const CommandResult r = runCli("run --help");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("tcp or ucx over loopback"));
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("not yet")));
}

}  // namespace
}  // namespace chorus
