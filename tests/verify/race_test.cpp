// Verifier: unordered accesses to one chunk from two threadblocks are races; a dependency or a
// chain of messages orders them.
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
using testing::makeStep;
using testing::makeTb;

// Rank 0 sends input[0] to rank 1; rank 1's tb 0 receives it into scratch[0] and tb 1 copies
// scratch[0] to output[0]. Custom collective unknown to chorus: only structure, deadlock and
// races are checked.
ir::Algorithm makeScratchHandOff() {
  ir::Algorithm a = makeAlgorithm("handoff", ir::CollectiveKind::custom, 2, 1, false);
  for (auto& program : a.ranks) {
    program.inputChunks = 1;
    program.outputChunks = 1;
  }
  a.ranks[1].scratchChunks = 1;
  ir::Threadblock sender = makeTb(0, 1, -1);
  sender.steps.push_back(makeStep(OpKind::send, BufferKind::input, 0, BufferKind::scratch, 0));
  a.ranks[0].threadblocks.push_back(sender);
  ir::Threadblock receiver = makeTb(0, -1, 0);
  receiver.steps.push_back(makeStep(OpKind::recv, BufferKind::input, 0, BufferKind::scratch, 0));
  a.ranks[1].threadblocks.push_back(receiver);
  ir::Threadblock copier = makeTb(1, -1, -1);
  copier.steps.push_back(makeStep(OpKind::copy, BufferKind::scratch, 0, BufferKind::output, 0));
  a.ranks[1].threadblocks.push_back(copier);
  return a;
}

TEST(VerifyRaces, UnorderedWriteAndReadIsARace) {
  const VerifyReport report = verifyAlgorithm(makeScratchHandOff());
  ASSERT_EQ(report.findings.size(), 1u) << report.describe();
  const Finding& f = report.findings[0];
  EXPECT_EQ(f.kind, FindingKind::race);
  EXPECT_EQ(f.rank, 1);
  EXPECT_EQ(f.message,
            "race on rank 1 scratch[0]: rank 1 tb 0 step 0 (recv from rank 0 into scratch[0]) "
            "writes it and rank 1 tb 1 step 0 (copy scratch[0] to output[0]) reads it, with no "
            "chain of program order, dependencies and messages between them; add a dependency so "
            "that tb 1 step 0 waits for tb 0 step 0 (add {tb 0, step 0} to its deps)");
}

TEST(VerifyRaces, DependencyRemovesTheRace) {
  ir::Algorithm a = makeScratchHandOff();
  a.ranks[1].threadblocks[0].steps[0].hasDependents = true;
  a.ranks[1].threadblocks[1].steps[0].deps = {{0, 0}};
  const VerifyReport report = verifyAlgorithm(a);
  EXPECT_TRUE(report.ok()) << report.describe();
  EXPECT_FALSE(report.postconditionChecked);
  EXPECT_EQ(report.describe(),
            "ok: deadlock freedom (fifo=8, 2 iterations) and races checked on 2 ranks; "
            "postcondition not checked: custom collective 'handoff' is unknown to chorus; name "
            "the collective it implements with --collective NAME (known: " +
                ir::describeCustomCollectiveNames() +
                "), or register it with ir::registerCustomCollective");
}

TEST(VerifyRaces, MessagesThroughAnotherRankOrderAccesses) {
  // Rank 1 tb 0 receives into scratch[0]; tb 2 (after it, by dependency) sends a token to rank
  // 0, which forwards it back on channel 1 to rank 1 tb 1; tb 1 then reads scratch[0]. The
  // order comes from messages only, through another rank.
  ir::Algorithm a = makeScratchHandOff();
  a.chunksPerLoop = 2;
  a.ranks[0].inputChunks = 2;
  a.ranks[0].scratchChunks = 1;  // the token passes through scratch (the input is read-only)
  a.ranks[1].scratchChunks = 2;
  ir::Threadblock forward = makeTb(1, 1, 1, /*channel=*/1);
  forward.steps.push_back(
      makeStep(OpKind::recvCopySend, BufferKind::scratch, 0, BufferKind::scratch, 0));
  a.ranks[0].threadblocks.push_back(forward);
  auto& rank1 = a.ranks[1].threadblocks;
  rank1[0].steps[0].hasDependents = true;
  rank1[1].recvPeer = 0;
  rank1[1].channel = 1;
  rank1[1].steps.insert(rank1[1].steps.begin(),
                        makeStep(OpKind::recv, BufferKind::input, 0, BufferKind::scratch, 1));
  ir::Threadblock token = makeTb(2, 0, -1, /*channel=*/1);
  ir::Step send = makeStep(OpKind::send, BufferKind::scratch, 0, BufferKind::input, 1);
  send.deps = {{0, 0}};
  token.steps.push_back(send);
  rank1.push_back(token);
  const VerifyReport report = verifyAlgorithm(a);
  EXPECT_TRUE(report.ok()) << report.describe();

  // Without the dependency the token may leave before the data arrives: a race on scratch[0]
  // between tb 0's receive and both readers.
  a.ranks[1].threadblocks[2].steps[0].deps.clear();
  const VerifyReport racy = verifyAlgorithm(a);
  ASSERT_FALSE(racy.ok());
  EXPECT_EQ(racy.findings[0].kind, FindingKind::race) << racy.describe();
}

TEST(VerifyRaces, WriteWriteRaceOnAliasedChunkNamesBothNames) {
  // In-place AllReduce on 2 ranks: tb 1 of rank 0 copies input[0] to output[1] while tb 0
  // writes input[1] (the same chunk in place).
  ir::Algorithm a = testing::makeRingAllReduce(2);
  ir::Threadblock extra = makeTb(1, -1, -1);
  extra.steps.push_back(makeStep(OpKind::copy, BufferKind::input, 0, BufferKind::output, 1));
  a.ranks[0].threadblocks.push_back(extra);
  const VerifyReport report = verifyAlgorithm(a);
  ASSERT_FALSE(report.ok());
  bool found = false;
  for (const Finding& f : report.findings) {
    if (f.kind != FindingKind::race) continue;
    if (f.message.find("race on rank 0 input[1]") == std::string::npos) continue;
    found = true;
    EXPECT_THAT(f.message, HasSubstr("rank 0 tb 1 step 0 (copy input[0] to output[1]) writes it "
                                     "as output[1]"));
  }
  EXPECT_TRUE(found) << report.describe();
}

}  // namespace
}  // namespace chorus::verify
