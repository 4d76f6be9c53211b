// Verifier: deadlocks from dependency cycles, cross-rank receive cycles and full FIFOs are
// reported with the cycle of waiting threadblocks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

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
using testing::onChunk;

TEST(VerifyDeadlock, DependencyCycleWithinARank) {
  ir::Algorithm a = makeRingAllReduce(2);
  ir::Threadblock t1 = makeTb(1, -1, -1);
  ir::Threadblock t2 = makeTb(2, -1, -1);
  ir::Step wait1;
  wait1.deps = {{2, 0}};
  wait1.hasDependents = true;
  ir::Step wait2;
  wait2.deps = {{1, 0}};
  wait2.hasDependents = true;
  t1.steps.push_back(wait1);
  t2.steps.push_back(wait2);
  a.ranks[0].threadblocks.push_back(t1);
  a.ranks[0].threadblocks.push_back(t2);
  const VerifyReport report = verifyAlgorithm(a);
  ASSERT_EQ(report.findings.size(), 1u) << report.describe();
  const Finding& f = report.findings[0];
  EXPECT_EQ(f.kind, FindingKind::deadlock);
  EXPECT_EQ(f.rank, 0);
  EXPECT_EQ(f.tb, 1);
  EXPECT_EQ(f.message,
            "deadlock (fifo=8, 2 iteration(s)): rank 0 tb 1 step 0 (nop: waits for its "
            "dependency tb 2 step 0), which waits for rank 0 tb 2 step 0 (nop: waits for its "
            "dependency tb 1 step 0), which waits for rank 0 tb 1 step 0 again; the dependencies "
            "of rank 0 form a cycle; remove or redirect one of them");
  EXPECT_FALSE(report.postconditionChecked);
}

TEST(VerifyDeadlock, BothRanksReceiveFirst) {
  ir::Algorithm a = makeRingAllReduce(2);
  for (auto& program : a.ranks) {
    auto& steps = program.threadblocks[0].steps;
    std::swap(steps[0], steps[1]);  // rrcs before s
  }
  const VerifyReport report = verifyAlgorithm(a);
  ASSERT_FALSE(report.ok());
  const Finding& f = report.findings[0];
  EXPECT_EQ(f.kind, FindingKind::deadlock) << report.describe();
  EXPECT_THAT(f.message,
              HasSubstr("rank 0 tb 0 step 0 (recvReduceCopySend from rank 1 with input[1] into "
                        "input[1] and on to rank 1: nothing to receive from rank 1 on channel "
                        "0), which waits for rank 1 tb 0 step 0 (recvReduceCopySend from rank 0 "
                        "with input[0] into input[0] and on to rank 0: nothing to receive from "
                        "rank 0 on channel 0), which waits for rank 0 tb 0 step 0 again"));
  EXPECT_THAT(f.message, HasSubstr("reorder the steps"));
}

TEST(VerifyDeadlock, RingWithAllRanksReceivingFirstNamesTheWholeCycle) {
  ir::Algorithm a = makeRingAllReduce(5);
  for (auto& program : a.ranks)
    std::swap(program.threadblocks[0].steps[0], program.threadblocks[0].steps[1]);
  const VerifyReport report = verifyAlgorithm(a);
  ASSERT_EQ(report.findings.size(), 1u) << report.describe();
  for (int r = 0; r < 5; ++r)
    EXPECT_THAT(report.findings[0].message,
                HasSubstr("rank " + std::to_string(r) + " tb 0 step 0"));
}

// Two ranks exchange two chunks each from one tb: both send twice, then receive twice
// (AllGather, out of place, chunk factor 2).
ir::Algorithm makeSendSendRecvRecv() {
  ir::Algorithm a = makeAlgorithm("exchange", ir::CollectiveKind::allgather, 2, 4, false);
  for (int r = 0; r < 2; ++r) {
    ir::RankProgram& program = a.ranks[r];
    program.inputChunks = 2;
    program.outputChunks = 4;
    ir::Threadblock tb = makeTb(0, 1 - r, 1 - r);
    for (int i = 0; i < 2; ++i)
      tb.steps.push_back(
          makeStep(OpKind::send, BufferKind::input, i, BufferKind::output, 2 * r + i));
    for (int i = 0; i < 2; ++i)
      tb.steps.push_back(onChunk(OpKind::recv, BufferKind::output, 2 * (1 - r) + i));
    program.threadblocks.push_back(tb);
    ir::Threadblock local = makeTb(1, -1, -1);
    local.steps.push_back(
        makeStep(OpKind::copy, BufferKind::input, 0, BufferKind::output, 2 * r, 2));
    program.threadblocks.push_back(local);
  }
  return a;
}

TEST(VerifyDeadlock, FullFifoDeadlocksWithOneSlotOnly) {
  const ir::Algorithm a = makeSendSendRecvRecv();
  EXPECT_TRUE(verifyAlgorithm(a).ok()) << verifyAlgorithm(a).describe();
  VerifyOptions options;
  options.fifoSlots = 1;
  const VerifyReport report = verifyAlgorithm(a, options);
  ASSERT_EQ(report.findings.size(), 1u) << report.describe();
  EXPECT_EQ(report.findings[0].kind, FindingKind::deadlock);
  EXPECT_THAT(report.findings[0].message,
              HasSubstr("rank 0 tb 0 step 1 (send input[1] to rank 1: the FIFO to rank 1 on "
                        "channel 0 is full with 1 unreceived message(s)), which waits for rank 1 "
                        "tb 0 step 1 (send input[1] to rank 0: the FIFO to rank 0 on channel 0 is "
                        "full with 1 unreceived message(s)), which waits for rank 0 tb 0 step 1 "
                        "again"));
  EXPECT_THAT(report.findings[0].message, HasSubstr("full FIFO (1 slot(s) per connection)"));
}

TEST(VerifyDeadlock, FifoDeadlockAcrossIterations) {
  // One send and one receive per iteration on each side, sends first: fine with 1 slot in
  // one iteration, and still fine across iterations since each side drains before sending.
  ir::Algorithm a = makeSendSendRecvRecv();
  VerifyOptions options;
  options.fifoSlots = 2;
  options.iterations = 3;
  EXPECT_TRUE(verifyAlgorithm(a, options).ok());
}

TEST(VerifyDeadlock, DeadlockCheckCanBeDisabled) {
  const ir::Algorithm a = makeSendSendRecvRecv();
  VerifyOptions options;
  options.fifoSlots = 1;
  options.checkDeadlock = false;
  const VerifyReport report = verifyAlgorithm(a, options);
  EXPECT_TRUE(report.ok()) << report.describe();
  EXPECT_EQ(report.describe(), "ok: postcondition and races checked on 2 ranks");
}

}  // namespace
}  // namespace chorus::verify
