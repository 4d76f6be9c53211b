// Multi-host runs on this machine: network namespaces joined by a bridge stand in for hosts
// (scripts/netns_hosts.sh), two ranks per host started with torchrun's variables (rank 0
// serves the store on its host's address), by `chorus launch --hosts` and by Open MPI's mpirun
// (both through scripts/netns_rsh.sh). Inside a host the ranks use shm, across hosts tcp (the
// default "auto" transport) or ucx (CHORUS_REMOTE_TRANSPORT=ucx). Checks the exact results of every
// collective's default algorithm, of the hierarchical AllReduce and of the two-step AllToAll with
// nodes = hosts, and that a rank killed mid-run or never started gives every other rank a clear
// error. Skipped with a message where namespaces cannot be made (not root, or a container without
// CAP_SYS_ADMIN).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "../cli/cli_run.h"
#include "ir/algorithm.h"
#include "selection/tuning_table.h"

namespace {

using chorus::testing_support::CommandResult;
using chorus::testing_support::runShell;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kHosts = 2;
constexpr int kRanksPerHost = 2;
constexpr int kRanks = kHosts * kRanksPerHost;

std::string script() {
  return std::string("'") + CHORUS_SOURCE_DIR + "/scripts/netns_hosts.sh'";
}

std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct RankRun {
  int exitCode = -1;
  std::string output;
};

class NetnsHostsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "multi-host tests need root to create network namespaces";
    id_ = fmt::format("c{}", ::getpid() % 100000);
    dir_ = std::filesystem::temp_directory_path() / fmt::format("chorus-netns-{}", id_);
    std::filesystem::create_directories(dir_);
    const CommandResult up = runShell(fmt::format("{} up {} {}", script(), id_, kHosts));
    if (up.exitCode != 0) {
      runShell(fmt::format("{} down {}", script(), id_));
      GTEST_SKIP() << "cannot create network namespaces here (a container without "
                      "CAP_SYS_ADMIN?):\n"
                   << up.output;
    }
    made_ = true;
  }

  void TearDown() override {
    if (made_) runShell(fmt::format("{} down {}", script(), id_));
    std::filesystem::remove_all(dir_);
  }

  // Runs `command` as every rank (rank r on host r / ranksPerHost); `rankCommand` may replace
  // a rank's command. Returns each rank's exit code and output.
  std::vector<RankRun> launch(const std::string& command, const std::string& environment = "",
                              const std::function<std::string(int)>& rankCommand = {},
                              int ranksPerHost = kRanksPerHost) {
    const int port = nextPort();
    const int ranks = kHosts * ranksPerHost;
    std::string shell = "cd '" + dir_.string() + "'; ";
    for (int r = 0; r < ranks; ++r) {
      const std::string own = rankCommand ? rankCommand(r) : "";
      shell += fmt::format(
          "(ip netns exec {}-h{} env RANK={} WORLD_SIZE={} LOCAL_RANK={} MASTER_ADDR=10.231.0.1 "
          "MASTER_PORT={} CHORUS_TIMEOUT=10s {} {} > out{} 2>&1; echo $? > rc{}) & ",
          id_, r / ranksPerHost, r, ranks, r % ranksPerHost, port, environment,
          own.empty() ? command : own, r, r);
    }
    shell += "wait";
    runShell(shell);
    std::vector<RankRun> runs(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r) {
      const std::string rc = readFile(dir_ / fmt::format("rc{}", r));
      runs[static_cast<std::size_t>(r)].exitCode = rc.empty() ? -1 : std::stoi(rc);
      runs[static_cast<std::size_t>(r)].output = readFile(dir_ / fmt::format("out{}", r));
    }
    return runs;
  }

  // Rank 3 is killed 2 s into a long run under `environment`: every other rank fails within
  // the timeout, and the cause some rank reports is rank 3's death, not a timeout. Ranks 0 and 1
  // see its connection close ("lost rank 3", over tcp or ucx), rank 2, on its host, sees the
  // process exit ("rank 3 (pid N) exited"); whichever fails first aborts the others with that
  // cause, and under load either may win. (The transports' own detection of a lost peer:
  // tests/transport and tests/runtime.)
  void expectKilledRankNamed(const std::string& environment) {
    const auto start = std::chrono::steady_clock::now();
    const std::string longRun = fmt::format(
        "'{}' bench allreduce --launched -b 64K -e 64K --budget 30 --batches 1000", CHORUS_CLI);
    const std::vector<RankRun> runs = launch(longRun, environment, [&](int r) {
      return r == 3 ? "timeout -s KILL 2 " + longRun : std::string();
    });
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(25));
    EXPECT_EQ(runs[3].exitCode, 137);
    bool deathNamed = false;
    for (int r = 0; r < 3; ++r) {
      SCOPED_TRACE("rank " + std::to_string(r));
      const std::string& output = runs[static_cast<std::size_t>(r)].output;
      EXPECT_NE(runs[static_cast<std::size_t>(r)].exitCode, 0);
      EXPECT_THAT(output, HasSubstr("rank 3"));
      deathNamed = deathNamed || output.find("lost rank 3") != std::string::npos ||
                   output.find("rank 3 (pid") != std::string::npos;
    }
    EXPECT_TRUE(deathNamed) << runs[0].output << runs[1].output << runs[2].output;
  }

  static std::string bench(const std::string& arguments) {
    return fmt::format("'{}' bench {} --launched -b 1K -e 256K -f 16 --budget 0.01", CHORUS_CLI,
                       arguments);
  }

  void expectExact(const std::string& arguments, const std::string& environment = "") {
    SCOPED_TRACE(arguments);
    const std::vector<RankRun> runs = launch(bench(arguments), environment);
    for (int r = 0; r < kRanks; ++r)
      EXPECT_EQ(runs[static_cast<std::size_t>(r)].exitCode, 0)
          << "rank " << r << ":\n"
          << runs[static_cast<std::size_t>(r)].output;
    EXPECT_THAT(runs[0].output, HasSubstr("# Wrong elements       : 0 OK"));
    EXPECT_THAT(runs[0].output, HasSubstr(fmt::format("{} ranks (auto)", kRanks)));
  }

  // Runs `command` on host 0 with host 0's name as its host name (a UTS namespace), as a
  // user's shell on that host would; returns its exit code and output.
  CommandResult onHostZero(const std::string& command) {
    const std::string host = id_ + "-h0";
    std::string script = fmt::format("hostname {}; cd '{}'; {}", host, dir_.string(), command);
    std::string quoted = "'";
    for (char c : script)
      quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    quoted += "'";
    return runShell(fmt::format("ip netns exec {} unshare --uts sh -c {}", host, quoted));
  }

  // Store ports below Linux's ephemeral range (32768-60999 by default), where an outgoing
  // connection of a concurrent test in the same namespace can hold the port (a CI run once
  // failed with "bind: Address already in use" on 39104).
  int nextPort() { return 20000 + static_cast<int>(::getpid() % 12000) + (runs_++ % 50); }

  static void expectBenchRanExactly(const CommandResult& result) {
    EXPECT_EQ(result.exitCode, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr(fmt::format("{} ranks (auto)", kRanks)));
    EXPECT_THAT(result.output, HasSubstr("allreduce.hierarchical{nodes=2}"));
    EXPECT_THAT(result.output, HasSubstr("# Wrong elements       : 0 OK"));
  }

  std::string id_;
  std::filesystem::path dir_;
  bool made_ = false;
  int runs_ = 0;
};

TEST_F(NetnsHostsTest, EveryCollectivesDefaultAlgorithmIsExact) {
  for (const char* collective :
       {"allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "reduce"})
    expectExact(collective);
}

TEST_F(NetnsHostsTest, DefaultAllReduceAcrossHostsIsHierarchicalFrom16K) {
  // Ranks 0-1 on one host and 2-3 on the other: from 16 KiB the default is the hierarchical
  // AllReduce with nodes = hosts (shm inside, tcp across); below, the library default.
  const std::vector<RankRun> runs = launch(
      fmt::format("'{}' bench allreduce --launched -b 1K -e 64K -f 64 --budget 0.01", CHORUS_CLI));
  for (int r = 0; r < kRanks; ++r)
    EXPECT_EQ(runs[static_cast<std::size_t>(r)].exitCode, 0)
        << runs[static_cast<std::size_t>(r)].output;
  EXPECT_THAT(runs[0].output, HasSubstr("allreduce.hierarchical{nodes=2}"));
  EXPECT_THAT(runs[0].output, HasSubstr("# Wrong elements       : 0 OK"));
}

TEST_F(NetnsHostsTest, DefaultAllToAllAcrossHostsIsTwoStepBelow512K) {
  const std::vector<RankRun> runs = launch(
      fmt::format("'{}' bench alltoall --launched -b 64K -e 1M -f 16 --budget 0.01", CHORUS_CLI));
  for (int r = 0; r < kRanks; ++r)
    EXPECT_EQ(runs[static_cast<std::size_t>(r)].exitCode, 0)
        << runs[static_cast<std::size_t>(r)].output;
  EXPECT_THAT(runs[0].output, ::testing::ContainsRegex("65536 .* alltoall.two-step\\{nodes=2\\}"));
  // From 512K the library default (not two-step) runs.
  EXPECT_THAT(runs[0].output, ::testing::ContainsRegex("1048576 .* alltoall\\."));
  EXPECT_THAT(runs[0].output, Not(::testing::ContainsRegex("1048576 .* two-step")));
  EXPECT_THAT(runs[0].output, HasSubstr("# Wrong elements       : 0 OK"));
}

TEST_F(NetnsHostsTest, OneRankPerHostUsesTheTcpTuningTables) {
  // Every peer is a tcp peer: the shipped tcp table chooses, not the shm one (whose 512 B
  // choices use LL128, a protocol only shared memory has).
  const chorus::selection::TuningFile& shipped = chorus::selection::builtinTuning();
  const auto* tcp = shipped.find(chorus::ir::CollectiveKind::allgather, kHosts, "tcp");
  const auto* shm = shipped.find(chorus::ir::CollectiveKind::allgather, kHosts, "shm");
  ASSERT_TRUE(tcp != nullptr && tcp->transport == "tcp") << "no shipped tcp allgather table";
  ASSERT_TRUE(shm != nullptr && shm->transport == "shm") << "no shipped shm allgather table";
  const std::string expected = tcp->entryFor(512).choice.describe();
  ASSERT_NE(expected, shm->entryFor(512).choice.describe())
      << "pick a size where the shipped tcp and shm tables differ";
  const std::vector<RankRun> runs =
      launch(fmt::format("'{}' bench allgather --launched -b 512 -e 512 --budget 0.01", CHORUS_CLI),
             "", {}, /*ranksPerHost=*/1);
  for (const RankRun& run : runs)
    EXPECT_EQ(run.exitCode, 0) << run.output;
  EXPECT_THAT(runs[0].output, HasSubstr(" " + expected + "\n")) << "the whole plan name";
  EXPECT_THAT(runs[0].output, HasSubstr("# Wrong elements       : 0 OK"));
}

TEST_F(NetnsHostsTest, HierarchicalAlgorithmsWithNodesAsHostsAreExact) {
  expectExact("allreduce --algo 'hierarchical{nodes=2}'");
  expectExact("alltoall --algo 'two-step{nodes=2}'");
}

TEST_F(NetnsHostsTest, RankKilledMidRunFailsEveryOtherRankWithinTheTimeout) {
  expectKilledRankNamed("");
}

TEST_F(NetnsHostsTest, RankThatNeverStartsIsNamedWithinTheTimeout) {
  const std::vector<RankRun> runs =
      launch(bench("allreduce"), "", [](int r) { return r == 2 ? std::string("true") : ""; });
  EXPECT_EQ(runs[2].exitCode, 0);
  for (int r : {0, 1, 3}) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_NE(runs[static_cast<std::size_t>(r)].exitCode, 0);
    // Rank 0 (the store's server) times out naming rank 2; the others may see the server gone
    // first, still while waiting for rank 2.
    EXPECT_THAT(runs[static_cast<std::size_t>(r)].output,
                r == 0 ? HasSubstr("rank 2 of 4 did not join the communicator within 10000 ms")
                       : HasSubstr("rank 2 of 4"));
  }
}

TEST_F(NetnsHostsTest, LoopbackAcrossHostsFailsFastOnEveryRank) {
  // CHORUS_SOCKET_IFNAME=lo makes every rank listen on 127.0.0.1, which the other host cannot
  // reach: a rank says so as soon as it reads the others' addresses, instead of retrying
  // connections until the timeout.
  const auto start = std::chrono::steady_clock::now();
  const std::vector<RankRun> runs = launch(bench("allreduce"), "CHORUS_SOCKET_IFNAME=lo");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(8));
  // Rank 0 serves the store and fails like the others; a rank still reading the store then
  // reports the store gone instead of the cause, so the cause is asked of rank 0 only.
  EXPECT_THAT(runs[0].output, HasSubstr("listens on loopback (127.0.0.1 via lo)"));
  for (int r = 0; r < kRanks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_NE(runs[static_cast<std::size_t>(r)].exitCode, 0);
    EXPECT_THAT(runs[static_cast<std::size_t>(r)].output,
                ::testing::AnyOf(HasSubstr("listens on loopback"),
                                 HasSubstr("the store server (rank 0) exited")));
  }
}

// CHORUS_REMOTE_TRANSPORT=ucx: shm inside each host, UCX (over its tcp transport: no RDMA
// device here) across, every collective exact; CHORUS_DEBUG=INFO says what was picked.
TEST_F(NetnsHostsTest, UcxAcrossHostsIsExact) {
  const std::string ucx = "CHORUS_REMOTE_TRANSPORT=ucx UCX_TLS=tcp";
  for (const char* collective :
       {"allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "reduce"})
    expectExact(collective, ucx);
  const std::vector<RankRun> runs = launch(bench("allreduce"), ucx + " CHORUS_DEBUG=INFO");
  for (int r = 0; r < kRanks; ++r)
    EXPECT_THAT(runs[static_cast<std::size_t>(r)].output,
                HasSubstr(fmt::format("rank {}: auto transport: shm within this host (2 ranks), "
                                      "ucx to the 2 ranks on other hosts "
                                      "(CHORUS_REMOTE_TRANSPORT=ucx)",
                                      r)));
  // Left to itself, auto finds no RDMA device here and goes across over tcp.
  const std::vector<RankRun> plain = launch(bench("allreduce"), "CHORUS_DEBUG=INFO");
  EXPECT_THAT(plain[0].output, HasSubstr("tcp to the 2 ranks on other hosts (rank 0's UCX finds "
                                         "no RDMA device)"));
}

TEST_F(NetnsHostsTest, RankKilledMidRunOverUcxFailsEveryOtherRankNamingIt) {
  expectKilledRankNamed("CHORUS_REMOTE_TRANSPORT=ucx UCX_TLS=tcp");
}

TEST_F(NetnsHostsTest, ChorusLaunchAcrossHostsIsExact) {
  // The launcher runs on host 0 and starts ranks 0-1 there itself and ranks 2-3 on host 1
  // through the namespace rsh agent; the ranks meet at the launcher's store on host 0's address.
  const CommandResult result = onHostZero(fmt::format(
      "CHORUS_TIMEOUT=10s CHORUS_AUTH_TOKEN=t0k '{}' launch -n {} --hosts {}-h0:2,{}-h1:2 "
      "--rsh '{}/scripts/netns_rsh.sh' --timeout 60s -- '{}' bench allreduce --launched -b 1K "
      "-e 64K -f 64 --budget 0.01",
      CHORUS_CLI, kRanks, id_, id_, CHORUS_SOURCE_DIR, CHORUS_CLI));
  expectBenchRanExactly(result);
}

TEST_F(NetnsHostsTest, MpirunAcrossHostsIsExact) {
  if (runShell("command -v mpirun").exitCode != 0)
    GTEST_SKIP() << "mpirun (Open MPI) is not installed";
  // Open MPI starts its daemon on host 1 through the namespace rsh agent; rank 0 serves the
  // store named by CHORUS_STORE on host 0's address.
  const CommandResult result = onHostZero(fmt::format(
      "mpirun --allow-run-as-root --mca plm_rsh_agent '{}/scripts/netns_rsh.sh' --mca "
      "oob_tcp_if_include eth0 -H {}-h0:2,{}-h1:2 -n {} -x CHORUS_TIMEOUT=10s -x "
      "CHORUS_STORE=tcp://10.231.0.1:{} '{}' bench allreduce --launched -b 1K -e 64K -f 64 "
      "--budget 0.01",
      CHORUS_SOURCE_DIR, id_, id_, kRanks, nextPort(), CHORUS_CLI));
  expectBenchRanExactly(result);
}

}  // namespace
