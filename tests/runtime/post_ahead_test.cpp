// The rule for posting a receive step's later tiles ahead (runtime/post_ahead.h): on
// hand-made programs, one per reason to refuse, and on library plans.
#include <gtest/gtest.h>

#include "compile_for_test.h"
#include "runtime/post_ahead.h"
#include "verify/ir_builders.h"

namespace chorus {
namespace {

using ir::BufferKind;
using ir::OpKind;
using verify::testing::makeStep;
using verify::testing::makeTb;

// Threadblock 0 receives output chunks 1-2 from rank 1; threadblock 1 does `other`.
ir::RankProgram program(const ir::Step& other, OpKind receive = OpKind::recv) {
  ir::RankProgram p;
  p.inputChunks = 1;
  p.outputChunks = 4;
  p.scratchChunks = 2;
  ir::Threadblock a = makeTb(0, -1, 1);
  a.steps.push_back(makeStep(receive, BufferKind::input, 0, BufferKind::output, 1, 2));
  ir::Threadblock b = makeTb(1, 1, -1);
  b.steps.push_back(other);
  p.threadblocks = {a, b};
  return p;
}

TEST(PostAhead, AReceiveIntoChunksNothingElseTouchesQualifies) {
  const auto p = program(makeStep(OpKind::send, BufferKind::input, 0, BufferKind::input, 0));
  EXPECT_EQ(runtime::postAheadStep(p, 0, false), 0);
  EXPECT_EQ(runtime::postAheadStep(p, 1, false), -1) << "it receives nothing";
  EXPECT_EQ(runtime::postAheadStep(p, 0, true), -1) << "in-place plans never qualify";
  EXPECT_EQ(
      runtime::postAheadStep(
          program(makeStep(OpKind::copy, BufferKind::input, 0, BufferKind::output, 3)), 0, false),
      0)
      << "output chunk 3 is not one of the receive's";
}

TEST(PostAhead, AnotherStepReadingOrWritingTheChunksRefuses) {
  // A send of output chunk 2 (it must read it before the message lands).
  EXPECT_EQ(
      runtime::postAheadStep(
          program(makeStep(OpKind::send, BufferKind::output, 2, BufferKind::output, 2)), 0, false),
      -1);
  // A copy into output chunk 1.
  EXPECT_EQ(
      runtime::postAheadStep(
          program(makeStep(OpKind::copy, BufferKind::input, 0, BufferKind::output, 1)), 0, false),
      -1);
  // A reduce that reads output chunk 2 as its source.
  EXPECT_EQ(runtime::postAheadStep(
                program(makeStep(OpKind::reduce, BufferKind::output, 2, BufferKind::scratch, 0)), 0,
                false),
            -1);
}

TEST(PostAhead, OnlyLandingReceivesAndOneReceivePerThreadblockQualify) {
  const ir::Step unrelated = makeStep(OpKind::send, BufferKind::input, 0, BufferKind::input, 0);
  EXPECT_EQ(runtime::postAheadStep(program(unrelated, OpKind::recvCopySend), 0, false), 0);
  EXPECT_EQ(runtime::postAheadStep(program(unrelated, OpKind::recvReduceCopy), 0, false), -1);
  auto twoReceives = program(unrelated);
  twoReceives.threadblocks[0].steps.push_back(
      makeStep(OpKind::recv, BufferKind::input, 0, BufferKind::output, 0));
  EXPECT_EQ(runtime::postAheadStep(twoReceives, 0, false), -1);
  // A step after the receive in its own threadblock may use the chunks: it runs after it.
  auto forward = program(unrelated);
  forward.threadblocks[0].steps.push_back(
      makeStep(OpKind::copy, BufferKind::output, 1, BufferKind::scratch, 0));
  EXPECT_EQ(runtime::postAheadStep(forward, 0, false), 0);
  // Before it, it may not.
  std::swap(forward.threadblocks[0].steps[0], forward.threadblocks[0].steps[1]);
  EXPECT_EQ(runtime::postAheadStep(forward, 0, false), -1);
}

TEST(PostAhead, LibraryPlans) {
  // AllGather direct: every receive lands a peer's block that nothing else touches.
  const auto direct = testing_support::compileForTest("allgather.direct", 3);
  int qualifying = 0;
  for (std::size_t t = 0; t < direct.ranks[0].threadblocks.size(); ++t)
    qualifying += runtime::postAheadStep(direct.ranks[0], t, direct.inPlace) >= 0 ? 1 : 0;
  EXPECT_EQ(qualifying, 2);
  // AllReduce ring is in place: nothing qualifies.
  const auto ring = testing_support::compileForTest("allreduce.ring", 3);
  for (std::size_t t = 0; t < ring.ranks[0].threadblocks.size(); ++t)
    EXPECT_EQ(runtime::postAheadStep(ring.ranks[0], t, ring.inPlace), -1);
}

}  // namespace
}  // namespace chorus
