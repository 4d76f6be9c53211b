// Verifier: structural problems become `malformed` findings (never exceptions), each naming
// rank, threadblock and step.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ir_builders.h"
#include "verify/verify.h"

namespace chorus::verify {
namespace {

using ir::BufferKind;
using ir::OpKind;
using ::testing::HasSubstr;
using testing::makeRingAllReduce;
using testing::makeStep;
using testing::makeTb;

Finding onlyFinding(const ir::Algorithm& a) {
  const VerifyReport report = verifyAlgorithm(a);
  EXPECT_EQ(report.findings.size(), 1u) << report.describe();
  return report.findings.empty() ? Finding{} : report.findings[0];
}

TEST(VerifyStructure, PeerOutOfRange) {
  ir::Algorithm a = makeRingAllReduce(3);
  a.ranks[2].threadblocks[0].sendPeer = 7;
  const Finding f = onlyFinding(a);
  EXPECT_EQ(f.kind, FindingKind::malformed);
  EXPECT_EQ(f.message,
            "rank 2 tb 0 has send peer 7, which is not a rank; use -1 (none) or "
            "another rank of 0..2");
}

TEST(VerifyStructure, PeerIsOwnRank) {
  ir::Algorithm a = makeRingAllReduce(3);
  a.ranks[1].threadblocks[0].recvPeer = 1;
  EXPECT_THAT(onlyFinding(a).message, HasSubstr("recv peer 1, which is its own rank"));
}

TEST(VerifyStructure, SendWithoutSendPeer) {
  ir::Algorithm a = makeRingAllReduce(3);
  ir::Threadblock tb = makeTb(1, -1, -1);
  tb.steps.push_back(makeStep(OpKind::send, BufferKind::input, 0, BufferKind::input, 0));
  a.ranks[0].threadblocks.push_back(tb);
  const Finding f = onlyFinding(a);
  EXPECT_EQ(f.rank, 0);
  EXPECT_EQ(f.tb, 1);
  EXPECT_EQ(f.step, 0);
  EXPECT_THAT(f.message, HasSubstr("rank 0 tb 1 step 0 (send input[0] to rank -1) sends, but tb "
                                   "1 has no send peer"));
}

TEST(VerifyStructure, ZeroCount) {
  ir::Algorithm a = makeRingAllReduce(3);
  a.ranks[1].threadblocks[0].steps[2].count = 0;
  EXPECT_THAT(onlyFinding(a).message, HasSubstr("rank 1 tb 0 step 2"));
}

TEST(VerifyStructure, IndexBeyondCollective) {
  ir::Algorithm a = makeRingAllReduce(3);
  a.ranks[1].threadblocks[0].steps[0].srcIndex = 3;
  EXPECT_THAT(onlyFinding(a).message,
              HasSubstr("rank 1 tb 0 step 0 (send input[3] to rank 2) reads input[3], beyond the "
                        "input buffer of 3 chunk(s) that allreduce on 3 ranks (chunk factor 3) "
                        "gives rank 1"));
}

TEST(VerifyStructure, IndexBeyondDeclaredExtent) {
  ir::Algorithm a = makeRingAllReduce(3);
  a.ranks[1].inputChunks = 2;
  const Finding f = onlyFinding(a);
  EXPECT_THAT(f.message, HasSubstr("beyond rank 1's declared inputChunks (i_chunks)=2"));
}

TEST(VerifyStructure, BadDependencies) {
  ir::Algorithm a = makeRingAllReduce(3);
  a.ranks[0].threadblocks[0].steps[1].deps = {{3, 0}};
  EXPECT_THAT(onlyFinding(a).message,
              HasSubstr("rank 0 tb 0 step 1 depends on tb 3 step 0, but rank 0 has threadblocks "
                        "0..0 only"));
  a.ranks[0].threadblocks[0].steps[1].deps = {{0, 0}};
  EXPECT_THAT(onlyFinding(a).message, HasSubstr("depends on step 0 of its own threadblock"));
  ir::Threadblock tb = makeTb(1, -1, -1);
  tb.steps.push_back(ir::Step{});
  a.ranks[0].threadblocks.push_back(tb);
  a.ranks[0].threadblocks[0].steps[1].deps = {{1, 4}};
  EXPECT_THAT(onlyFinding(a).message,
              HasSubstr("depends on tb 1 step 4, but that threadblock has 1 step(s)"));
}

TEST(VerifyStructure, MissingHasDependents) {
  ir::Algorithm a = makeRingAllReduce(3);
  ir::Threadblock tb = makeTb(1, -1, -1);
  ir::Step wait;
  wait.deps = {{0, 2}};
  tb.steps.push_back(wait);
  a.ranks[2].threadblocks.push_back(tb);
  const Finding f = onlyFinding(a);
  EXPECT_EQ(f.rank, 2);
  EXPECT_EQ(f.tb, 0);
  EXPECT_EQ(f.step, 2);
  EXPECT_THAT(f.message, HasSubstr("rank 2 tb 0 step 2 is a dependency of tb 1 step 0 but is not "
                                   "marked hasDependents"));
}

TEST(VerifyStructure, TwoThreadblocksOnOneConnection) {
  ir::Algorithm a = makeRingAllReduce(3);
  a.ranks[0].threadblocks.push_back(makeTb(1, 1, -1));
  EXPECT_THAT(onlyFinding(a).message,
              HasSubstr("rank 0 has 2 threadblocks (tb 0 and tb 1) sending to rank 1 on channel "
                        "0"));
}

TEST(VerifyStructure, SendWithoutReceiver) {
  ir::Algorithm a = makeRingAllReduce(3);
  ir::Threadblock tb = makeTb(1, 2, -1, /*channel=*/3);
  tb.steps.push_back(makeStep(OpKind::send, BufferKind::input, 0, BufferKind::input, 0));
  a.ranks[0].threadblocks.push_back(tb);
  EXPECT_THAT(onlyFinding(a).message,
              HasSubstr("rank 0 tb 1 step 0 (send input[0] to rank 2) sends on channel 3, but "
                        "rank 2 has no threadblock receiving from rank 0 on channel 3"));
}

TEST(VerifyStructure, CountMismatchBetweenSendAndReceive) {
  ir::Algorithm a = makeRingAllReduce(3);
  a.ranks[0].threadblocks[0].steps[0].count = 2;
  a.ranks[0].threadblocks[0].steps[0].dstIndex = 0;
  const Finding f = onlyFinding(a);
  EXPECT_THAT(f.message, HasSubstr("rank 0 tb 0 step 0 (send input[0..2) to rank 1) sends 2 "
                                   "chunk(s), but its matching receive rank 1 tb 0 step 1"));
}

TEST(VerifyStructure, RankCountMismatchNeverThrows) {
  ir::Algorithm a = makeRingAllReduce(3);
  a.ranks.pop_back();
  const VerifyReport report = verifyAlgorithm(a);
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_THAT(report.findings[0].message,
              HasSubstr("declares 3 rank(s) (ngpus) but has 2 rank program(s)"));
  ir::Algorithm empty;
  EXPECT_FALSE(verifyAlgorithm(empty).ok());
}

TEST(VerifyStructure, UnderivableCollectiveIsMalformed) {
  ir::Algorithm a = makeRingAllReduce(3);
  a.collective = ir::CollectiveKind::allgather;
  a.chunksPerLoop = 4;  // not a multiple of 3
  const VerifyReport report = verifyAlgorithm(a);
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_THAT(report.findings[0].message, HasSubstr("cannot tell which collective"));
}

// A step's own peer and channel are for one-sided ops; every op today is two-sided and moves
// data over its threadblock's connections (ir/step_endpoints.h).
TEST(VerifyStructure, TwoSidedStepNamesItsOwnPeerOrChannel) {
  ir::Algorithm a = makeRingAllReduce(4);
  a.ranks[1].threadblocks[0].steps[0].peer = 3;
  a.ranks[1].threadblocks[0].steps[0].channel = 1;
  Finding f = onlyFinding(a);
  EXPECT_EQ(f.kind, FindingKind::malformed);
  EXPECT_EQ(f.rank, 1);
  EXPECT_EQ(f.tb, 0);
  EXPECT_EQ(f.step, 0);
  EXPECT_EQ(f.message,
            "rank 1 tb 0 step 0 (send) names peer 3 / channel 1; send moves data over its "
            "threadblock's connection (send peer 2, channel 0): remove the step's peer and "
            "channel (set both to -1)");

  // The peer the threadblock already has, or only a channel, is no better.
  a = makeRingAllReduce(4);
  a.ranks[2].threadblocks[0].steps[1].channel = 0;
  f = onlyFinding(a);
  EXPECT_EQ(f.step, 1);
  EXPECT_EQ(f.message,
            "rank 2 tb 0 step 1 (recvReduceSend) names channel 0; recvReduceSend moves data over "
            "its threadblock's connections (recv peer 1, send peer 3, channel 0): remove the "
            "step's peer and channel (set both to -1)");
  a = makeRingAllReduce(4);
  a.ranks[0].threadblocks[0].steps[6].peer = 3;
  EXPECT_THAT(onlyFinding(a).message,
              HasSubstr("rank 0 tb 0 step 6 (recv) names peer 3; recv moves data over its "
                        "threadblock's connection (recv peer 3, channel 0)"));
}

TEST(VerifyStructure, StepPeerOutOfRangeAndLocalSteps) {
  ir::Algorithm a = makeRingAllReduce(3);
  a.ranks[0].threadblocks[0].steps[0].peer = 7;
  EXPECT_THAT(onlyFinding(a).message,
              HasSubstr("rank 0 tb 0 step 0 (send) names peer 7 (not a rank: this plan has ranks "
                        "0..2); send moves data"));
  a.ranks[0].threadblocks[0].steps[0].peer = -5;
  EXPECT_THAT(onlyFinding(a).message, HasSubstr("names peer -5 (not a rank"));

  a = makeRingAllReduce(3);
  ir::Threadblock local = makeTb(1, -1, -1);
  local.steps.push_back(makeStep(OpKind::copy, BufferKind::input, 0, BufferKind::input, 0));
  local.steps.back().peer = 1;
  local.steps.push_back(ir::Step{});
  local.steps.back().channel = 2;
  a.ranks[1].threadblocks.push_back(local);
  const VerifyReport report = verifyAlgorithm(a);
  ASSERT_EQ(report.findings.size(), 2u) << report.describe();
  EXPECT_EQ(report.findings[0].message,
            "rank 1 tb 1 step 0 (copy) names peer 1; copy is local to its rank and uses no "
            "connection: remove the step's peer and channel (set both to -1)");
  EXPECT_THAT(report.findings[1].message,
              HasSubstr("rank 1 tb 1 step 1 (nop) names channel 2; nop moves no data"));
}

}  // namespace
}  // namespace chorus::verify
