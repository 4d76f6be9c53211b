// The thread transport's published calls: each rank's text is stored once per shape and read
// whole by its peers, also while the owner keeps publishing from its own thread.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>

#include "transport/thread/thread_group.h"

namespace chorus::transport {
namespace {

TEST(ThreadGroupCalls, NumberedCallsReadWholeAndPlainTextReplacesTheShape) {
  ThreadGroup group(2);
  ConnectionSet& owner = group.rank(1);
  ConnectionSet& reader = group.rank(0);
  EXPECT_EQ(reader.peerCall(1), "");
  owner.publishNumberedCall(5, "allreduce", 7, "(count 3 float32 sum)");
  owner.publishNumberedCall(5, "allreduce", 8, "(count 3 float32 sum)");
  EXPECT_EQ(reader.peerCall(1), "allreduce #8 (count 3 float32 sum)");
  owner.publishNumberedCall(6, "allgather", 9, "(count 4 int32)");
  EXPECT_EQ(reader.peerCall(1), "allgather #9 (count 4 int32)");
  owner.publishCall("p2p: send 4 B to rank 0");
  EXPECT_EQ(reader.peerCall(1), "p2p: send 4 B to rank 0");
  // The plain text replaced the shape's, so the same shape key stores its text again.
  owner.publishNumberedCall(6, "allgather", 10, "(count 4 int32)");
  EXPECT_EQ(reader.peerCall(1), "allgather #10 (count 4 int32)");
  // Rank 0's own call is separate.
  reader.publishNumberedCall(6, "allgather", 10, "(count 4 int32)");
  EXPECT_EQ(owner.peerCall(0), "allgather #10 (count 4 int32)");
}

TEST(ThreadGroupCalls, LongTextsAreCutAndNeverTorn) {
  ThreadGroup group(2);
  const std::string longDetails(300, 'x');
  group.rank(1).publishNumberedCall(1, "allreduce", 0, longDetails);
  const std::string read = group.rank(0).peerCall(1);
  EXPECT_EQ(read.rfind("allreduce #0 xxx", 0), 0u) << read;
  EXPECT_LE(read.size(), 256u);

  // A peer reading while the owner switches between two shapes sees one of them whole.
  auto publish = [&](std::uint64_t n) {
    group.rank(1).publishNumberedCall(2 + n % 2, n % 2 ? "allgather" : "allreduce", n,
                                      n % 2 ? "(count 4 int32)" : "(count 3 float32 sum)");
  };
  publish(0);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (std::uint64_t n = 1; n < 20000; ++n)
      publish(n);
    done = true;
  });
  std::string torn;
  while (!done && torn.empty()) {
    const std::string text = group.rank(0).peerCall(1);
    const bool allreduce =
        text.rfind("allreduce #", 0) == 0 && text.ends_with(" (count 3 float32 sum)");
    const bool allgather = text.rfind("allgather #", 0) == 0 && text.ends_with(" (count 4 int32)");
    if (!allreduce && !allgather) torn = text;
  }
  writer.join();
  EXPECT_EQ(torn, "");
}

}  // namespace
}  // namespace chorus::transport
