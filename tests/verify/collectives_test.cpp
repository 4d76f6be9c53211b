// Verifier: collective-specific behaviour: custom collectives (AllToNext, unknown ones), the
// collective given in the options, and the report's wording.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ir/collective.h"
#include "ir_builders.h"
#include "verify/verify.h"

namespace chorus::verify {
namespace {

using ir::BufferKind;
using ir::OpKind;
using ::testing::HasSubstr;
using testing::makeAlgorithm;
using testing::makeRingAllReduce;
using testing::makeStep;
using testing::makeTb;

// AllToNext on n ranks, chunk factor cf: rank r sends its whole input to rank r+1's output.
ir::Algorithm makeAllToNext(int n, int cf) {
  ir::Algorithm a = makeAlgorithm("alltonext-direct", ir::CollectiveKind::custom, n, cf, false);
  a.customName = "alltonext";
  for (int r = 0; r < n; ++r) {
    ir::RankProgram& program = a.ranks[r];
    program.inputChunks = cf;
    program.outputChunks = cf;
    if (r + 1 < n) {
      ir::Threadblock tb = makeTb(0, r + 1, -1);
      tb.steps.push_back(makeStep(OpKind::send, BufferKind::input, 0, BufferKind::output, 0, cf));
      program.threadblocks.push_back(tb);
    }
    if (r > 0) {
      ir::Threadblock tb = makeTb(static_cast<int>(program.threadblocks.size()), -1, r - 1);
      tb.steps.push_back(makeStep(OpKind::recv, BufferKind::input, 0, BufferKind::output, 0, cf));
      program.threadblocks.push_back(tb);
    }
  }
  return a;
}

TEST(VerifyCollectives, AllToNextIsChecked) {
  const VerifyReport report = verifyAlgorithm(makeAllToNext(4, 2));
  EXPECT_TRUE(report.ok()) << report.describe();
  EXPECT_TRUE(report.postconditionChecked);
}

TEST(VerifyCollectives, WrongAllToNextIsFound) {
  ir::Algorithm a = makeAllToNext(4, 2);
  // Rank 2 receives one chunk too far: output[1..3) is out of range, so shrink to one chunk
  // per message and shift it.
  for (auto& program : a.ranks)
    for (auto& tb : program.threadblocks)
      for (auto& step : tb.steps)
        step.count = 1;
  a.ranks[2].threadblocks[1].steps[0].dstIndex = 1;
  const VerifyReport report = verifyAlgorithm(a);
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.describe(), HasSubstr("postcondition: rank 2 output[0] holds no value"));
  EXPECT_THAT(report.describe(), HasSubstr("postcondition: rank 2 output[1] holds in(1,0): in(1,0) "
                                           "does not belong there; in(1,1) is missing"));
  EXPECT_THAT(report.describe(), HasSubstr("postcondition: rank 1 output[1] holds no value"));
}

TEST(VerifyCollectives, AllToNextFromMakeCustomCollective) {
  // The collective can also be passed explicitly.
  ir::Algorithm a = makeAllToNext(3, 1);
  a.customName.clear();
  a.name = "something-else";
  VerifyOptions options;
  options.collective = ir::makeCustomCollective("alltonext", {.nranks = 3, .chunkFactor = 1});
  ASSERT_NE(options.collective, nullptr);
  const VerifyReport checked = verifyAlgorithm(a, options);
  EXPECT_TRUE(checked.ok()) << checked.describe();
  EXPECT_TRUE(checked.postconditionChecked);
  const VerifyReport unknown = verifyAlgorithm(a);
  EXPECT_TRUE(unknown.ok()) << unknown.describe();
  EXPECT_FALSE(unknown.postconditionChecked);
  EXPECT_THAT(unknown.describe(), HasSubstr("postcondition not checked: custom collective "
                                            "'something-else' is unknown to chorus"));
}

TEST(VerifyCollectives, CollectiveWithOtherRankCountIsMalformed) {
  VerifyOptions options;
  options.collective =
      ir::makeCollective(ir::CollectiveKind::allreduce, {.nranks = 8, .chunkFactor = 4});
  const VerifyReport report = verifyAlgorithm(makeRingAllReduce(4), options);
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].kind, FindingKind::malformed);
  EXPECT_THAT(report.findings[0].message, HasSubstr("has 8"));
}

TEST(VerifyCollectives, ChecksCanBeSwitchedOff) {
  VerifyOptions options;
  options.checkPostcondition = false;
  options.checkRaces = false;
  const VerifyReport report = verifyAlgorithm(makeRingAllReduce(3), options);
  EXPECT_EQ(report.describe(),
            "ok: deadlock freedom (fifo=8, 2 iterations) checked on 3 ranks; postcondition not "
            "checked: disabled");
}

TEST(VerifyCollectives, FindingKindNames) {
  EXPECT_EQ(findingKindName(FindingKind::malformed), "malformed");
  EXPECT_EQ(findingKindName(FindingKind::uninitialized), "uninitialized");
  EXPECT_EQ(findingKindName(FindingKind::postcondition), "postcondition");
  EXPECT_EQ(findingKindName(FindingKind::deadlock), "deadlock");
  EXPECT_EQ(findingKindName(FindingKind::race), "race");
}

TEST(VerifyCollectives, FindingsAreCapped) {
  ir::Algorithm a = makeRingAllReduce(8);
  for (auto& program : a.ranks)
    program.threadblocks[0].steps.back().op = OpKind::nop;
  a.ranks[0].threadblocks[0].steps.back().op = OpKind::nop;
  // Dropping every final receive unbalances 8 connections.
  VerifyOptions options;
  options.maxFindings = 3;
  const VerifyReport report = verifyAlgorithm(a, options);
  EXPECT_EQ(report.findings.size(), 3u);
  EXPECT_TRUE(report.truncated);
  EXPECT_THAT(
      report.describe(),
      HasSubstr("(stopped after 3 findings; raise VerifyOptions::maxFindings to see more)"));
}

}  // namespace
}  // namespace chorus::verify
