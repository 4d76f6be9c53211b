// Verifier: correct programs verify, and data mistakes (deleted, swapped, retargeted steps,
// double counting, uninitialized reads) are found with the rank and chunk named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "ir_builders.h"
#include "verify/verify.h"

namespace chorus::verify {
namespace {

using ir::BufferKind;
using ir::OpKind;
using ::testing::HasSubstr;
using testing::makeAlgorithm;
using testing::makeRingAllGather;
using testing::makeRingAllReduce;
using testing::makeStep;
using testing::makeTb;
using testing::onChunk;

bool hasFinding(const VerifyReport& report, FindingKind kind, const std::string& text) {
  return std::any_of(report.findings.begin(), report.findings.end(), [&](const Finding& f) {
    return f.kind == kind && f.message.find(text) != std::string::npos;
  });
}

TEST(VerifyPostcondition, RingAllReduceVerifiesOnTwoToSixteenRanks) {
  for (int n = 2; n <= 16; ++n) {
    const VerifyReport report = verifyAlgorithm(makeRingAllReduce(n));
    EXPECT_TRUE(report.ok()) << n << " ranks:\n" << report.describe();
    EXPECT_TRUE(report.postconditionChecked);
    EXPECT_EQ(report.describe(),
              "ok: postcondition, deadlock freedom (fifo=8, 2 iterations) and races checked on " +
                  std::to_string(n) + " ranks");
  }
}

TEST(VerifyPostcondition, RingAllGatherVerifiesInPlaceAndOutOfPlace) {
  for (int n : {2, 3, 8}) {
    for (bool inPlace : {false, true}) {
      const VerifyReport report = verifyAlgorithm(makeRingAllGather(n, inPlace));
      EXPECT_TRUE(report.ok()) << n << " ranks, inPlace=" << inPlace << ":\n" << report.describe();
    }
  }
}

TEST(VerifyPostcondition, InPlaceAllGatherOverwritingOwnInputIsWrong) {
  // Rank 1's last receive writes output[1], the window that holds its own input in place.
  ir::Algorithm a = makeRingAllGather(4, /*inPlace=*/true);
  a.ranks[1].threadblocks[0].steps.back().dstIndex = 1;
  const VerifyReport report = verifyAlgorithm(a);
  ASSERT_FALSE(report.ok());
  EXPECT_TRUE(hasFinding(report, FindingKind::postcondition, "rank 1 output[1] holds in(2,0)"))
      << report.describe();
  EXPECT_TRUE(
      hasFinding(report, FindingKind::postcondition, "rank 1 output[2] holds no value at the end"))
      << report.describe();
}

TEST(VerifyPostcondition, DeletingACopyLeavesTheOutputUnwritten) {
  ir::Algorithm a = makeRingAllGather(4, /*inPlace=*/false);
  a.ranks[2].threadblocks[1].steps.clear();
  const VerifyReport report = verifyAlgorithm(a);
  ASSERT_EQ(report.findings.size(), 1u) << report.describe();
  EXPECT_EQ(report.findings[0].kind, FindingKind::postcondition);
  EXPECT_EQ(report.findings[0].rank, 2);
  EXPECT_THAT(report.findings[0].message,
              HasSubstr("rank 2 output[2] holds no value at the end (nothing wrote it, or what "
                        "was written was uninitialized); expected in(2,0)"));
}

TEST(VerifyPostcondition, DeletingAReceiveUnbalancesTheConnection) {
  ir::Algorithm a = makeRingAllReduce(4);
  a.ranks[2].threadblocks[0].steps.pop_back();  // rank 2's final recv of input[0]
  const VerifyReport report = verifyAlgorithm(a);
  ASSERT_FALSE(report.ok());
  const Finding& f = report.findings[0];
  EXPECT_EQ(f.kind, FindingKind::malformed);
  EXPECT_EQ(f.rank, 1);
  EXPECT_EQ(f.step, 5);
  EXPECT_EQ(f.message,
            "rank 1 tb 0 step 5 (recvCopySend from rank 0 into input[0] and on to rank 2) is send "
            "number 6 on the connection rank 1 -> rank 2 channel 0, but rank 2 tb 0 receives only "
            "5 message(s) from it; the k-th send on a connection is received by the k-th receive, "
            "so every send needs a matching receive");
}

TEST(VerifyPostcondition, SwappedReductionStepsGiveWrongSums) {
  ir::Algorithm a = makeRingAllReduce(4);
  auto& steps = a.ranks[1].threadblocks[0].steps;
  std::swap(steps[1], steps[2]);  // rrs i[0] and rrs i[3] on rank 1
  const VerifyReport report = verifyAlgorithm(a);
  ASSERT_FALSE(report.ok());
  for (const Finding& f : report.findings)
    EXPECT_EQ(f.kind, FindingKind::postcondition);
  // Chunk 0's partial from rank 0 is reduced with rank 1's chunk 3 and vice versa.
  EXPECT_TRUE(hasFinding(report, FindingKind::postcondition,
                         "rank 0 output[0] (stored in input[0], in-place) holds sum{in(0,0) "
                         "in(1,3) in(2,0) in(3,0)}"))
      << report.describe();
  EXPECT_TRUE(hasFinding(report, FindingKind::postcondition, "in(1,3) does not belong there"))
      << report.describe();
  EXPECT_TRUE(hasFinding(report, FindingKind::postcondition, "in(1,0) is missing"))
      << report.describe();
}

TEST(VerifyPostcondition, RetargetedIndexIsNamed) {
  ir::Algorithm a = makeRingAllReduce(4);
  auto& last = a.ranks[3].threadblocks[0].steps.back();  // r i[1]
  ASSERT_EQ(last.dstIndex, 1);
  last.dstIndex = 2;
  last.srcIndex = 2;
  const VerifyReport report = verifyAlgorithm(a);
  ASSERT_FALSE(report.ok());
  EXPECT_TRUE(hasFinding(report, FindingKind::postcondition,
                         "rank 3 output[1] (stored in input[1], in-place) holds in(3,1): 3 "
                         "contributions are missing: in(0,1) in(1,1) in(2,1)"))
      << report.describe();
  EXPECT_TRUE(hasFinding(report, FindingKind::postcondition,
                         "rank 3 output[2] (stored in input[2], in-place) holds sum{in(0,1) "
                         "in(1,1) in(2,1) in(3,1)}: in(0,1) in(1,1) in(2,1) in(3,1) do not belong "
                         "there; 4 contributions are missing: in(0,2) in(1,2) in(2,2) in(3,2)"))
      << report.describe();
}

TEST(VerifyPostcondition, RetargetedBufferOutOfRangeIsMalformed) {
  ir::Algorithm a = makeRingAllReduce(4);
  auto& last = a.ranks[3].threadblocks[0].steps.back();
  last.dstBuffer = BufferKind::scratch;
  const VerifyReport report = verifyAlgorithm(a);
  ASSERT_EQ(report.findings.size(), 1u) << report.describe();
  EXPECT_EQ(report.findings[0].kind, FindingKind::malformed);
  EXPECT_THAT(report.findings[0].message,
              HasSubstr("rank 3 tb 0 step 6 (recv from rank 2 into scratch[1]) writes scratch[1], "
                        "beyond rank 3's scratch buffer of 0 chunk(s)"));
}

TEST(VerifyPostcondition, DoubleCountedReductionIsNamed) {
  // Rank 1 reduces first and sends the sum back; rank 0 adds its own chunk again.
  ir::Algorithm a = makeAlgorithm("double", ir::CollectiveKind::allreduce, 2, 1, true);
  for (int r = 0; r < 2; ++r) {
    a.ranks[r].inputChunks = 1;
    a.ranks[r].threadblocks.push_back(makeTb(0, 1 - r, 1 - r));
  }
  auto& s0 = a.ranks[0].threadblocks[0].steps;
  s0.push_back(onChunk(OpKind::send, BufferKind::input, 0));
  s0.push_back(onChunk(OpKind::recvReduceCopy, BufferKind::input, 0));
  auto& s1 = a.ranks[1].threadblocks[0].steps;
  s1.push_back(onChunk(OpKind::recvReduceCopy, BufferKind::input, 0));
  s1.push_back(onChunk(OpKind::send, BufferKind::input, 0));
  const VerifyReport report = verifyAlgorithm(a);
  ASSERT_EQ(report.findings.size(), 1u) << report.describe();
  EXPECT_EQ(report.findings[0].kind, FindingKind::postcondition);
  EXPECT_EQ(report.findings[0].rank, 0);
  EXPECT_EQ(report.findings[0].message,
            "rank 0 output[0] (stored in input[0], in-place) holds sum{in(0,0) in(0,0) in(1,0)}: "
            "in(0,0) is reduced twice (expected sum{in(0,0) in(1,0)})");
}

TEST(VerifyPostcondition, LargeValuesAreSummarized) {
  // 16-rank ring: rank 5 forwards chunk 2's partial sum without adding its own contribution.
  ir::Algorithm a = makeRingAllReduce(16);
  a.ranks[5].threadblocks[0].steps[3].op = OpKind::recvCopySend;
  VerifyReport report = verifyAlgorithm(a);
  ASSERT_EQ(report.findings.size(), 16u) << report.describe();
  EXPECT_EQ(report.findings[7].message,
            "rank 7 output[2] (stored in input[2], in-place) holds sum{in(0..4 6..15,2)} (15 "
            "parts): in(5,2) is missing (expected sum{in(0..15,2)} (16 parts))");

  // Rank 3's last receive lands in input[4] instead of input[5].
  a = makeRingAllReduce(16);
  a.ranks[3].threadblocks[0].steps.back().dstIndex = 4;
  report = verifyAlgorithm(a);
  EXPECT_TRUE(hasFinding(report, FindingKind::postcondition,
                         "rank 3 output[5] (stored in input[5], in-place) holds in(3,5): 15 "
                         "contributions are missing: in(0..2 4..15,5) (expected sum{in(0..15,5)} "
                         "(16 parts))"))
      << report.describe();
  EXPECT_TRUE(hasFinding(report, FindingKind::postcondition,
                         "holds sum{in(0..15,5)} (16 parts): in(0..15,5) do not belong there; 16 "
                         "contributions are missing: in(0..15,4)"))
      << report.describe();
}

TEST(VerifyPostcondition, UninitializedReadIsFound) {
  // Broadcast from root 0 on 2 ranks where rank 1 sends its (unset) input back.
  ir::Algorithm a = makeAlgorithm("bcast", ir::CollectiveKind::broadcast, 2, 1, false);
  for (int r = 0; r < 2; ++r) {
    a.ranks[r].inputChunks = 1;
    a.ranks[r].outputChunks = 1;
  }
  ir::Threadblock t0 = makeTb(0, 1, 1);
  t0.steps.push_back(makeStep(OpKind::send, BufferKind::input, 0, BufferKind::output, 0));
  t0.steps.push_back(makeStep(OpKind::recv, BufferKind::input, 0, BufferKind::output, 0));
  a.ranks[0].threadblocks.push_back(t0);
  ir::Threadblock t1 = makeTb(0, 0, 0);
  t1.steps.push_back(makeStep(OpKind::send, BufferKind::input, 0, BufferKind::output, 0));
  t1.steps.push_back(makeStep(OpKind::recv, BufferKind::input, 0, BufferKind::output, 0));
  a.ranks[1].threadblocks.push_back(t1);
  const VerifyReport report = verifyAlgorithm(a);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.findings[0].kind, FindingKind::uninitialized);
  EXPECT_THAT(report.findings[0].message,
              HasSubstr("rank 1 tb 0 step 0 (send input[0] to rank 0) reads input[0], which "
                        "holds no value when the step runs (broadcast leaves rank 1's input[0] "
                        "unset)"));
  EXPECT_TRUE(
      hasFinding(report, FindingKind::postcondition, "rank 0 output[0] holds no value at the end"))
      << report.describe();
}

}  // namespace
}  // namespace chorus::verify
