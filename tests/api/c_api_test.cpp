// The C ABI as a C program would use it (this file includes only chorus/chorus_c.h from chorus):
// init-all, grouped collectives and point-to-point, result codes and chorusGetLastError texts.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "chorus/chorus_c.h"

namespace {

constexpr int kRanks = 4;

std::string lastError(chorusComm_t comm) {
  const char* text = chorusGetLastError(comm);
  return text ? text : "";
}

class CApiTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(chorusCommInitAll(comms_, kRanks, nullptr), chorusSuccess); }
  void TearDown() override {
    for (chorusComm_t c : comms_)
      if (c) {
        EXPECT_EQ(chorusCommDestroy(c), chorusSuccess);
      }
  }
  chorusComm_t comms_[kRanks] = {};
};

TEST_F(CApiTest, GroupedAllReduceAndRanks) {
  const size_t count = 1001;
  std::vector<std::vector<float>> send(kRanks, std::vector<float>(count)),
      recv(kRanks, std::vector<float>(count));
  for (int r = 0; r < kRanks; ++r) {
    int rank = -1, size = -1;
    ASSERT_EQ(chorusCommUserRank(comms_[r], &rank), chorusSuccess);
    ASSERT_EQ(chorusCommCount(comms_[r], &size), chorusSuccess);
    EXPECT_EQ(rank, r);
    EXPECT_EQ(size, kRanks);
    for (size_t i = 0; i < count; ++i)
      send[r][i] = static_cast<float>(r * 10 + static_cast<int>(i % 9));
  }
  ASSERT_EQ(chorusGroupStart(), chorusSuccess);
  for (int r = 0; r < kRanks; ++r)
    ASSERT_EQ(chorusAllReduce(send[r].data(), recv[r].data(), count, chorusFloat, chorusSum,
                              comms_[r], nullptr),
              chorusSuccess);
  ASSERT_EQ(chorusGroupEnd(), chorusSuccess) << lastError(nullptr);
  for (int r = 0; r < kRanks; ++r)
    for (size_t i = 0; i < count; ++i)
      ASSERT_EQ(recv[r][i], 60.0f + 4.0f * static_cast<float>(i % 9)) << r << " " << i;

  chorusResult_t async = chorusInternalError;
  ASSERT_EQ(chorusCommGetAsyncError(comms_[0], &async), chorusSuccess);
  EXPECT_EQ(async, chorusSuccess);
}

TEST_F(CApiTest, NcclNumberedTypesAndOpsMap) {
  // chorusMax = 2 and chorusBfloat16 = 9 follow NCCL's numbering, not chorus::ReduceOp's order.
  std::vector<std::vector<int64_t>> data(kRanks, std::vector<int64_t>(3));
  for (int r = 0; r < kRanks; ++r)
    for (int i = 0; i < 3; ++i)
      data[r][i] = (r == 2 ? 100 : r) + i;
  ASSERT_EQ(chorusGroupStart(), chorusSuccess);
  for (int r = 0; r < kRanks; ++r)
    ASSERT_EQ(chorusAllReduce(data[r].data(), data[r].data(), 3, chorusInt64, chorusMax, comms_[r],
                              nullptr),
              chorusSuccess);
  ASSERT_EQ(chorusGroupEnd(), chorusSuccess) << lastError(nullptr);
  for (int r = 0; r < kRanks; ++r)
    EXPECT_EQ(data[r][1], 101);

  std::vector<std::vector<uint16_t>> bf(kRanks, std::vector<uint16_t>(2, 0x3f80));  // 1.0
  ASSERT_EQ(chorusGroupStart(), chorusSuccess);
  for (int r = 0; r < kRanks; ++r)
    ASSERT_EQ(chorusAllReduce(bf[r].data(), bf[r].data(), 2, chorusBfloat16, chorusSum, comms_[r],
                              nullptr),
              chorusSuccess);
  ASSERT_EQ(chorusGroupEnd(), chorusSuccess) << lastError(nullptr);
  EXPECT_EQ(bf[3][1], 0x4080);  // 4.0 in bfloat16
}

TEST_F(CApiTest, GroupedSendRecvRing) {
  std::vector<std::vector<int32_t>> out(kRanks, std::vector<int32_t>(50)),
      in(kRanks, std::vector<int32_t>(50, -1));
  for (int r = 0; r < kRanks; ++r)
    for (int i = 0; i < 50; ++i)
      out[r][i] = r * 1000 + i;
  ASSERT_EQ(chorusGroupStart(), chorusSuccess);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(chorusSend(out[r].data(), 50, chorusInt32, (r + 1) % kRanks, comms_[r], nullptr),
              chorusSuccess);
    ASSERT_EQ(
        chorusRecv(in[r].data(), 50, chorusInt32, (r + kRanks - 1) % kRanks, comms_[r], nullptr),
        chorusSuccess);
  }
  ASSERT_EQ(chorusGroupEnd(), chorusSuccess) << lastError(nullptr);
  for (int r = 0; r < kRanks; ++r)
    EXPECT_EQ(in[r][7], ((r + kRanks - 1) % kRanks) * 1000 + 7);
}

TEST_F(CApiTest, BadArgumentsGiveInvalidArgumentWithAMessage) {
  float x = 0;
  EXPECT_EQ(chorusAllReduce(&x, &x, 1, static_cast<chorusDataType_t>(chorusNumTypes), chorusSum,
                            comms_[0], nullptr),
            chorusInvalidArgument);
  EXPECT_NE(lastError(comms_[0]).find("datatype 10 is not a chorusDataType_t"), std::string::npos)
      << lastError(comms_[0]);
  EXPECT_EQ(
      chorusAllReduce(&x, &x, 1, chorusFloat, static_cast<chorusRedOp_t>(7), comms_[0], nullptr),
      chorusInvalidArgument);
  EXPECT_NE(lastError(comms_[0]).find("reduction operator 7"), std::string::npos);
  int stream = 0;
  EXPECT_EQ(chorusBroadcast(&x, &x, 1, chorusFloat, 0, comms_[1], &stream), chorusInvalidArgument);
  EXPECT_NE(lastError(comms_[1]).find("a stream was passed, but executor 'cpu'"), std::string::npos)
      << lastError(comms_[1]);
  EXPECT_EQ(chorusReduce(&x, &x, 1, chorusFloat, chorusSum, 9, comms_[2], nullptr),
            chorusInvalidArgument);
  EXPECT_NE(lastError(comms_[2]).find("root 9"), std::string::npos) << lastError(comms_[2]);
  EXPECT_EQ(chorusSend(nullptr, 4, chorusFloat, 1, comms_[3], nullptr), chorusInvalidArgument);
  EXPECT_EQ(chorusAllGather(&x, &x, 1, chorusFloat, nullptr, nullptr), chorusInvalidArgument);
  EXPECT_NE(lastError(nullptr).find("comm is NULL"), std::string::npos);
  EXPECT_EQ(chorusCommCount(comms_[0], nullptr), chorusInvalidArgument);
  EXPECT_EQ(chorusCommInitAll(nullptr, 2, nullptr), chorusInvalidArgument);
  chorusComm_t none[1] = {};
  EXPECT_EQ(chorusCommInitAll(none, 0, nullptr), chorusInvalidArgument);
  EXPECT_NE(lastError(nullptr).find("nranks is 0"), std::string::npos) << lastError(nullptr);
  EXPECT_EQ(chorusGroupEnd(), chorusInvalidUsage);
  EXPECT_NE(lastError(nullptr).find("chorusGroupStart"), std::string::npos);
  // Nothing failed the communicators.
  chorusResult_t async = chorusInternalError;
  ASSERT_EQ(chorusCommGetAsyncError(comms_[0], &async), chorusSuccess);
  EXPECT_EQ(async, chorusSuccess);
}

TEST_F(CApiTest, MismatchedCallsAreInvalidUsage) {
  std::vector<std::vector<float>> data(kRanks, std::vector<float>(8));
  ASSERT_EQ(chorusGroupStart(), chorusSuccess);
  for (int r = 0; r < kRanks; ++r)
    ASSERT_EQ(chorusAllReduce(data[r].data(), data[r].data(), r == 1 ? 8 : 6, chorusFloat,
                              chorusSum, comms_[r], nullptr),
              chorusSuccess);
  EXPECT_EQ(chorusGroupEnd(), chorusInvalidUsage);
  EXPECT_NE(lastError(nullptr).find("different call"), std::string::npos) << lastError(nullptr);
  // A later call on a failed communicator is invalid usage too, and says why.
  EXPECT_EQ(chorusAllReduce(data[0].data(), data[0].data(), 8, chorusFloat, chorusSum, comms_[0],
                            nullptr),
            chorusInvalidUsage);
  EXPECT_NE(lastError(comms_[0]).find("destroy it"), std::string::npos);
}

TEST_F(CApiTest, AbortGivesPeersRemoteErrors) {
  ASSERT_EQ(chorusCommAbort(comms_[0]), chorusSuccess);  // aborts and frees, as ncclCommAbort
  comms_[0] = nullptr;
  std::vector<std::vector<double>> data(kRanks, std::vector<double>(4));
  chorusResult_t results[kRanks] = {};
  {
    std::vector<std::thread> threads;
    for (int r = 1; r < kRanks; ++r)
      threads.emplace_back([&, r] {
        results[r] = chorusAllReduce(data[r].data(), data[r].data(), 4, chorusDouble, chorusSum,
                                     comms_[r], nullptr);
      });
    for (auto& t : threads)
      t.join();
  }
  for (int r = 1; r < kRanks; ++r) {
    EXPECT_EQ(results[r], chorusRemoteError) << r << ": " << lastError(comms_[r]);
    EXPECT_NE(lastError(comms_[r]).find("chorusCommAbort"), std::string::npos);
    chorusResult_t async = chorusSuccess;
    ASSERT_EQ(chorusCommGetAsyncError(comms_[r], &async), chorusSuccess);
    EXPECT_EQ(async, chorusRemoteError);
  }
}

TEST(CApiEnvTest, TimeoutIsReportedAsChorusTimeout) {
  setenv("CHORUS_TIMEOUT", "200ms", 1);
  chorusComm_t comms[2] = {};
  ASSERT_EQ(chorusCommInitAll(comms, 2, nullptr), chorusSuccess);
  unsetenv("CHORUS_TIMEOUT");
  int x = 1;
  EXPECT_EQ(chorusAllReduce(&x, &x, 1, chorusInt, chorusSum, comms[0], nullptr), chorusTimeout);
  EXPECT_NE(lastError(comms[0]).find("allreduce #0 timed out after 200 ms"), std::string::npos)
      << lastError(comms[0]);
  chorusResult_t async = chorusSuccess;
  ASSERT_EQ(chorusCommGetAsyncError(comms[0], &async), chorusSuccess);
  EXPECT_EQ(async, chorusTimeout);
  ASSERT_EQ(chorusCommGetAsyncError(comms[1], &async), chorusSuccess);
  EXPECT_EQ(async, chorusRemoteError);
  EXPECT_NE(lastError(comms[1]).find("timed out"), std::string::npos);
  for (chorusComm_t c : comms)
    EXPECT_EQ(chorusCommDestroy(c), chorusSuccess);
}

TEST(CApiEnvTest, VersionErrorStringsAndUniqueId) {
  int version = 0;
  ASSERT_EQ(chorusGetVersion(&version), chorusSuccess);
  EXPECT_EQ(version, CHORUS_VERSION_CODE);
  EXPECT_EQ(chorusGetVersion(nullptr), chorusInvalidArgument);
  std::vector<std::string> texts;
  for (int code : {0, 2, 3, 4, 5, 6, 7, 8}) {
    texts.push_back(chorusGetErrorString(static_cast<chorusResult_t>(code)));
    EXPECT_FALSE(texts.back().empty());
  }
  std::sort(texts.begin(), texts.end());
  EXPECT_EQ(std::unique(texts.begin(), texts.end()), texts.end());
  EXPECT_NE(std::string(chorusGetErrorString(static_cast<chorusResult_t>(77))).find("unknown"),
            std::string::npos);
  chorusUniqueId a, b;
  ASSERT_EQ(chorusGetUniqueId(&a), chorusSuccess);
  ASSERT_EQ(chorusGetUniqueId(&b), chorusSuccess);
  EXPECT_NE(memcmp(a.internal, b.internal, sizeof(a.internal)), 0);
  EXPECT_EQ(chorusGetUniqueId(nullptr), chorusInvalidArgument);
  chorusComm_t comm = nullptr;
  chorusUniqueId junk;
  memset(&junk, 0, sizeof(junk));
  EXPECT_EQ(chorusCommInitRank(&comm, 2, junk, 0), chorusInvalidArgument);
  EXPECT_EQ(comm, nullptr);
  EXPECT_FALSE(lastError(nullptr).empty());
}

}  // namespace
