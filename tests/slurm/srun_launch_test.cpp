// Launches by Slurm itself: a one-machine cluster (scripts/slurm_one_machine.sh: Debian's
// slurmctld, slurmd and munge on this host) runs `srun -n N chorus bench ... --launched`, and
// every task finds its rank, size and rendezvous from srun's variables alone
// (transport/bootstrap_env.h). Checks exact results of each collective on 2 and 3 tasks, the
// launcher the ranks report, and that a task that never starts chorus gives the others a clear
// error within their timeout. Skipped with a message where the cluster cannot run (not root,
// or Slurm's packages missing).
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "../cli/cli_run.h"

namespace chorus::srun_launch_test {

using chorus::testing_support::CommandResult;
using chorus::testing_support::runShell;
using ::testing::HasSubstr;

class SrunLaunchTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (::geteuid() != 0) {
      skipReason_ = "a one-machine Slurm cluster needs root (its daemons run as root)";
      return;
    }
    if (runShell("command -v srun && command -v slurmctld && command -v munged").exitCode != 0) {
      skipReason_ = "Slurm is not installed (apt-get install slurmd slurmctld slurm-client munge)";
      return;
    }
    dir_ = (std::filesystem::temp_directory_path() / fmt::format("chorus-slurm-{}", ::getpid()))
               .string();
    // Ports per process, so a Release and a sanitizer run on one machine do not meet.
    const int port = 7000 + (::getpid() % 1000) * 2;
    const CommandResult up = runShell(
        fmt::format("'{}/scripts/slurm_one_machine.sh' up '{}' {}", CHORUS_SOURCE_DIR, dir_, port));
    if (up.exitCode != 0) {
      runShell(fmt::format("'{}/scripts/slurm_one_machine.sh' down '{}'", CHORUS_SOURCE_DIR, dir_));
      startError_ = up.output;
    }
  }

  static void TearDownTestSuite() {
    if (!dir_.empty())
      runShell(fmt::format("'{}/scripts/slurm_one_machine.sh' down '{}'", CHORUS_SOURCE_DIR, dir_));
  }

  void SetUp() override {
    if (!skipReason_.empty()) GTEST_SKIP() << skipReason_;
    ASSERT_TRUE(startError_.empty()) << "the one-machine Slurm cluster did not start:\n"
                                     << startError_;
  }

  // `srun -n TASKS` (overcommitting this machine's CPUs) of `command`, every task with
  // CHORUS_TIMEOUT=10s; stdout and stderr of all tasks together. Each test process runs a
  // cluster of its own whose job ids start at 1, so the store's port is set apart too
  // (CHORUS_MASTER_PORT): two clusters' jobs with one id would otherwise meet on one port.
  static CommandResult srun(int tasks, const std::string& command) {
    return runShell(
        fmt::format("SLURM_CONF='{}/slurm.conf' timeout 120 srun -n {} -O --kill-on-bad-exit=0 env "
                    "CHORUS_TIMEOUT=10s CHORUS_DEBUG=INFO CHORUS_MASTER_PORT={} {} 2>&1",
                    dir_, tasks, freePort(), command));
  }

  // A TCP port that was free a moment ago (bound to 0, read back, closed).
  static int freePort() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    socklen_t length = sizeof address;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    ::close(fd);
    return ntohs(address.sin_port);
  }

  static std::string bench(const std::string& collective) {
    return fmt::format("'{}' bench {} --launched -b 1K -e 256K -f 16 --budget 0.01", CHORUS_CLI,
                       collective);
  }

  static inline std::string dir_;
  static inline std::string skipReason_;
  static inline std::string startError_;
};

TEST_F(SrunLaunchTest, EveryTaskFindsItsRankFromSrunAndResultsAreExact) {
  for (int tasks : {2, 3}) {
    for (const char* collective : {"allreduce", "allgather", "reducescatter", "alltoall"}) {
      SCOPED_TRACE(fmt::format("{} tasks, {}", tasks, collective));
      const CommandResult run = srun(tasks, bench(collective));
      EXPECT_EQ(run.exitCode, 0) << run.output;
      EXPECT_THAT(run.output, HasSubstr("# Wrong elements       : 0 OK"));
      EXPECT_THAT(run.output, HasSubstr(fmt::format("rank {} of {}, local rank {}", tasks - 1,
                                                    tasks, tasks - 1)));
      EXPECT_THAT(run.output, HasSubstr("launched by Slurm srun (job slurm-"));
    }
  }
}

TEST_F(SrunLaunchTest, ATaskThatNeverJoinsIsReportedWithinTheTimeout) {
  // Task 1 exits before calling chorus; task 0 must fail with a message, not hang.
  const CommandResult run =
      srun(2, fmt::format("sh -c 'if [ \"$SLURM_PROCID\" = 1 ]; then exit 3; fi; exec {}'",
                          bench("allreduce")));
  EXPECT_NE(run.exitCode, 0);
  EXPECT_THAT(run.output, HasSubstr("rank 1"));
  EXPECT_THAT(run.output, HasSubstr("CHORUS_TIMEOUT"));
}

}  // namespace chorus::srun_launch_test
