// Point-to-point send/recv on initAll communicators: pairs outside a group, ring exchanges
// inside a group (from one thread and from one thread per rank), zero counts, messages larger
// than a whole FIFO, sends to self, and mismatched sends and receives.
#include <gtest/gtest.h>

#include "api_test_util.h"

namespace chorus {
namespace {

using apitest::Buffer;

void fill(Buffer& b, std::size_t count, int rank) {
  for (std::size_t i = 0; i < count; ++i)
    b.set(i, static_cast<long>((i * 7 + static_cast<std::size_t>(rank) * 13) % 101));
}

bool holdsRankData(const Buffer& b, std::size_t count, int rank) {
  for (std::size_t i = 0; i < count; ++i)
    if (!b.holds(i, static_cast<long>((i * 7 + static_cast<std::size_t>(rank) * 13) % 101)))
      return false;
  return true;
}

TEST(P2pTest, PairOutsideAGroupOnePerThread) {
  auto comms = Communicator::initAll(2, apitest::testConfig());
  for (std::size_t count : {std::size_t{1}, std::size_t{1000}, std::size_t{300000}}) {
    Buffer out(DataType::float32, count), in(DataType::float32, count);
    fill(out, count, 0);
    apitest::onThreads(2, [&](int r) {
      if (r == 0) comms[0].send(out.data(), count, DataType::float32, 1);
      if (r == 1) comms[1].recv(in.data(), count, DataType::float32, 0);
    });
    EXPECT_TRUE(holdsRankData(in, count, 0)) << count;
  }
}

TEST(P2pTest, MessagesLargerThanTheFifoStreamThrough) {
  CommConfig config = apitest::testConfig();
  config.slots = 2;
  config.slotBytes = 4096;
  auto comms = Communicator::initAll(2, config);
  const std::size_t count = 100'000;  // 800 KB through 8 KB of FIFO
  Buffer out(DataType::float64, count), in(DataType::float64, count);
  fill(out, count, 1);
  apitest::onThreads(2, [&](int r) {
    if (r == 1) comms[1].send(out.data(), count, DataType::float64, 0);
    if (r == 0) comms[0].recv(in.data(), count, DataType::float64, 1);
  });
  EXPECT_TRUE(holdsRankData(in, count, 1));
}

// Every rank sends to the next and receives from the previous, recv issued first (it would
// deadlock if each call blocked on its own).
void ringExchange(std::vector<Communicator>& comms, apitest::Drive how, std::size_t count) {
  const int n = static_cast<int>(comms.size());
  std::vector<Buffer> out, in;
  for (int r = 0; r < n; ++r) {
    out.emplace_back(DataType::int32, count);
    in.emplace_back(DataType::int32, count);
    fill(out.back(), count, r);
  }
  auto issue = [&](int r) {
    comms[r].recv(in[r].data(), count, DataType::int32, (r + n - 1) % n);
    comms[r].send(out[r].data(), count, DataType::int32, (r + 1) % n);
  };
  if (how == apitest::Drive::group) {
    apitest::inGroup(n, issue);
  } else {
    apitest::onThreads(n, [&](int r) {
      groupStart();
      issue(r);
      groupEnd();
    });
  }
  for (int r = 0; r < n; ++r)
    EXPECT_TRUE(holdsRankData(in[r], count, (r + n - 1) % n)) << "rank " << r;
}

TEST(P2pTest, RingExchangeInOneGroupFromOneThread) {
  auto comms = Communicator::initAll(4, apitest::testConfig());
  for (std::size_t count : {std::size_t{0}, std::size_t{5}, std::size_t{200'000}})
    ringExchange(comms, apitest::Drive::group, count);
}

TEST(P2pTest, RingExchangeInAGroupPerThread) {
  auto comms = Communicator::initAll(3, apitest::testConfig());
  for (std::size_t count : {std::size_t{0}, std::size_t{5}, std::size_t{200'000}})
    ringExchange(comms, apitest::Drive::threads, count);
}

TEST(P2pTest, AllToAllBySendRecvIncludingSelf) {
  const int n = 4;
  const std::size_t count = 33;
  auto comms = Communicator::initAll(n, apitest::testConfig());
  std::vector<Buffer> out, in;
  for (int r = 0; r < n; ++r) {
    out.emplace_back(DataType::uint8, count * n);
    in.emplace_back(DataType::uint8, count * n);
    for (std::size_t i = 0; i < count * n; ++i)
      out.back().set(i, static_cast<long>((static_cast<std::size_t>(r) * 50 + i) % 256));
  }
  apitest::inGroup(n, [&](int r) {
    for (int p = 0; p < n; ++p) {
      comms[r].send(out[r].at(count * p), count, DataType::uint8, p);
      comms[r].recv(in[r].at(count * p), count, DataType::uint8, p);
    }
  });
  for (int r = 0; r < n; ++r)
    for (int p = 0; p < n; ++p)
      for (std::size_t i = 0; i < count; ++i)
        ASSERT_TRUE(
            in[r].holds(count * p + i, static_cast<long>((static_cast<std::size_t>(p) * 50 +
                                                          count * static_cast<std::size_t>(r) + i) %
                                                         256)))
            << r << " from " << p << " [" << i << "]";
}

TEST(P2pTest, SeveralMessagesToOnePeerArriveInOrder) {
  auto comms = Communicator::initAll(2, apitest::testConfig());
  std::vector<Buffer> out, in;
  for (int m = 0; m < 5; ++m) {
    out.emplace_back(DataType::int64, 10 + m);
    in.emplace_back(DataType::int64, 10 + m);
    fill(out.back(), 10 + m, m);
  }
  apitest::inGroup(2, [&](int r) {
    for (int m = 0; m < 5; ++m) {
      if (r == 0) comms[0].send(out[m].data(), 10 + m, DataType::int64, 1);
      if (r == 1) comms[1].recv(in[m].data(), 10 + m, DataType::int64, 0);
    }
  });
  for (int m = 0; m < 5; ++m)
    EXPECT_TRUE(holdsRankData(in[m], 10 + m, m)) << m;
}

TEST(P2pTest, MismatchedCountsNameBothSides) {
  auto comms = Communicator::initAll(2, apitest::testConfig());
  Buffer out(DataType::float32, 12), in(DataType::float32, 12);
  std::string recvError;
  apitest::onThreads(2, [&](int r) {
    if (r == 0) {
      try {
        comms[0].send(out.data(), 12, DataType::float32, 1);
      } catch (const CommError&) {  // the send may also see the receiver's abort
      }
    } else {
      recvError = apitest::messageOf<CommError>(
          [&] { comms[1].recv(in.data(), 10, DataType::float32, 0); });
    }
  });
  EXPECT_NE(recvError.find("recv #0 from rank 0 (count 10 float32)"), std::string::npos)
      << recvError;
  EXPECT_NE(recvError.find("send #0 (count 12 float32)"), std::string::npos) << recvError;
  // The sender's communicator learns of it too.
  EXPECT_NE(comms[0].asyncError().find("count 12 float32"), std::string::npos)
      << comms[0].asyncError();
  EXPECT_NE(apitest::messageOf<CommError>([&] {
              comms[0].send(out.data(), 1, DataType::float32, 1);
            }).find("communicator failed"),
            std::string::npos);
}

TEST(P2pTest, MismatchedDatatypeIsACommError) {
  auto comms = Communicator::initAll(2, apitest::testConfig());
  Buffer out(DataType::int32, 4), in(DataType::float32, 4);
  const std::string message = apitest::messageOf<CommError>([&] {
    apitest::inGroup(2, [&](int r) {
      if (r == 0) comms[0].send(out.data(), 4, DataType::int32, 1);
      if (r == 1) comms[1].recv(in.data(), 4, DataType::float32, 0);
    });
  });
  EXPECT_NE(message.find("int32"), std::string::npos) << message;
  EXPECT_NE(message.find("float32"), std::string::npos) << message;
}

TEST(P2pTest, SendToSelfNeedsAMatchingRecvInTheGroup) {
  auto comms = Communicator::initAll(2, apitest::testConfig());
  Buffer out(DataType::int32, 4), in(DataType::int32, 4);
  const std::string message =
      apitest::messageOf<OptionError>([&] { comms[0].send(out.data(), 4, DataType::int32, 0); });
  EXPECT_NE(message.find("matching recv"), std::string::npos) << message;
}

TEST(P2pTest, BadArgumentsAreOptionErrorsAndLeaveTheCommunicatorUsable) {
  auto comms = Communicator::initAll(2, apitest::testConfig());
  Buffer b(DataType::int32, 4);
  EXPECT_NE(apitest::messageOf<OptionError>([&] {
              comms[0].send(b.data(), 4, DataType::int32, 2);
            }).find("peer 2 is not a rank"),
            std::string::npos);
  EXPECT_NE(apitest::messageOf<OptionError>([&] {
              comms[0].recv(nullptr, 4, DataType::int32, 1);
            }).find("null"),
            std::string::npos);
  EXPECT_NE(apitest::messageOf<OptionError>([&] {
              comms[0].send(b.data(), 4, static_cast<DataType>(99), 1);
            }).find("datatype"),
            std::string::npos);
  EXPECT_EQ(comms[0].asyncError(), "");
  ringExchange(comms, apitest::Drive::group, 3);
}

}  // namespace
}  // namespace chorus
