// Manual threadblock placement (OpOptions::sendTb / recvTb): honoured when consistent, and a
// clear CompileError when a threadblock would need two send peers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pass_test_util.h"
#include "support/error.h"
#include "verify/verify.h"

namespace chorus::testing {
namespace {

using ::testing::HasSubstr;

// Ring AllGather where each rank's sends run on threadblock 1 and its receives on 0.
std::unique_ptr<lang::Program> pinnedRingAllGather(int ranks) {
  auto p = std::make_unique<lang::Program>("pinned", lang::allGather(ranks, 1, false));
  for (int r = 0; r < ranks; ++r) {
    auto c = p->chunk(r, lang::Buffer::input, 0).copy(r, lang::Buffer::output, r, {.sendTb = 2});
    for (int s = 1; s < ranks; ++s)
      c = c.copy((r + s) % ranks, lang::Buffer::output, r, {.sendTb = 1, .recvTb = 0});
  }
  return p;
}

TEST(ManualPlacement, ThreadblockHintsAreKept) {
  auto p = pinnedRingAllGather(4);
  const auto result = compileWith(*p);
  for (const auto& rank : result.algorithm.ranks) {
    ASSERT_EQ(rank.threadblocks.size(), 3u);
    EXPECT_EQ(rank.threadblocks[0].recvPeer, (rank.rank + 3) % 4);
    EXPECT_EQ(rank.threadblocks[0].sendPeer, -1);
    EXPECT_EQ(rank.threadblocks[1].sendPeer, (rank.rank + 1) % 4);
    EXPECT_EQ(rank.threadblocks[1].recvPeer, -1);
    // The local copy pinned to threadblock 2.
    ASSERT_EQ(rank.threadblocks[2].steps.size(), 1u);
    EXPECT_EQ(rank.threadblocks[2].steps[0].op, ir::OpKind::copy);
  }
  EXPECT_TRUE(verify::verifyAlgorithm(result.algorithm).ok());
}

TEST(ManualPlacement, TwoSendPeersOnOneThreadblockIsAnError) {
  lang::Program p("bad", lang::allGather(3, 1, false));
  p.chunk(0, lang::Buffer::input, 0).copy(1, lang::Buffer::output, 0, {.sendTb = 0});
  p.chunk(0, lang::Buffer::input, 0).copy(2, lang::Buffer::output, 0, {.sendTb = 0});
  try {
    compileWith(p, {"verify"});
    FAIL() << "expected a CompileError";
  } catch (const CompileError& e) {
    EXPECT_THAT(e.what(), HasSubstr("manual_placement_test.cpp:"));
  }
}

}  // namespace
}  // namespace chorus::testing
