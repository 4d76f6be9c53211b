// Verifier: collective-specific behaviour: custom collectives (AllToNext, unknown ones), the
// collective given in the options, and the report's wording.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

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

// Every rank r sends its whole input to rank r+step's output (step +1: AllToNext, -1: its
// backward form), chunk factor cf; the program is named `name`, its collective `customName`.
ir::Algorithm makeShift(int n, int cf, int step, std::string name, std::string customName) {
  ir::Algorithm a = makeAlgorithm(std::move(name), ir::CollectiveKind::custom, n, cf, false);
  a.customName = std::move(customName);
  for (int r = 0; r < n; ++r) {
    ir::RankProgram& program = a.ranks[r];
    program.inputChunks = cf;
    program.outputChunks = cf;
    const int next = r + step;
    const int previous = r - step;
    if (next >= 0 && next < n) {
      ir::Threadblock tb = makeTb(0, next, -1);
      tb.steps.push_back(makeStep(OpKind::send, BufferKind::input, 0, BufferKind::output, 0, cf));
      program.threadblocks.push_back(tb);
    }
    if (previous >= 0 && previous < n) {
      ir::Threadblock tb = makeTb(static_cast<int>(program.threadblocks.size()), -1, previous);
      tb.steps.push_back(makeStep(OpKind::recv, BufferKind::input, 0, BufferKind::output, 0, cf));
      program.threadblocks.push_back(tb);
    }
  }
  return a;
}

// AllToNext on n ranks, chunk factor cf: rank r sends its whole input to rank r+1's output.
ir::Algorithm makeAllToNext(int n, int cf) {
  return makeShift(n, cf, 1, "alltonext-direct", "alltonext");
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
  EXPECT_THAT(unknown.describe(), HasSubstr("with --collective NAME (known: alltonext, "
                                            "alltonext-backward, "));
}

TEST(VerifyCollectives, AllToNextBackwardDefinition) {
  const auto c = ir::makeCustomCollective("alltonext-backward", {.nranks = 4, .chunkFactor = 2});
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->name(), "alltonext-backward");
  EXPECT_EQ(c->kind(), ir::CollectiveKind::custom);
  EXPECT_TRUE(c->hasPostcondition());
  EXPECT_EQ(c->inputChunks(0), 2);
  EXPECT_EQ(c->outputChunks(3), 2);
  EXPECT_EQ(c->chunksPerLoop(), 2);
  // out(r)[j] = in(r+1, j); rank 0's input and the last rank's output are unused.
  EXPECT_EQ(c->expectedOutput(0, 1), ir::ChunkValue::of({1, 1}));
  EXPECT_EQ(c->expectedOutput(2, 0), ir::ChunkValue::of({3, 0}));
  EXPECT_EQ(c->expectedOutput(3, 0), std::nullopt);
  EXPECT_FALSE(c->initialInput(0, 0).initialized());
  EXPECT_EQ(c->initialInput(3, 1), ir::ChunkValue::of({3, 1}));
  const auto refined = c->refined(2);
  EXPECT_EQ(refined->name(), "alltonext-backward");
  EXPECT_EQ(refined->chunkFactor(), 4);
  // msccl-tools' program name is the same collective.
  const auto alias = ir::makeCustomCollective("alltonext-backwards", {.nranks = 4});
  ASSERT_NE(alias, nullptr);
  EXPECT_EQ(alias->name(), "alltonext-backward");
}

TEST(VerifyCollectives, KnownCustomCollectivesAreListed) {
  const std::vector<std::string> names = ir::customCollectiveNames();
  for (const char* name :
       {"alltonext", "alltonext-forward", "alltonext-backward", "alltonext-backwards"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_THAT(ir::describeCustomCollectiveNames(),
              HasSubstr("alltonext-backwards, alltonext-forward, and group reductions such as "
                        "group-reduction:0,1;2,3"));
}

TEST(VerifyCollectives, AllToNextBackwardIsChecked) {
  for (const auto& [name, customName] :
       std::vector<std::pair<std::string, std::string>>{{"shift", "alltonext-backward"},
                                                        {"alltonext-backwards", ""},
                                                        {"alltonext-backward", ""}}) {
    const VerifyReport report = verifyAlgorithm(makeShift(4, 2, -1, name, customName));
    EXPECT_TRUE(report.ok()) << name << ": " << report.describe();
    EXPECT_TRUE(report.postconditionChecked) << name;
  }
}

TEST(VerifyCollectives, ForwardAndBackwardAreNotConfused) {
  // A backward program judged as forward AllToNext, and the other way round, is wrong (and
  // reads the input the other definition leaves unset).
  const VerifyReport backwardAsForward = verifyAlgorithm(makeShift(3, 1, -1, "shift", "alltonext"));
  ASSERT_FALSE(backwardAsForward.ok());
  EXPECT_THAT(backwardAsForward.describe(),
              HasSubstr("(alltonext leaves rank 2's input[0] unset)"));
  EXPECT_THAT(backwardAsForward.describe(),
              HasSubstr("postcondition: rank 1 output[0] holds no value at the end (nothing wrote "
                        "it, or what was written was uninitialized); expected in(0,0)"));
  const VerifyReport forwardAsBackward =
      verifyAlgorithm(makeShift(3, 1, 1, "alltonext", "alltonext-backward"));
  ASSERT_FALSE(forwardAsBackward.ok());
  EXPECT_THAT(forwardAsBackward.describe(),
              HasSubstr("postcondition: rank 0 output[0] holds no value"));
}

TEST(VerifyCollectives, OnlyExactNamesSelectAPostcondition) {
  // msccl-tools' program names are registered exactly...
  EXPECT_TRUE(verifyAlgorithm(makeShift(3, 1, 1, "alltonext-forward", "")).postconditionChecked);
  EXPECT_TRUE(verifyAlgorithm(makeShift(3, 1, 1, "alltonext", "")).postconditionChecked);
  // ...but a name's prefix says nothing about what the program computes.
  for (const char* name : {"alltonext_foo", "alltonext-sideways", "alltonextx"}) {
    const ir::Algorithm a = makeShift(3, 1, 1, name, "");
    EXPECT_FALSE(ir::collectiveOf(a)->hasPostcondition()) << name;
    const VerifyReport report = verifyAlgorithm(a);
    EXPECT_TRUE(report.ok()) << name << ": " << report.describe();
    EXPECT_FALSE(report.postconditionChecked) << name;
    EXPECT_THAT(report.describe(),
                HasSubstr(std::string("custom collective '") + name + "' is unknown to chorus"));
  }
  // The collective's own name wins over the program's: customName "shift" is unknown even
  // though the program is called alltonext.
  const VerifyReport named = verifyAlgorithm(makeShift(3, 1, 1, "alltonext", "shift"));
  EXPECT_FALSE(named.postconditionChecked);
  EXPECT_THAT(named.describe(), HasSubstr("custom collective 'shift' is unknown"));
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
