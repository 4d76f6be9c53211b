// Every collective on initAll communicators (thread transport) with 2, 3 and 4 ranks, driven by
// a group from one thread and by one thread per rank, on the cpu executor and on the device
// interpreter's host build ("device", docs/gpu.md); in place and out of place; several data
// types and operators; counts that do not divide evenly. Every output element is checked
// exactly against a sequential reference.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "api_test_util.h"
#include "ir/algorithm.h"

namespace chorus {
namespace {

using apitest::Buffer;
using apitest::Drive;
using ir::CollectiveKind;

struct CallShape {
  CollectiveKind kind = CollectiveKind::allreduce;
  std::size_t count = 0;
  DataType type = DataType::float32;
  ReduceOp op = ReduceOp::sum;
  bool inPlace = false;
  int root = 0;
  std::string describe() const {
    return fmt::format("{} count {} {} {} {} root {}", ir::collectiveName(kind), count,
                       runtime::dataTypeName(type), runtime::reduceOpName(op),
                       inPlace ? "in place" : "out of place", root);
  }
};

// Elements of the input and output buffers of one rank (NCCL counts).
std::size_t inputLength(const CallShape& s, int n) {
  const bool blocks = s.kind == CollectiveKind::reducescatter || s.kind == CollectiveKind::alltoall;
  return blocks ? s.count * static_cast<std::size_t>(n) : s.count;
}
std::size_t outputLength(const CallShape& s, int n) {
  const bool blocks = s.kind == CollectiveKind::allgather || s.kind == CollectiveKind::alltoall;
  return blocks ? s.count * static_cast<std::size_t>(n) : s.count;
}

struct RankBuffers {
  Buffer send, recv;
  const void* sendPtr = nullptr;
  void* recvPtr = nullptr;
  const Buffer* out = nullptr;  // where the output lives
  std::size_t outOffset = 0;    // element offset of the output in *out
  RankBuffers(DataType t, std::size_t in, std::size_t outLen) : send(t, in), recv(t, outLen) {}
};

class CollectivesTest : public ::testing::TestWithParam<std::tuple<int, Drive, const char*>> {
 protected:
  void SetUp() override {
    nranks_ = std::get<0>(GetParam());
    drive_ = std::get<1>(GetParam());
    CommConfig config = apitest::testConfig();
    config.executor = std::get<2>(GetParam());
    comms_ = Communicator::initAll(nranks_, config);
  }

  // Runs `s` on every rank and checks every output element; returns false on a wrong element.
  void check(const CallShape& s) {
    SCOPED_TRACE(s.describe());
    const int n = nranks_;
    const std::size_t inLen = inputLength(s, n);
    const std::size_t outLen = outputLength(s, n);
    std::vector<RankBuffers> b;
    for (int r = 0; r < n; ++r)
      b.emplace_back(s.type, std::max(inLen, outLen), std::max(inLen, outLen));
    // in(r, j): the value rank r contributes at input element j.
    auto in = [&](int r, std::size_t j) { return apitest::inputValue(s.op, s.type, r, j); };
    for (int r = 0; r < n; ++r) {
      RankBuffers& rb = b[static_cast<std::size_t>(r)];
      const std::size_t block = s.count * static_cast<std::size_t>(r);
      if (!s.inPlace) {
        for (std::size_t j = 0; j < inLen; ++j)
          rb.send.set(j, in(r, j));
        rb.sendPtr = rb.send.data();
        rb.recvPtr = rb.recv.data();
        rb.out = &rb.recv;
        // NCCL ignores the non-root input of Broadcast and output of Reduce: pass null there.
        if (s.kind == CollectiveKind::broadcast && r != s.root) rb.sendPtr = nullptr;
        if (s.kind == CollectiveKind::reduce && r != s.root) rb.recvPtr = nullptr;
      } else if (s.kind == CollectiveKind::allgather) {
        for (std::size_t j = 0; j < inLen; ++j)
          rb.recv.set(block + j, in(r, j));
        rb.recvPtr = rb.recv.data();
        rb.sendPtr = rb.recv.at(block);
        rb.out = &rb.recv;
      } else {
        for (std::size_t j = 0; j < inLen; ++j)
          rb.send.set(j, in(r, j));
        rb.sendPtr = rb.send.data();
        rb.recvPtr = s.kind == CollectiveKind::reducescatter ? rb.send.at(block) : rb.send.data();
        rb.out = &rb.send;
        rb.outOffset = s.kind == CollectiveKind::reducescatter ? block : 0;
      }
    }
    apitest::drive(drive_, n, [&](int r) {
      RankBuffers& rb = b[static_cast<std::size_t>(r)];
      Communicator& c = comms_[static_cast<std::size_t>(r)];
      switch (s.kind) {
        case CollectiveKind::allreduce:
          return c.allReduce(rb.sendPtr, rb.recvPtr, s.count, s.type, s.op);
        case CollectiveKind::allgather:
          return c.allGather(rb.sendPtr, rb.recvPtr, s.count, s.type);
        case CollectiveKind::reducescatter:
          return c.reduceScatter(rb.sendPtr, rb.recvPtr, s.count, s.type, s.op);
        case CollectiveKind::alltoall:
          return c.allToAll(rb.sendPtr, rb.recvPtr, s.count, s.type);
        case CollectiveKind::broadcast:
          return c.broadcast(rb.sendPtr, rb.recvPtr, s.count, s.type, s.root);
        case CollectiveKind::reduce:
          return c.reduce(rb.sendPtr, rb.recvPtr, s.count, s.type, s.op, s.root);
        default:
          FAIL() << "not a built-in collective";
      }
    });
    ++calls_;
    // Reference: each output element from the definition of the collective.
    auto reduced = [&](std::size_t j) {
      std::vector<long> values;
      for (int q = 0; q < n; ++q)
        values.push_back(in(q, j));
      return apitest::reduceValues(s.op, values);
    };
    for (int r = 0; r < n; ++r) {
      if (s.kind == CollectiveKind::reduce && r != s.root) continue;
      const RankBuffers& rb = b[static_cast<std::size_t>(r)];
      const std::size_t block = s.count * static_cast<std::size_t>(r);
      for (std::size_t i = 0; i < outLen; ++i) {
        long want = 0;
        const std::size_t q = s.count ? i / s.count : 0, k = s.count ? i % s.count : 0;
        switch (s.kind) {
          case CollectiveKind::allreduce:
          case CollectiveKind::reduce:
            want = reduced(i);
            break;
          case CollectiveKind::allgather:
            want = in(static_cast<int>(q), k);
            break;
          case CollectiveKind::reducescatter:
            want = reduced(block + i);
            break;
          case CollectiveKind::alltoall:
            want = in(static_cast<int>(q), block + k);
            break;
          case CollectiveKind::broadcast:
            want = in(s.root, i);
            break;
          default:
            break;
        }
        if (!rb.out->holds(rb.outOffset + i, want)) {
          ADD_FAILURE() << "rank " << r << " output[" << i << "] is wrong (expected " << want
                        << ")";
          return;
        }
      }
    }
  }

  int nranks_ = 0;
  Drive drive_ = Drive::group;
  std::vector<Communicator> comms_;
  std::uint64_t calls_ = 0;
};

const std::vector<std::size_t> kCounts = {1, 7, 1000};

TEST_P(CollectivesTest, AllReduceTypesOpsAndCounts) {
  const std::vector<std::pair<DataType, ReduceOp>> cases = {
      {DataType::float32, ReduceOp::sum}, {DataType::int8, ReduceOp::prod},
      {DataType::float16, ReduceOp::max}, {DataType::bfloat16, ReduceOp::min},
      {DataType::int32, ReduceOp::avg},   {DataType::float64, ReduceOp::avg},
      {DataType::uint32, ReduceOp::sum},  {DataType::int64, ReduceOp::min},
      {DataType::uint8, ReduceOp::max},   {DataType::float32, ReduceOp::avg},
      {DataType::uint64, ReduceOp::prod},
  };
  for (const auto& [type, op] : cases)
    for (std::size_t count : kCounts)
      for (bool inPlace : {false, true})
        check({CollectiveKind::allreduce, count, type, op, inPlace, 0});
  // Large enough for the bandwidth-optimal plan and several FIFO tiles.
  check({CollectiveKind::allreduce, 70001, DataType::float32, ReduceOp::sum, false, 0});
  check({CollectiveKind::allreduce, 70001, DataType::int32, ReduceOp::max, true, 0});
  EXPECT_EQ(comms_[0].sequence(), calls_);
  EXPECT_FALSE(comms_[0].lastPlan().algorithm.empty());
  EXPECT_FALSE(comms_[0].lastPlan().source.empty());
}

TEST_P(CollectivesTest, AllGather) {
  for (DataType type : {DataType::int8, DataType::float32, DataType::float64, DataType::bfloat16})
    for (std::size_t count : kCounts)
      for (bool inPlace : {false, true})
        check({CollectiveKind::allgather, count, type, ReduceOp::sum, inPlace, 0});
}

TEST_P(CollectivesTest, ReduceScatter) {
  const std::vector<std::pair<DataType, ReduceOp>> cases = {{DataType::float32, ReduceOp::sum},
                                                            {DataType::int32, ReduceOp::avg},
                                                            {DataType::float16, ReduceOp::sum},
                                                            {DataType::uint8, ReduceOp::max},
                                                            {DataType::float64, ReduceOp::avg}};
  for (const auto& [type, op] : cases)
    for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{333}})
      for (bool inPlace : {false, true})
        check({CollectiveKind::reducescatter, count, type, op, inPlace, 0});
}

TEST_P(CollectivesTest, AllToAll) {
  for (DataType type : {DataType::float32, DataType::int64, DataType::uint8})
    for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{250}})
      for (bool inPlace : {false, true})
        check({CollectiveKind::alltoall, count, type, ReduceOp::sum, inPlace, 0});
}

TEST_P(CollectivesTest, BroadcastFromEveryRoot) {
  for (int root = 0; root < nranks_; ++root)
    for (DataType type : {DataType::float32, DataType::int8})
      for (std::size_t count : kCounts)
        for (bool inPlace : {false, true})
          check({CollectiveKind::broadcast, count, type, ReduceOp::sum, inPlace, root});
}

TEST_P(CollectivesTest, ReduceToEveryRoot) {
  const std::vector<std::pair<DataType, ReduceOp>> cases = {{DataType::float32, ReduceOp::sum},
                                                            {DataType::int32, ReduceOp::avg},
                                                            {DataType::float16, ReduceOp::max}};
  for (int root = 0; root < nranks_; ++root)
    for (const auto& [type, op] : cases)
      for (std::size_t count : kCounts)
        for (bool inPlace : {false, true})
          check({CollectiveKind::reduce, count, type, op, inPlace, root});
}

TEST_P(CollectivesTest, ZeroCountCallsCompleteAndKeepTheSequence) {
  apitest::drive(drive_, nranks_, [&](int r) {
    comms_[static_cast<std::size_t>(r)].allReduce(nullptr, nullptr, 0, DataType::float32,
                                                  ReduceOp::sum);
    comms_[static_cast<std::size_t>(r)].allGather(nullptr, nullptr, 0, DataType::int8);
  });
  for (const auto& c : comms_)
    EXPECT_EQ(c.sequence(), 2u);
  check({CollectiveKind::allreduce, 7, DataType::float32, ReduceOp::sum, false, 0});
}

TEST_P(CollectivesTest, SeveralCollectivesOfOneRankInOneGroupRunInOrder) {
  // Each rank queues an AllReduce then a Broadcast of its result (which reads it) in one group.
  const std::size_t count = 100;
  std::vector<Buffer> data, bcast;
  for (int r = 0; r < nranks_; ++r) {
    data.emplace_back(DataType::int32, count);
    bcast.emplace_back(DataType::int32, count);
    for (std::size_t i = 0; i < count; ++i)
      data.back().set(i, r + static_cast<long>(i));
  }
  apitest::inGroup(nranks_, [&](int r) {
    auto& c = comms_[static_cast<std::size_t>(r)];
    c.allReduce(data[r].data(), data[r].data(), count, DataType::int32, ReduceOp::sum);
    c.broadcast(data[r].data(), bcast[r].data(), count, DataType::int32, nranks_ - 1);
  });
  const long rankSum = static_cast<long>(nranks_) * (nranks_ - 1) / 2;
  for (int r = 0; r < nranks_; ++r)
    for (std::size_t i = 0; i < count; ++i)
      ASSERT_TRUE(bcast[r].holds(i, rankSum + nranks_ * static_cast<long>(i))) << r << " " << i;
}

TEST_P(CollectivesTest, AGroupOfMoreShapesThanRecentlyUsedOnesKeepsEachCallsPlan) {
  // Each queued call holds its shape although later calls of the group push it out of the
  // communicator's few recent shapes (and, past 256, its memo) before any of them runs.
  constexpr int kCalls = 300;
  std::vector<std::vector<Buffer>> data(static_cast<std::size_t>(nranks_));
  for (int r = 0; r < nranks_; ++r)
    for (int k = 0; k < kCalls; ++k) {
      Buffer& b = data[r].emplace_back(DataType::int32, static_cast<std::size_t>(k + 1));
      for (int i = 0; i <= k; ++i)
        b.set(static_cast<std::size_t>(i), r * 100 + k + i);
    }
  apitest::inGroup(nranks_, [&](int r) {
    for (int k = 0; k < kCalls; ++k)
      comms_[static_cast<std::size_t>(r)].allReduce(data[r][k].data(), data[r][k].data(),
                                                    static_cast<std::size_t>(k + 1),
                                                    DataType::int32, ReduceOp::sum);
  });
  const long rankSum = 100L * nranks_ * (nranks_ - 1) / 2;
  for (int r = 0; r < nranks_; ++r)
    for (int k = 0; k < kCalls; ++k)
      for (int i = 0; i <= k; ++i)
        ASSERT_TRUE(data[r][k].holds(static_cast<std::size_t>(i),
                                     rankSum + static_cast<long>(nranks_) * (k + i)))
            << r << " " << k << " " << i;
  for (const auto& c : comms_)
    EXPECT_EQ(c.sequence(), static_cast<std::uint64_t>(kCalls));
}

INSTANTIATE_TEST_SUITE_P(RanksDriveAndExecutor, CollectivesTest,
                         ::testing::Combine(::testing::Values(2, 3, 4),
                                            ::testing::Values(Drive::group, Drive::threads),
                                            ::testing::Values("cpu", "device")),
                         [](const auto& info) {
                           return fmt::format(
                               "{}ranks_{}_{}", std::get<0>(info.param),
                               std::get<1>(info.param) == Drive::group ? "group" : "threads",
                               std::get<2>(info.param));
                         });

TEST(CommunicatorTest, SingleRankCollectivesCopy) {
  auto comms = Communicator::initAll(1, apitest::testConfig());
  ASSERT_EQ(comms.size(), 1u);
  Buffer in(DataType::float32, 5), out(DataType::float32, 5);
  for (std::size_t i = 0; i < 5; ++i)
    in.set(i, static_cast<long>(i) - 2);
  comms[0].allReduce(in.data(), out.data(), 5, DataType::float32, ReduceOp::avg);
  for (std::size_t i = 0; i < 5; ++i)
    EXPECT_TRUE(out.holds(i, static_cast<long>(i) - 2));
  EXPECT_EQ(comms[0].rank(), 0);
  EXPECT_EQ(comms[0].size(), 1);
}

}  // namespace
}  // namespace chorus
