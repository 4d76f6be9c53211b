// `chorus launch` end to end (the CLI at CHORUS_CLI): the rank environment, exit-code
// propagation, reports of failed ranks, killing stragglers after the grace period, SIGTERM
// forwarding, --timeout, usage errors, and a real rendezvous of launched ranks (this test
// binary re-run as the ranks) through the launcher's TCP store.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "transport/bootstrap_env.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Clock = std::chrono::steady_clock;

struct CommandResult {
  int exitCode = -1;
  std::string output;  // stdout and stderr together
  double seconds = 0;
};

// Runs `command` with /bin/sh, capturing stdout+stderr.
CommandResult runShell(const std::string& command) {
  CommandResult result;
  const auto start = Clock::now();
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

// `chorus launch ARGS`, where ARGS is already shell-quoted.
CommandResult launch(const std::string& arguments) {
  return runShell(fmt::format("'{}' launch {}", CHORUS_CLI, arguments));
}

TEST(LaunchTest, SetsTheRankEnvironmentForEveryRank) {
  const CommandResult result = launch(
      "-n 3 -- sh -c 'echo \"rank=$CHORUS_RANK size=$CHORUS_WORLD_SIZE local=$CHORUS_LOCAL_RANK "
      "store=$CHORUS_STORE job=$CHORUS_JOB_ID\"'");
  ASSERT_EQ(result.exitCode, 0) << result.output;
  const std::regex line(
      R"(rank=(\d+) size=3 local=(\d+) store=(tcp://127\.0\.0\.1:\d+) job=(\S+))");
  std::set<std::string> ranks, stores, jobs;
  for (auto it = std::sregex_iterator(result.output.begin(), result.output.end(), line);
       it != std::sregex_iterator(); ++it) {
    EXPECT_EQ((*it)[1], (*it)[2]) << "local rank == rank on one host";
    ranks.insert((*it)[1]);
    stores.insert((*it)[3]);
    jobs.insert((*it)[4]);
  }
  EXPECT_EQ(ranks, (std::set<std::string>{"0", "1", "2"})) << result.output;
  EXPECT_EQ(stores.size(), 1u) << result.output;
  ASSERT_EQ(jobs.size(), 1u) << result.output;
  const CommandResult again = launch("-n 1 sh -c 'echo job=$CHORUS_JOB_ID'");
  EXPECT_THAT(again.output, Not(HasSubstr("job=" + *jobs.begin()))) << "job ids are unique";
}

TEST(LaunchTest, ExitsWithTheFailingRanksCode) {
  const CommandResult result = launch("-n 3 sh -c 'if [ \"$CHORUS_RANK\" = 1 ]; then exit 7; fi'");
  EXPECT_EQ(result.exitCode, 7) << result.output;
  EXPECT_THAT(result.output, HasSubstr("chorus launch: rank 1 exited with code 7"));
  EXPECT_THAT(result.output, Not(HasSubstr("rank 0 exited")));
}

TEST(LaunchTest, ReportsRanksKilledBySignals) {
  const CommandResult result =
      launch("-n 2 sh -c 'if [ \"$CHORUS_RANK\" = 0 ]; then kill -9 $$; fi'");
  EXPECT_EQ(result.exitCode, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("chorus launch: rank 0 killed by signal 9"));
}

TEST(LaunchTest, KillsStragglersAfterTheGracePeriod) {
  const CommandResult result =
      launch("-n 3 --grace 300ms sh -c 'if [ \"$CHORUS_RANK\" = 0 ]; then exit 3; fi; sleep 600'");
  EXPECT_EQ(result.exitCode, 3) << result.output;
  EXPECT_THAT(result.output, HasSubstr("chorus launch: rank 0 exited with code 3"));
  EXPECT_THAT(
      result.output,
      HasSubstr("chorus launch: killing rank(s) 1, 2 still running after the grace period"));
  EXPECT_LT(result.seconds, 30) << "stragglers (and their own children) must be killed";
}

TEST(LaunchTest, RanksMayFinishWithinTheGracePeriod) {
  const CommandResult result = launch(
      "-n 2 --grace 20s sh -c 'if [ \"$CHORUS_RANK\" = 0 ]; then exit 4; fi; sleep 0.2; echo "
      "finished'");
  EXPECT_EQ(result.exitCode, 4) << result.output;
  EXPECT_THAT(result.output, HasSubstr("finished"));
  EXPECT_THAT(result.output, Not(HasSubstr("killing")));
}

TEST(LaunchTest, ForwardsSigtermToTheRanks) {
  const CommandResult result = runShell(fmt::format(
      "'{}' launch -n 2 -- sh -c 'echo started; sleep 600' & pid=$!; sleep 0.5; kill -TERM $pid; "
      "wait $pid; echo status=$?",
      CHORUS_CLI));
  EXPECT_THAT(result.output, HasSubstr("status=143")) << result.output;
  EXPECT_THAT(result.output, HasSubstr("started"));
  EXPECT_LT(result.seconds, 30);
}

TEST(LaunchTest, TimeoutKillsTheWholeJob) {
  const CommandResult result = launch("-n 2 --timeout 300ms sleep 600");
  EXPECT_EQ(result.exitCode, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("the job ran longer than --timeout (300 ms)"));
  EXPECT_THAT(result.output, HasSubstr("killing rank(s) 0, 1 still running at the timeout"));
  EXPECT_LT(result.seconds, 30);
}

TEST(LaunchTest, UsageErrorsExitTwoWithAFix) {
  const CommandResult noProgram = launch("-n 2");
  EXPECT_EQ(noProgram.exitCode, 2);
  EXPECT_THAT(noProgram.output, HasSubstr("needs the PROGRAM to run"));
  EXPECT_EQ(launch("true").exitCode, 2) << "-n is required";
  const CommandResult zero = launch("-n 0 true");
  EXPECT_EQ(zero.exitCode, 2);
  EXPECT_THAT(zero.output, HasSubstr("-n 0 is out of range"));
  const CommandResult missing = launch("-n 2 -- /nonexistent/program");
  EXPECT_EQ(missing.exitCode, 2);
  EXPECT_THAT(missing.output, HasSubstr("rank 0: cannot run '/nonexistent/program'"));
  EXPECT_EQ(launch("-n 2 --hosts localhost:2 true").exitCode, 0);
  for (const auto& [arguments, problem] : std::vector<std::pair<std::string, std::string>>{
           {"-n 4 --hosts a:2,b true", "slot counts for some hosts only"},
           {"-n 5 --hosts a:2,b:2 true", "4 slots in all, fewer than -n 5"},
           {"-n 2 --hosts a,a true", "'a' is listed twice"},
           {"-n 2 --hosts a:x true", "slot count 'x'"},
           {"-n 2 --hosts a,,b true", "'' is empty"},
           {"-n 2 -x CHORUS_SURELY_UNSET_VARIABLE true", "not set here"},
       }) {
    SCOPED_TRACE(arguments);
    const CommandResult bad = launch(arguments);
    EXPECT_EQ(bad.exitCode, 2);
    EXPECT_THAT(bad.output, HasSubstr(problem));
  }
  const CommandResult grace = launch("-n 2 --grace soon true");
  EXPECT_EQ(grace.exitCode, 2);
  EXPECT_THAT(grace.output, HasSubstr("--grace"));
}

// Re-run by RanksMeetThroughTheLaunchersStore as each launched rank (disabled otherwise).
TEST(LaunchedRankTest, DISABLED_MeetTheOtherRanks) {
  using namespace chorus::transport;
  ASSERT_EQ(detectLauncher(), "chorus launch");
  const std::chrono::seconds timeout(20);
  EnvBootstrap boot = bootstrapFromEnvironment(timeout);
  boot.store->set(fmt::format("pid/{}", boot.rank), toBytes(std::to_string(::getpid())));
  std::set<std::string> pids;
  for (int peer = 0; peer < boot.size; ++peer)
    pids.insert(toString(boot.store->get(fmt::format("pid/{}", peer), timeout)));
  EXPECT_EQ(static_cast<int>(pids.size()), boot.size) << "every rank is its own process";
  std::printf("rank %d met %d ranks\n", boot.rank, boot.size);
}

TEST(LaunchTest, RanksMeetThroughTheLaunchersStore) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const CommandResult result =
      launch(fmt::format("-n 3 -- '{}' --gtest_also_run_disabled_tests "
                         "--gtest_filter=LaunchedRankTest.DISABLED_MeetTheOtherRanks",
                         self));
  ASSERT_EQ(result.exitCode, 0) << result.output;
  for (int rank = 0; rank < 3; ++rank)
    EXPECT_THAT(result.output, HasSubstr(fmt::format("rank {} met 3 ranks", rank)));
}

// ---- other hosts, through a remote shell agent -----------------------------------------------

// `chorus launch` options that start every rank through tests/multiprocess/fake_rsh.sh, which
// runs it here in an empty environment as ssh would on "host" a or b.
std::string throughAgent(const std::string& hosts) {
  return fmt::format("--hosts {} --rsh '{}/tests/multiprocess/fake_rsh.sh' --store-addr 127.0.0.1",
                     hosts, CHORUS_SOURCE_DIR);
}

TEST(LaunchTest, RemoteRanksGetTheirVariablesOnStdinNotOnTheCommandLine) {
  const std::string log = fmt::format("/tmp/chorus-rsh-{}.log", ::getpid());
  const CommandResult result = runShell(fmt::format(
      "FAKE_RSH_LOG={} CHORUS_AUTH_TOKEN=s3cret-tok CHORUS_FOO='two words' '{}' launch -n 4 {} "
      "-x EXTRA=1 -- sh -c 'echo \"rank=$CHORUS_RANK local=$CHORUS_LOCAL_RANK "
      "store=$CHORUS_STORE token=$CHORUS_AUTH_TOKEN foo=$CHORUS_FOO extra=$EXTRA dir=$(pwd)\"'",
      log, CHORUS_CLI, throughAgent("a:2,b:2")));
  ASSERT_EQ(result.exitCode, 0) << result.output;
  const std::string here = std::filesystem::current_path().string();
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_THAT(result.output,
                HasSubstr(fmt::format("rank={} local={} store=tcp://127.0.0.1:", rank, rank % 2)));
  }
  EXPECT_THAT(result.output,
              HasSubstr(fmt::format("token=s3cret-tok foo=two words extra=1 dir={}", here)));
  std::string agentLines;
  if (FILE* in = std::fopen(log.c_str(), "r")) {
    for (int c = 0; (c = std::fgetc(in)) != EOF;)
      agentLines += static_cast<char>(c);
    std::fclose(in);
  }
  std::remove(log.c_str());
  EXPECT_EQ(std::count(agentLines.begin(), agentLines.end(), '\n'), 4) << agentLines;
  EXPECT_THAT(agentLines, HasSubstr("a cd "));
  EXPECT_THAT(agentLines, HasSubstr("b cd "));
  EXPECT_THAT(agentLines, Not(HasSubstr("s3cret-tok")));
}

TEST(LaunchTest, RemoteRankFailuresNameTheHost) {
  const CommandResult result =
      launch(throughAgent("a,b") + " -n 2 -- sh -c 'if [ \"$CHORUS_RANK\" = 1 ]; then exit 7; fi'");
  EXPECT_EQ(result.exitCode, 7) << result.output;
  EXPECT_THAT(result.output, HasSubstr("chorus launch: rank 1 on b exited with code 7"));
}

TEST(LaunchTest, RemoteRanksDieWithTheLauncher) {
  // The launcher is killed outright (no chance to clean up): each remote rank's stdin closes,
  // and the script around it kills it.
  const std::string marker = fmt::format("{}.{}", 600 + ::getpid() % 300, ::getpid() % 1000);
  const CommandResult result = runShell(fmt::format(
      "'{}' launch -n 2 {} -- sleep {} & pid=$!; sleep 1; echo before=$(pgrep -fc '^sleep {}$'); "
      "kill -9 $pid; for i in 1 2 3 4 5 6 7 8 9 10; do [ $(pgrep -fc '^sleep {}$') = 0 ] && "
      "break; sleep 0.2; done; echo after=$(pgrep -fc '^sleep {}$')",
      CHORUS_CLI, throughAgent("a,b"), marker, marker, marker, marker));
  EXPECT_THAT(result.output, HasSubstr("before=2"));
  EXPECT_THAT(result.output, HasSubstr("after=0"));
}

TEST(LaunchTest, RanksMeetAcrossHostsThroughTheAgent) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const CommandResult result =
      launch(fmt::format("-n 3 {} -- '{}' --gtest_also_run_disabled_tests "
                         "--gtest_filter=LaunchedRankTest.DISABLED_MeetTheOtherRanks",
                         throughAgent("a:1,b:2"), self));
  ASSERT_EQ(result.exitCode, 0) << result.output;
  for (int rank = 0; rank < 3; ++rank)
    EXPECT_THAT(result.output, HasSubstr(fmt::format("rank {} met 3 ranks", rank)));
}

}  // namespace
