// Verifier: an out-of-place plan must leave its input (the caller's const send buffer)
// unchanged; every step that writes it is a `writes-input` finding, whatever the collective.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/lang.h"
#include "compiler/pipeline.h"
#include "ir_builders.h"
#include "support/error.h"
#include "verify/verify.h"

namespace chorus::verify {
namespace {

using ir::BufferKind;
using ir::OpKind;
using ::testing::HasSubstr;
using testing::makeAlgorithm;
using testing::makeStep;
using testing::makeTb;
using ::testing::Not;
using testing::onChunk;

// 2-rank AllReduce: each rank sends input[0], reduces the peer's chunk into its own input[0]
// and copies the sum to output[0]. The output is right, but the input is overwritten.
ir::Algorithm makeReduceIntoInput(bool inPlace) {
  ir::Algorithm a =
      makeAlgorithm("reduce_into_input", ir::CollectiveKind::allreduce, 2, 1, inPlace);
  for (int r = 0; r < 2; ++r) {
    ir::RankProgram& program = a.ranks[r];
    program.inputChunks = 1;
    program.outputChunks = inPlace ? 0 : 1;
    ir::Threadblock tb = makeTb(0, 1 - r, 1 - r);
    tb.steps.push_back(onChunk(OpKind::send, BufferKind::input, 0));
    tb.steps.push_back(onChunk(OpKind::recvReduceCopy, BufferKind::input, 0));
    if (!inPlace)
      tb.steps.push_back(makeStep(OpKind::copy, BufferKind::input, 0, BufferKind::output, 0));
    program.threadblocks.push_back(tb);
  }
  return a;
}

TEST(VerifyWritesInput, OutOfPlaceReceiveReduceIntoInputIsNamed) {
  const VerifyReport report = verifyAlgorithm(makeReduceIntoInput(false));
  ASSERT_EQ(report.findings.size(), 2u) << report.describe();
  for (int r = 0; r < 2; ++r) {
    const Finding& f = report.findings[r];
    EXPECT_EQ(f.kind, FindingKind::writesInput);
    EXPECT_EQ(f.rank, r);
    EXPECT_EQ(f.tb, 0);
    EXPECT_EQ(f.step, 1);
  }
  EXPECT_EQ(report.findings[1].message,
            "rank 1 tb 0 step 1 (recvReduceCopy from rank 0 with input[0] into input[0]) writes "
            "input[0] of rank 1, but this allreduce is out-of-place: an out-of-place collective "
            "must leave its input unchanged (the caller's send buffer is const); write into "
            "output or scratch instead, or mark the plan in-place if it is one");
  EXPECT_THAT(report.describe(), HasSubstr("writes-input: rank 0 tb 0 step 1"));
  EXPECT_EQ(findingKindName(FindingKind::writesInput), "writes-input");
}

TEST(VerifyWritesInput, InPlacePlansMayWriteTheirInput) {
  const VerifyReport report = verifyAlgorithm(makeReduceIntoInput(true));
  EXPECT_TRUE(report.ok()) << report.describe();
  EXPECT_TRUE(report.postconditionChecked);
}

TEST(VerifyWritesInput, TheCheckCanBeSwitchedOff) {
  VerifyOptions options;
  options.checkWritesInput = false;
  const VerifyReport report = verifyAlgorithm(makeReduceIntoInput(false), options);
  EXPECT_TRUE(report.ok()) << report.describe();
}

TEST(VerifyWritesInput, LocalReduceIntoInputUpdatesIt) {
  // Rank 0's local tb of an out-of-place 2-rank ring AllGather first adds input[0] into itself:
  // a local reduce reads and writes its destination.
  ir::Algorithm a = testing::makeRingAllGather(2, false);
  a.ranks[0].threadblocks[1].steps.insert(
      a.ranks[0].threadblocks[1].steps.begin(),
      makeStep(OpKind::reduce, BufferKind::input, 0, BufferKind::input, 0));
  const VerifyReport report = verifyAlgorithm(a);
  ASSERT_FALSE(report.ok());
  const Finding& f = report.findings[0];
  EXPECT_EQ(f.kind, FindingKind::writesInput) << report.describe();
  EXPECT_THAT(f.message, HasSubstr("rank 0 tb 1 step 0 (reduce input[0] into input[0]) updates "
                                   "input[0] of rank 0, but this allgather is out-of-place"));
}

TEST(VerifyWritesInput, BroadcastNonRootInputIsStillTheCallersBuffer) {
  // Broadcast from rank 0: rank 1 receives into its own (unused) input, then copies it out.
  ir::Algorithm a = makeAlgorithm("bcast", ir::CollectiveKind::broadcast, 2, 2, false);
  for (int r = 0; r < 2; ++r) {
    a.ranks[r].inputChunks = 2;
    a.ranks[r].outputChunks = 2;
  }
  ir::Threadblock root = makeTb(0, 1, -1);
  root.steps.push_back(makeStep(OpKind::send, BufferKind::input, 0, BufferKind::input, 0, 2));
  ir::Threadblock rootCopy = makeTb(1, -1, -1);
  rootCopy.steps.push_back(makeStep(OpKind::copy, BufferKind::input, 0, BufferKind::output, 0, 2));
  a.ranks[0].threadblocks = {root, rootCopy};
  ir::Threadblock leaf = makeTb(0, -1, 0);
  leaf.steps.push_back(makeStep(OpKind::recv, BufferKind::input, 0, BufferKind::input, 0, 2));
  leaf.steps.push_back(makeStep(OpKind::copy, BufferKind::input, 0, BufferKind::output, 0, 2));
  a.ranks[1].threadblocks = {leaf};
  const VerifyReport report = verifyAlgorithm(a);
  ASSERT_EQ(report.findings.size(), 1u) << report.describe();
  const Finding& f = report.findings[0];
  EXPECT_EQ(f.kind, FindingKind::writesInput);
  EXPECT_EQ(f.message,
            "rank 1 tb 0 step 0 (recv from rank 0 into input[0..2)) writes input[0..2) of rank 1 "
            "(the broadcast never reads it, but it is still the caller's buffer), but this "
            "broadcast is out-of-place: an out-of-place collective must leave its input "
            "unchanged (the caller's send buffer is const); write into output or scratch "
            "instead, or mark the plan in-place if it is one");
}

TEST(VerifyWritesInput, UnknownCustomCollectivesAreCheckedToo) {
  // A custom collective chorus does not know: rank 1 receives rank 0's input into its input.
  ir::Algorithm a = makeAlgorithm("mystery", ir::CollectiveKind::custom, 2, 1, false);
  for (auto& program : a.ranks) {
    program.inputChunks = 1;
    program.outputChunks = 1;
  }
  ir::Threadblock sender = makeTb(0, 1, -1);
  sender.steps.push_back(makeStep(OpKind::send, BufferKind::input, 0, BufferKind::input, 0));
  a.ranks[0].threadblocks.push_back(sender);
  ir::Threadblock receiver = makeTb(0, -1, 0);
  receiver.steps.push_back(makeStep(OpKind::recv, BufferKind::input, 0, BufferKind::input, 0));
  receiver.steps.push_back(makeStep(OpKind::copy, BufferKind::input, 0, BufferKind::output, 0));
  a.ranks[1].threadblocks.push_back(receiver);
  const VerifyReport report = verifyAlgorithm(a);
  EXPECT_FALSE(report.postconditionChecked);
  ASSERT_EQ(report.findings.size(), 1u) << report.describe();
  EXPECT_EQ(report.findings[0].kind, FindingKind::writesInput);
  EXPECT_THAT(report.findings[0].message,
              HasSubstr("rank 1 tb 0 step 0 (recv from rank 0 into input[0]) writes input[0] of "
                        "rank 1, but this mystery is out-of-place"));

  a.inPlace = true;  // the same plan, declared in place, is accepted
  a.ranks[1].threadblocks[0].steps.pop_back();
  EXPECT_TRUE(verifyAlgorithm(a).ok()) << verifyAlgorithm(a).describe();
}

TEST(VerifyWritesInput, CompilingADslProgramThatWritesItsInputFails) {
  // Out-of-place AllReduce on 2 ranks that accumulates into rank 0's input before copying out.
  lang::Program p("accumulate_in_input", lang::allReduce(2, 1, false));
  auto sum = p.chunk(0, lang::Buffer::input, 0).reduce(p.chunk(1, lang::Buffer::input, 0));
  sum.copy(0, lang::Buffer::output, 0);
  sum.copy(1, lang::Buffer::output, 0);
  try {
    compiler::compileProgram(p.dag());
    FAIL() << "compiled a program that writes its input";
  } catch (const CompileError& error) {
    EXPECT_THAT(error.what(), HasSubstr("writes-input: rank 0 tb "));
    EXPECT_THAT(error.what(), HasSubstr("writes input[0] of rank 0, but this allreduce is "
                                        "out-of-place"));
    EXPECT_THAT(error.what(), HasSubstr("the program 'accumulate_in_input' writes its input "
                                        "buffer, but its collective is out-of-place"));
    EXPECT_THAT(error.what(), Not(HasSubstr("chorus bug")));
  }
}

// The verify pass run on its own (compiler::verifyCompiled, as `chorus simulate` runs it beside
// the simulation) throws what the pass throws.
TEST(VerifyWritesInput, VerifyCompiledThrowsWhatThePassThrows) {
  lang::Program p("accumulate_in_input", lang::allReduce(2, 1, false));
  auto sum = p.chunk(0, lang::Buffer::input, 0).reduce(p.chunk(1, lang::Buffer::input, 0));
  sum.copy(0, lang::Buffer::output, 0);
  sum.copy(1, lang::Buffer::output, 0);
  compiler::CompileOptions unverified;
  unverified.verify = false;
  const compiler::CompileResult result = compiler::compileProgram(p.dag(), unverified);
  ASSERT_NE(result.collective, nullptr);
  try {
    compiler::verifyCompiled(result.algorithm, result.collective, {});
    FAIL() << "verified a program that writes its input";
  } catch (const CompileError& error) {
    EXPECT_THAT(error.what(), HasSubstr("the program 'accumulate_in_input' writes its input "
                                        "buffer, but its collective is out-of-place"));
  }
  // A correct program passes.
  lang::Program ok("sum_in_output", lang::allReduce(2, 1, false));
  ok.chunk(0, lang::Buffer::input, 0).copy(0, lang::Buffer::output, 0);
  auto total = ok.chunk(0, lang::Buffer::output, 0).reduce(ok.chunk(1, lang::Buffer::input, 0));
  total.copy(1, lang::Buffer::output, 0);
  const compiler::CompileResult good = compiler::compileProgram(ok.dag(), unverified);
  EXPECT_NO_THROW(compiler::verifyCompiled(good.algorithm, good.collective, {}));
}

// The ring ReduceScatter of GC3 reduces in the input and copies the sum out; fusion turns
// the last receive-reduce and the copy into one recvReduceCopy into the output, so the input is
// left alone only with fusion on. Without it the error says so.
TEST(VerifyWritesInput, RingReduceInInputNeedsFusionAndTheErrorSaysSo) {
  lang::Program p("ring_rs", lang::reduceScatter(2, 1, false));
  for (int owner = 0; owner < 2; ++owner) {
    const int other = 1 - owner;
    p.chunk(owner, lang::Buffer::input, owner).reduce(p.chunk(other, lang::Buffer::input, owner));
    p.chunk(owner, lang::Buffer::input, owner).copy(owner, lang::Buffer::output, 0);
  }
  EXPECT_NO_THROW(compiler::compileProgram(p.dag()));
  compiler::CompileOptions noFusion;
  noFusion.disabledPasses = {"fuse-instructions"};
  try {
    compiler::compileProgram(p.dag(), noFusion);
    FAIL() << "compiled a ring that reduces in its input without fusion";
  } catch (const CompileError& error) {
    EXPECT_THAT(error.what(), HasSubstr("the program 'ring_rs' writes its input buffer"));
    EXPECT_THAT(error.what(), HasSubstr("drop --disable-pass fuse-instructions"));
    EXPECT_THAT(error.what(), HasSubstr("writes-input: rank 0 tb "));
  }
}

}  // namespace
}  // namespace chorus::verify
