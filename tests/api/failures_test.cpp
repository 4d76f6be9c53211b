// How communicators fail: mismatched calls, abort, timeouts, bad arguments and options. Every
// failure is a typed exception naming what went wrong; a failed communicator can be destroyed
// and replaced.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

#include "api_test_util.h"

namespace chorus {
namespace {

using apitest::Buffer;
using namespace std::chrono_literals;

TEST(FailuresTest, MismatchedCountsFailEveryRankNamingTheCalls) {
  for (apitest::Drive how : {apitest::Drive::group, apitest::Drive::threads}) {
    const int n = 3;
    auto comms = Communicator::initAll(n, apitest::testConfig());
    std::vector<Buffer> buffers;
    for (int r = 0; r < n; ++r)
      buffers.emplace_back(DataType::float32, 12);
    std::vector<std::string> errors(n);
    auto call = [&](int r) {
      const std::size_t count = r == 2 ? 12 : 10;
      errors[r] = apitest::messageOf<CommError>([&] {
        comms[r].allReduce(buffers[r].data(), buffers[r].data(), count, DataType::float32,
                           ReduceOp::sum);
      });
    };
    if (how == apitest::Drive::threads) {
      apitest::onThreads(n, call);
    } else {
      // groupEnd throws one error; every rank's own failure shows in asyncError().
      const std::string first = apitest::messageOf<CommError>([&] {
        apitest::inGroup(n, [&](int r) {
          const std::size_t count = r == 2 ? 12 : 10;
          comms[r].allReduce(buffers[r].data(), buffers[r].data(), count, DataType::float32,
                             ReduceOp::sum);
        });
      });
      for (int r = 0; r < n; ++r)
        errors[r] = comms[r].asyncError();
      EXPECT_NE(first.find("different call"), std::string::npos) << first;
    }
    for (int r = 0; r < n; ++r) {
      SCOPED_TRACE(errors[r]);
      EXPECT_NE(errors[r].find("different call"), std::string::npos);
      EXPECT_NE(errors[r].find("allreduce #0 (count 1"), std::string::npos);
      EXPECT_FALSE(comms[r].asyncError().empty());
    }
  }
}

TEST(FailuresTest, AbortFailsThePeersPendingAndLaterCalls) {
  const int n = 4;
  auto comms = Communicator::initAll(n, apitest::testConfig());
  std::vector<Buffer> buffers;
  for (int r = 0; r < n; ++r)
    buffers.emplace_back(DataType::int32, 64);
  std::vector<std::string> errors(n);
  apitest::onThreads(n, [&](int r) {
    if (r == 0) {
      std::this_thread::sleep_for(50ms);  // the others are waiting inside their AllReduce
      comms[0].abort("test shuts rank 0 down");
      return;
    }
    errors[r] = apitest::messageOf<CommError>([&] {
      comms[r].allReduce(buffers[r].data(), buffers[r].data(), 64, DataType::int32, ReduceOp::sum);
    });
  });
  for (int r = 1; r < n; ++r) {
    EXPECT_NE(errors[r].find("test shuts rank 0 down"), std::string::npos) << errors[r];
    EXPECT_NE(errors[r].find("allreduce #0"), std::string::npos) << errors[r];
  }
  for (int r = 0; r < n; ++r)
    EXPECT_NE(comms[r].asyncError().find("test shuts rank 0 down"), std::string::npos) << r;
  const std::string later = apitest::messageOf<CommError>([&] {
    comms[0].allReduce(buffers[0].data(), buffers[0].data(), 64, DataType::int32, ReduceOp::sum);
  });
  EXPECT_NE(later.find("destroy it and create a new one"), std::string::npos) << later;

  // A failed set is destroyed without waiting; a fresh one in the same process works.
  comms.clear();
  auto fresh = Communicator::initAll(n, apitest::testConfig());
  apitest::inGroup(n, [&](int r) {
    buffers[r].set(0, r + 1);
    fresh[r].allReduce(buffers[r].data(), buffers[r].data(), 1, DataType::int32, ReduceOp::sum);
  });
  for (int r = 0; r < n; ++r)
    EXPECT_TRUE(buffers[r].holds(0, n * (n + 1) / 2));
  for (const auto& c : fresh)
    EXPECT_EQ(c.asyncError(), "");
}

TEST(FailuresTest, AMissingRankTimesOutNamingTheCallAndSequence) {
  auto comms = Communicator::initAll(2, apitest::testConfig(300ms));
  Buffer a(DataType::float32, 16), b(DataType::float32, 16);
  apitest::inGroup(2, [&](int r) {
    comms[r].allReduce((r ? b : a).data(), (r ? b : a).data(), 16, DataType::float32,
                       ReduceOp::sum);
  });
  const auto start = std::chrono::steady_clock::now();
  const std::string message = apitest::messageOf<TimeoutError>(
      [&] { comms[0].allReduce(a.data(), a.data(), 16, DataType::float32, ReduceOp::sum); });
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_NE(message.find("allreduce #1"), std::string::npos) << message;
  EXPECT_NE(message.find("timed out after 300 ms"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 1 is running allreduce #0"), std::string::npos) << message;
  EXPECT_LT(waited, 30s);  // the configured deadline applied, not the 300 s default
  // The rank that never called finds the communicator failed.
  EXPECT_NE(apitest::messageOf<CommError>([&] {
              comms[1].allReduce(b.data(), b.data(), 16, DataType::float32, ReduceOp::sum);
            }).find("timed out"),
            std::string::npos);
}

// The thread transport too: a rank whose communicator is destroyed while another still calls
// is reported at once (tests/api/multiprocess_test.cpp covers shm and tcp).
TEST(FailuresTest, ADestroyedThreadRankFailsWhatStillNeedsItAtOnce) {
  for (const bool collective : {true, false}) {
    auto comms = Communicator::initAll(2, apitest::testConfig(30s));
    Buffer a(DataType::float32, 16), b(DataType::float32, 16);
    apitest::inGroup(2, [&](int r) {
      comms[r].allReduce((r ? b : a).data(), (r ? b : a).data(), 16, DataType::float32,
                         ReduceOp::sum);
    });
    { Communicator leaving = std::move(comms[1]); }
    const auto start = std::chrono::steady_clock::now();
    const std::string message = apitest::messageOf<CommError>([&] {
      if (collective)
        comms[0].allReduce(a.data(), a.data(), 16, DataType::float32, ReduceOp::sum);
      else
        comms[0].recv(a.data(), 16, DataType::float32, 1);
    });
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1s) << message;
    EXPECT_THAT(message, ::testing::HasSubstr("rank 1 left the group")) << message;
  }
}

TEST(FailuresTest, WithThreeRanksEveryCallerFailsWhenOneIsMissing) {
  auto comms = Communicator::initAll(3, apitest::testConfig(300ms));
  std::vector<Buffer> buffers;
  for (int r = 0; r < 3; ++r)
    buffers.emplace_back(DataType::int8, 8);
  std::vector<std::string> errors(2);
  apitest::onThreads(2, [&](int r) {
    try {
      comms[r].broadcast(buffers[r].data(), buffers[r].data(), 8, DataType::int8, 2);
    } catch (const TimeoutError& e) {
      errors[r] = e.what();
    } catch (const CommError& e) {  // the other caller's timeout aborted the group first
      errors[r] = e.what();
    }
  });
  for (const auto& e : errors) {
    EXPECT_NE(e.find("broadcast #0"), std::string::npos) << e;
    EXPECT_NE(e.find("timed out"), std::string::npos) << e;
  }
}

TEST(FailuresTest, BadArgumentsAreOptionErrorsAndLeaveTheCommunicatorUsable) {
  auto comms = Communicator::initAll(2, apitest::testConfig());
  Buffer b(DataType::float32, 8);
  auto expectOption = [](const std::string& message, const std::string& part) {
    EXPECT_NE(message.find(part), std::string::npos) << message;
  };
  expectOption(apitest::messageOf<OptionError>([&] {
                 comms[0].allReduce(nullptr, b.data(), 8, DataType::float32, ReduceOp::sum);
               }),
               "sendbuf is null but count is 8");
  expectOption(apitest::messageOf<OptionError>(
                   [&] { comms[0].allGather(b.data(), nullptr, 1, DataType::float32); }),
               "recvbuf is null");
  expectOption(apitest::messageOf<OptionError>(
                   [&] { comms[1].broadcast(b.data(), b.data(), 8, DataType::float32, 2); }),
               "root 2 is not a rank of this 2-rank communicator");
  expectOption(apitest::messageOf<OptionError>([&] {
                 comms[0].reduce(b.data(), b.data(), 8, DataType::float32, ReduceOp::sum, -1);
               }),
               "root -1");
  expectOption(apitest::messageOf<OptionError>([&] {
                 comms[0].allReduce(b.data(), b.data(), 8, DataType::float32,
                                    static_cast<ReduceOp>(42));
               }),
               "reduction operator value 42");
  expectOption(apitest::messageOf<OptionError>(
                   [&] { comms[0].allToAll(b.data(), b.data(), SIZE_MAX / 3, DataType::float64); }),
               "too large");
  // A stream needs executor "cuda": the host executors finish every call before returning.
  int notAStream = 0;
  expectOption(apitest::messageOf<OptionError>([&] {
                 comms[0].allReduce(b.data(), b.data(), 8, DataType::float32, ReduceOp::sum,
                                    &notAStream);
               }),
               "allreduce: a stream was passed, but executor 'cpu'");
  expectOption(apitest::messageOf<OptionError>(
                   [&] { comms[0].send(b.data(), 8, DataType::float32, 1, &notAStream); }),
               "send: a stream was passed");
  // Nothing reached the peer: the pair still works, with sequence numbers in step.
  EXPECT_EQ(comms[0].sequence(), 0u);
  std::vector<Buffer> own{Buffer(DataType::float32, 8), Buffer(DataType::float32, 8)};
  apitest::inGroup(2, [&](int r) {
    comms[r].allReduce(own[r].data(), own[r].data(), 8, DataType::float32, ReduceOp::max);
  });
  EXPECT_EQ(comms[1].sequence(), 1u);
}

TEST(FailuresTest, BadArgumentsInsideAGroupThrowAtTheCall) {
  auto comms = Communicator::initAll(2, apitest::testConfig());
  Buffer b0(DataType::float32, 8), b1(DataType::float32, 8);  // one per rank: no shared data
  groupStart();
  comms[0].allReduce(b0.data(), b0.data(), 8, DataType::float32, ReduceOp::sum);
  EXPECT_THROW(comms[1].allReduce(nullptr, b1.data(), 8, DataType::float32, ReduceOp::sum),
               OptionError);
  comms[1].allReduce(b1.data(), b1.data(), 8, DataType::float32, ReduceOp::sum);
  groupEnd();
  EXPECT_EQ(comms[0].sequence(), 1u);
}

TEST(FailuresTest, GroupEndWithoutGroupStartIsAnOptionError) {
  EXPECT_NE(apitest::messageOf<OptionError>([] { groupEnd(); }).find("groupStart"),
            std::string::npos);
}

TEST(FailuresTest, AMovedFromCommunicatorIsAnOptionError) {
  auto comms = Communicator::initAll(2, apitest::testConfig());
  Communicator moved = std::move(comms[0]);
  EXPECT_EQ(moved.rank(), 0);
  EXPECT_NE(apitest::messageOf<OptionError>([&] { (void)comms[0].rank(); }).find("moved from"),
            std::string::npos);
}

TEST(FailuresTest, DestroyingACommunicatorDropsItsQueuedGroupCalls) {
  auto comms = Communicator::initAll(2, apitest::testConfig());
  Buffer b(DataType::float32, 8);
  groupStart();
  comms[0].allReduce(b.data(), b.data(), 8, DataType::float32, ReduceOp::sum);
  comms[1].allReduce(b.data(), b.data(), 8, DataType::float32, ReduceOp::sum);
  comms.clear();
  groupEnd();  // nothing left to run
}

TEST(FailuresTest, BadOptionsNameTheFieldOrVariable) {
  auto expectOption = [](const CommConfig& config, const std::string& part) {
    const std::string message =
        apitest::messageOf<OptionError>([&] { Communicator::initAll(2, config); });
    EXPECT_NE(message.find(part), std::string::npos) << message;
  };
  CommConfig slots;
  slots.slots = 0;
  expectOption(slots, "CommConfig.slots is 0");
  CommConfig slotBytes;
  slotBytes.slotBytes = 100;
  expectOption(slotBytes, "CommConfig.slotBytes is 100 bytes");
  CommConfig transport;
  transport.transport = "udp";
  expectOption(transport, "CommConfig.transport='udp' is not a transport");
  CommConfig automatic;
  automatic.transport = "auto";
  expectOption(automatic, "'auto' chooses shm or tcp per peer");
  CommConfig timeout;
  timeout.timeout = 0ms;
  expectOption(timeout, "CommConfig.timeout is 0 ms");
  CommConfig algo;
  algo.algo = "allreduce=nosuchalgorithm";
  expectOption(algo, "nosuchalgorithm");
  EXPECT_THROW(Communicator::initAll(0), OptionError);

  ::setenv("CHORUS_TIMEOUT", "soon", 1);
  expectOption(CommConfig{}, "CHORUS_TIMEOUT");
  ::unsetenv("CHORUS_TIMEOUT");
  ::setenv("CHORUS_SLOTS", "5000", 1);
  expectOption(CommConfig{}, "CHORUS_SLOTS");
  ::unsetenv("CHORUS_SLOTS");
  ::setenv("CHORUS_SLOT_BYTES", "2G", 1);
  expectOption(CommConfig{}, "CHORUS_SLOT_BYTES is 2147483648 bytes");
  ::unsetenv("CHORUS_SLOT_BYTES");
}

TEST(FailuresTest, EnvironmentTimeoutApplies) {
  ::setenv("CHORUS_TIMEOUT", "200ms", 1);
  auto comms = Communicator::initAll(2);
  ::unsetenv("CHORUS_TIMEOUT");
  Buffer b(DataType::float32, 8);
  const std::string message = apitest::messageOf<TimeoutError>(
      [&] { comms[0].allReduce(b.data(), b.data(), 8, DataType::float32, ReduceOp::sum); });
  EXPECT_NE(message.find("timed out after 200 ms"), std::string::npos) << message;
}

TEST(FailuresTest, ThreadTransportNeedsInitAll) {
  CommConfig config;
  config.transport = "thread";
  const std::string message =
      apitest::messageOf<OptionError>([&] { Communicator::initRank(2, getUniqueId(), 0, config); });
  EXPECT_NE(message.find("initAll"), std::string::npos) << message;
}

TEST(FailuresTest, UniqueIdHexRoundTripsAndRejectsGarbage) {
  const UniqueId id = getUniqueId();
  EXPECT_EQ(uniqueIdFromHex(uniqueIdToHex(id)).bytes, id.bytes);
  EXPECT_NE(uniqueIdToHex(getUniqueId()), uniqueIdToHex(id));  // a fresh nonce per id
  EXPECT_THROW(uniqueIdFromHex("not an id"), OptionError);
  EXPECT_THROW(Communicator::initRank(2, UniqueId{}, 0), OptionError);
  EXPECT_THROW(Communicator::initRank(2, id, 2), OptionError);
}

}  // namespace
}  // namespace chorus
