// Communicators whose ranks are processes on this host (shm and tcp transports): initRank with
// a unique id, initFromEnvironment with `chorus launch` variables, two communicators from one
// id, a peer that exits, a peer that stalls (then a fresh communicator of the survivors), and
// initAll over shm and tcp. Ranks are forked children of a single-threaded test
// process; each reports through its exit status.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api_test_util.h"
#include "forked_ranks.h"
#include "process_threads.h"

namespace chorus {
namespace {

using apitest::Buffer;
using namespace std::chrono_literals;

using testing_support::kOk;
using testing_support::kThrew;
using testing_support::kWrong;
using testing_support::runRanks;

#define REQUIRE_SINGLE_THREADED()                                                            \
  if (testing_support::processThreadCount() > 1)                                             \
  GTEST_SKIP() << "fork needs a single-threaded test process; run this test on its own (as " \
                  "ctest does)"

// AllReduce of `count` float32 values (rank + i % 13) on `comm`; true if every element is exact.
bool allReduceIsExact(Communicator& comm, std::size_t count) {
  const int n = comm.size();
  Buffer data(DataType::float32, count);
  for (std::size_t i = 0; i < count; ++i)
    data.set(i, comm.rank() + static_cast<long>(i % 13));
  comm.allReduce(data.data(), data.data(), count, DataType::float32, ReduceOp::sum);
  for (std::size_t i = 0; i < count; ++i)
    if (!data.holds(i, n * (n - 1) / 2 + n * static_cast<long>(i % 13))) {
      std::fprintf(stderr, "rank %d: element %zu is wrong\n", comm.rank(), i);
      return false;
    }
  return true;
}

TEST(MultiprocessTest, AllReduceOverShmWithInitRank) {
  REQUIRE_SINGLE_THREADED();
  const auto codes = runRanks(3, [](int rank, const std::string& hex) {
    Communicator comm =
        Communicator::initRank(3, uniqueIdFromHex(hex), rank, apitest::testConfig());
    if (comm.rank() != rank || comm.size() != 3) return kWrong;
    for (std::size_t count : {std::size_t{1}, std::size_t{1001}, std::size_t{100'000}})
      if (!allReduceIsExact(comm, count)) return kWrong;
    // The rank before and after exchange through send/recv.
    Buffer out(DataType::int32, 10), in(DataType::int32, 10);
    for (std::size_t i = 0; i < 10; ++i)
      out.set(i, rank * 100 + static_cast<long>(i));
    groupStart();
    comm.send(out.data(), 10, DataType::int32, (rank + 1) % 3);
    comm.recv(in.data(), 10, DataType::int32, (rank + 2) % 3);
    groupEnd();
    return in.holds(9, ((rank + 2) % 3) * 100 + 9) ? kOk : kWrong;
  });
  EXPECT_EQ(codes, std::vector<int>(3, kOk));
}

TEST(MultiprocessTest, TwoCommunicatorsFromOneIdDoNotClash) {
  REQUIRE_SINGLE_THREADED();
  const auto codes = runRanks(2, [](int rank, const std::string& hex) {
    const UniqueId id = uniqueIdFromHex(hex);
    Communicator first = Communicator::initRank(2, id, rank, apitest::testConfig());
    Communicator second = Communicator::initRank(2, id, rank, apitest::testConfig());
    const bool ok = allReduceIsExact(second, 500) && allReduceIsExact(first, 700) &&
                    allReduceIsExact(second, 3);
    return ok ? kOk : kWrong;
  });
  EXPECT_EQ(codes, std::vector<int>(2, kOk));
}

TEST(MultiprocessTest, APeerThatExitsFailsTheOthersWithCommError) {
  REQUIRE_SINGLE_THREADED();
  const auto codes = runRanks(2, [](int rank, const std::string& hex) {
    Communicator comm =
        Communicator::initRank(2, uniqueIdFromHex(hex), rank, apitest::testConfig(60s));
    if (rank == 1) ::_exit(kOk);  // dies without calling
    Buffer data(DataType::float32, 64);
    try {
      comm.allReduce(data.data(), data.data(), 64, DataType::float32, ReduceOp::sum);
    } catch (const CommError& e) {
      std::fprintf(stderr, "rank 0 (expected): %s\n", e.what());
      return std::string(e.what()).find("allreduce") != std::string::npos ? kOk : kWrong;
    }
    return kWrong;
  });
  EXPECT_EQ(codes, std::vector<int>(2, kOk));
}

// A peer that destroys its communicator or aborts it (and lives on) while this rank waits for
// it, over shm and over tcp: a collective it never made and a recv it never sent fail within
// 1 s, naming it, not at the 60 s timeout.
TEST(MultiprocessTest, APeerThatLeavesCleanlyFailsWhatStillNeedsItAtOnce) {
  REQUIRE_SINGLE_THREADED();
  for (const char* transport : {"shm", "tcp"}) {
    for (const bool abort : {false, true}) {
      for (const bool collective : {true, false}) {
        const auto codes = runRanks(2, [=](int rank, const std::string& hex) {
          CommConfig config = apitest::testConfig(60s);
          config.transport = transport;
          std::optional<Communicator> comm =
              Communicator::initRank(2, uniqueIdFromHex(hex), rank, config);
          if (!allReduceIsExact(*comm, 100)) return kWrong;
          if (rank == 1) {
            // Leaves the group (or fails it), then stays alive past the survivor's check.
            if (abort) comm->abort("rank 1 gives up");
            comm.reset();
            std::this_thread::sleep_for(1500ms);
            return kOk;
          }
          Buffer data(DataType::float32, 64);
          const auto start = std::chrono::steady_clock::now();
          try {
            if (collective)
              comm->allReduce(data.data(), data.data(), 64, DataType::float32, ReduceOp::sum);
            else
              comm->recv(data.data(), 64, DataType::float32, 1);
          } catch (const CommError& e) {
            const auto took = std::chrono::steady_clock::now() - start;
            std::fprintf(stderr, "rank 0 (expected, %s, %s, %lld ms): %s\n", transport,
                         abort ? "abort" : "destroy",
                         static_cast<long long>(
                             std::chrono::duration_cast<std::chrono::milliseconds>(took).count()),
                         e.what());
            const std::string message = e.what();
            const bool named = message.find("rank 1 left the group") != std::string::npos ||
                               message.find("rank 1 gives up") != std::string::npos;
            return took < 1s && named ? kOk : kWrong;
          }
          return kWrong;
        });
        EXPECT_EQ(codes, std::vector<int>(2, kOk))
            << transport << (abort ? ", abort, " : ", destroy, ")
            << (collective ? "allreduce" : "recv");
      }
    }
  }
}

TEST(MultiprocessTest, DeviceExecutorOverShmWithInitRank) {
  REQUIRE_SINGLE_THREADED();
  const auto codes = runRanks(3, [](int rank, const std::string& hex) {
    CommConfig config = apitest::testConfig();
    config.executor = "device";
    Communicator comm = Communicator::initRank(3, uniqueIdFromHex(hex), rank, config);
    for (std::size_t count : {std::size_t{1}, std::size_t{1001}, std::size_t{100'000}})
      if (!allReduceIsExact(comm, count) || !allReduceIsExact(comm, count)) return kWrong;
    return kOk;
  });
  EXPECT_EQ(codes, std::vector<int>(3, kOk));
}

TEST(MultiprocessTest, APeerThatExitsStopsTheDeviceExecutorsBlocks) {
  // Rank 1 exits after the plan is set up, so rank 0's next call goes straight to its blocks,
  // which wait for rank 1's message: the transport's report of the exited process stops them
  // long before the 60 s timeout.
  REQUIRE_SINGLE_THREADED();
  const auto codes = runRanks(2, [](int rank, const std::string& hex) {
    CommConfig config = apitest::testConfig(60s);
    config.executor = "device";
    Communicator comm = Communicator::initRank(2, uniqueIdFromHex(hex), rank, config);
    if (!allReduceIsExact(comm, 64)) return kWrong;
    if (rank == 1) ::_exit(kOk);
    const auto start = std::chrono::steady_clock::now();
    try {
      allReduceIsExact(comm, 64);
    } catch (const CommError& e) {
      std::fprintf(stderr, "rank 0 (expected): %s\n", e.what());
      const bool quick = std::chrono::steady_clock::now() - start < 20s;
      return quick && std::string(e.what()).find("allreduce") != std::string::npos ? kOk : kWrong;
    }
    return kWrong;
  });
  EXPECT_EQ(codes, std::vector<int>(2, kOk));
}

TEST(MultiprocessTest, InitFromEnvironmentWithChorusLaunchVariables) {
  REQUIRE_SINGLE_THREADED();
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("chorus-api-env-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto codes = runRanks(2, [&](int rank, const std::string&) {
    ::setenv("CHORUS_RANK", std::to_string(rank).c_str(), 1);
    ::setenv("CHORUS_WORLD_SIZE", "2", 1);
    ::setenv("CHORUS_STORE", ("file://" + dir.string()).c_str(), 1);
    ::setenv("CHORUS_TIMEOUT", "30", 1);
    Communicator comm = Communicator::initFromEnvironment();
    if (comm.rank() != rank || comm.size() != 2) return kWrong;
    return allReduceIsExact(comm, 4097) ? kOk : kWrong;
  });
  std::filesystem::remove_all(dir);
  EXPECT_EQ(codes, std::vector<int>(2, kOk));
}

TEST(MultiprocessTest, InitFromEnvironmentWithoutALauncherNamesTheVariables) {
  for (const char* name : {"CHORUS_RANK", "CHORUS_WORLD_SIZE", "CHORUS_STORE",
                           "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "RANK", "WORLD_SIZE"})
    ::unsetenv(name);
  const std::string message =
      apitest::messageOf<OptionError>([] { Communicator::initFromEnvironment(); });
  EXPECT_NE(message.find("CHORUS_RANK"), std::string::npos) << message;
}

TEST(MultiprocessTest, InitAllOverShmSegments) {
  CommConfig config = apitest::testConfig();
  config.transport = "shm";
  config.slotBytes = 8192;
  auto comms = Communicator::initAll(3, config);
  std::vector<std::string> failures(3);
  apitest::onThreads(3, [&](int r) {
    if (!allReduceIsExact(comms[r], 30'000)) failures[r] = "wrong result";
  });
  EXPECT_EQ(failures, std::vector<std::string>(3));
}

TEST(MultiprocessTest, InitAllOverTcp) {
  CommConfig config = apitest::testConfig();
  config.transport = "tcp";
  config.slotBytes = 8192;
  auto comms = Communicator::initAll(3, config);
  std::vector<std::string> failures(3);
  apitest::onThreads(3, [&](int r) {
    if (!allReduceIsExact(comms[r], 30'000) || !allReduceIsExact(comms[r], 1))
      failures[r] = "wrong result";
  });
  EXPECT_EQ(failures, std::vector<std::string>(3));
}

TEST(MultiprocessTest, AllReduceOverTcpWithInitRank) {
  REQUIRE_SINGLE_THREADED();
  const auto codes = runRanks(3, [](int rank, const std::string& hex) {
    CommConfig config = apitest::testConfig();
    config.transport = "tcp";
    Communicator comm = Communicator::initRank(3, uniqueIdFromHex(hex), rank, config);
    return allReduceIsExact(comm, 100'000) && allReduceIsExact(comm, 5) ? kOk : kWrong;
  });
  EXPECT_EQ(codes, std::vector<int>(3, kOk));
}

TEST(MultiprocessTest, APeerThatExitsFailsTheOthersOverTcp) {
  REQUIRE_SINGLE_THREADED();
  const auto codes = runRanks(2, [](int rank, const std::string& hex) {
    CommConfig config = apitest::testConfig(60s);
    config.transport = "tcp";
    Communicator comm = Communicator::initRank(2, uniqueIdFromHex(hex), rank, config);
    if (rank == 1) ::_exit(kOk);  // dies without calling or leaving
    Buffer data(DataType::float32, 64);
    try {
      comm.allReduce(data.data(), data.data(), 64, DataType::float32, ReduceOp::sum);
    } catch (const CommError& e) {
      std::fprintf(stderr, "rank 0 (expected): %s\n", e.what());
      return std::string(e.what()).find("lost rank 1") != std::string::npos ? kOk : kWrong;
    }
    return kWrong;
  });
  EXPECT_EQ(codes, std::vector<int>(2, kOk));
}

TEST(MultiprocessTest, AStalledPeerTimesOutTheOthersOverTcp) {
  // Rank 2 stops (SIGSTOP: its progress thread too) with its connections open, so nothing
  // tells the others it is gone: they must give up at the timeout with an error naming the wait
  // and rank 2, not hang. A grandchild kills the stopped rank afterwards.
  REQUIRE_SINGLE_THREADED();
  const auto start = std::chrono::steady_clock::now();
  const auto codes = runRanks(3, [](int rank, const std::string& hex) {
    CommConfig config = apitest::testConfig(2s);
    config.transport = "tcp";
    auto comm = std::make_optional(Communicator::initRank(3, uniqueIdFromHex(hex), rank, config));
    if (rank == 2) {
      if (::fork() == 0) {
        std::this_thread::sleep_for(6s);
        ::kill(::getppid(), SIGKILL);
        ::_exit(0);
      }
      ::raise(SIGSTOP);
      return kWrong;  // never continued
    }
    std::string message;
    try {
      Buffer data(DataType::float32, 64);
      comm->allReduce(data.data(), data.data(), 64, DataType::float32, ReduceOp::sum);
    } catch (const UserError& e) {
      // The first rank to time out (TimeoutError) names the wait and the stalled rank; it
      // aborts the other (CommError) with that cause.
      std::fprintf(stderr, "rank %d (expected): %s\n", rank, e.what());
      message = e.what();
    }
    if (message.find("timed out after 2000 ms") == std::string::npos ||
        message.find("waits for a message from rank 2") == std::string::npos)
      return kWrong;
    comm.reset();  // leaves the failed group
    // The survivors go on with a fresh communicator from the same id, untouched by the failure.
    Communicator fresh = Communicator::initRank(2, uniqueIdFromHex(hex), rank, config);
    return allReduceIsExact(fresh, 10'000) ? kOk : kWrong;
  });
  EXPECT_EQ(codes[0], kOk);
  EXPECT_EQ(codes[1], kOk);
  EXPECT_EQ(codes[2], -1) << "killed while stopped";
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
}

}  // namespace
}  // namespace chorus
