// Golden tests per compiler pass: the key lines of the printed IR, and each optional pass
// disabled once (CONTRIBUTING.md "Tests").
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "algorithms/registry.h"
#include "compiler/pipeline.h"
#include "ir/msccl_xml.h"
#include "ir/text_format.h"
#include "pass_test_util.h"
#include "support/error.h"
#include "verify/verify.h"

namespace chorus::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// lower + fuse-instructions: the 4-rank ring becomes MSCCL's exact op sequence.
TEST(FuseInstructions, RingGetsRecvReduceSendChain) {
  auto p = ringAllReduce(4);
  const auto result = compileWith(*p);
  EXPECT_THAT(stepLines(result.algorithm, 0),
              ElementsAre("    0: send input[3] -> input[3] count=1",
                          "    1: recvReduceSend input[2] -> input[2] count=1",
                          "    2: recvReduceSend input[1] -> input[1] count=1",
                          "    3: recvReduceCopySend input[0] -> input[0] count=1",
                          "    4: recvCopySend input[3] -> input[3] count=1",
                          "    5: recvCopySend input[2] -> input[2] count=1",
                          "    6: recv input[1] -> input[1] count=1"));
}

TEST(FuseInstructions, DisabledKeepsPlainSendsAndReceives) {
  auto p = ringAllReduce(4);
  const auto result = compileWith(*p, {"fuse-instructions"});
  const auto lines = stepLines(result.algorithm, 0);
  const std::string all = ::testing::PrintToString(lines);
  EXPECT_THAT(all, HasSubstr("recvReduceCopy input[2] -> input[2]"));
  EXPECT_THAT(all, Not(HasSubstr("recvReduceSend")));
  EXPECT_THAT(all, Not(HasSubstr("recvCopySend")));
  // Every hop is a separate send and receive: 2(R-1) receives and 2(R-1) sends per rank.
  EXPECT_EQ(lines.size(), 12u);
  EXPECT_TRUE(result.passes[2].skipped);
  EXPECT_EQ(result.passes[2].name, "fuse-instructions");
}

// A reduced value that ends in the output is kept (rrcs), one overwritten later is not (rrs).
TEST(FuseInstructions, ReduceSendOnlyWhenValueIsDead) {
  lang::Program p("chain", lang::allReduce(3, 1, true));
  // 0 -> 1 (reduce) -> 2 (reduce): rank 1 forwards its partial sum, which is then overwritten
  // by the final sum coming back.
  auto c = p.chunk(1, lang::Buffer::input, 0).reduce(p.chunk(0, lang::Buffer::input, 0));
  c = p.chunk(2, lang::Buffer::input, 0).reduce(c);
  c.copy(0, lang::Buffer::input, 0).copy(1, lang::Buffer::input, 0);
  ASSERT_TRUE(p.checkPostcondition().empty());
  const auto result = compileWith(p);
  EXPECT_THAT(stepLines(result.algorithm, 1)[0], HasSubstr("recvReduceSend input[0]"));
  EXPECT_THAT(stepLines(result.algorithm, 2)[0], HasSubstr("recvReduceCopySend input[0]"));
}

// replicate-instances: two instances double the chunks and use disjoint channels.
TEST(ReplicateInstances, InstancesRefineChunksOntoDisjointChannels) {
  auto p = ringAllReduce(4, {.instances = 2});
  const auto result = compileWith(*p);
  const auto& a = result.algorithm;
  EXPECT_EQ(a.chunksPerLoop, 8);
  EXPECT_EQ(ir::channelCount(a), 2);
  ASSERT_EQ(a.ranks[0].threadblocks.size(), 2u);
  EXPECT_EQ(a.ranks[0].threadblocks[0].channel, 0);
  EXPECT_EQ(a.ranks[0].threadblocks[1].channel, 1);
  // Chunk 3 of the 1-instance program is sub-chunks 6 (instance 0) and 7 (instance 1).
  EXPECT_THAT(stepLines(a, 0)[0], HasSubstr("send input[6] -> input[6]"));
  EXPECT_THAT(stepLines(a, 0)[7], HasSubstr("send input[7] -> input[7]"));
}

TEST(ReplicateInstances, ParallelizeScopeSplitsOnlyItsOps) {
  lang::Program p("par", lang::allGather(2, 1, false));
  {
    auto scope = p.parallelize(2);
    p.chunk(0, lang::Buffer::input, 0).copy(1, lang::Buffer::output, 0);
  }
  p.chunk(1, lang::Buffer::input, 0).copy(0, lang::Buffer::output, 1);
  p.chunk(0, lang::Buffer::input, 0).copy(0, lang::Buffer::output, 0);
  p.chunk(1, lang::Buffer::input, 0).copy(1, lang::Buffer::output, 1);
  ASSERT_TRUE(p.checkPostcondition().empty());
  const auto result = compileWith(p);
  const auto& a = result.algorithm;
  EXPECT_EQ(a.chunksPerLoop, 4);  // every chunk cut in two
  // Rank 0 sends two halves on two channels; rank 1 sends its chunk whole (count 2).
  const auto r0 = ::testing::PrintToString(stepLines(a, 0));
  EXPECT_THAT(r0, HasSubstr("send input[0] -> output[0] count=1"));
  EXPECT_THAT(r0, HasSubstr("send input[1] -> output[1] count=1"));
  EXPECT_THAT(::testing::PrintToString(stepLines(a, 1)),
              HasSubstr("send input[0] -> output[2] count=2"));
  EXPECT_EQ(ir::channelCount(a), 2);
}

// assign-channels: two forwarding chains into the same peer need two channels; hints stick.
TEST(AssignChannels, ConflictingForwardersGetSeparateChannels) {
  lang::Program p("fan", lang::allGather(4, 1, false));
  for (int r = 0; r < 4; ++r)
    p.chunk(r, lang::Buffer::input, 0).copy(r, lang::Buffer::output, r);
  // 1 -> 0 -> 2 and 3 -> 0 -> 2: rank 0 forwards from two peers to the same peer.
  p.chunk(1, lang::Buffer::output, 1)
      .copy(0, lang::Buffer::output, 1)
      .copy(2, lang::Buffer::output, 1);
  p.chunk(3, lang::Buffer::output, 3)
      .copy(0, lang::Buffer::output, 3)
      .copy(2, lang::Buffer::output, 3);
  const auto result = compileWith(p, {"verify"});  // a fragment, not a whole AllGather
  std::vector<int> channels;
  for (const auto& tb : result.algorithm.ranks[0].threadblocks)
    if (tb.sendPeer == 2) channels.push_back(tb.channel);
  EXPECT_THAT(channels, ElementsAre(0, 1));
}

TEST(AssignChannels, ChannelHintIsHonouredAndImpossibleHintIsAnError) {
  lang::Program p("hint", lang::allGather(2, 1, false));
  p.chunk(0, lang::Buffer::input, 0).copy(1, lang::Buffer::output, 0, {.channel = 3});
  const auto result = compileWith(p, {"verify"});
  EXPECT_EQ(result.algorithm.ranks[0].threadblocks[0].channel, 3);

  lang::Program q("clash", lang::allGather(4, 1, false));
  q.chunk(1, lang::Buffer::input, 0)
      .copy(0, lang::Buffer::output, 1, {.channel = 0})
      .copy(2, lang::Buffer::output, 1, {.channel = 0});
  q.chunk(3, lang::Buffer::input, 0)
      .copy(0, lang::Buffer::output, 3, {.channel = 0})
      .copy(2, lang::Buffer::output, 3, {.channel = 0});
  try {
    compileWith(q, {"verify"});
    FAIL() << "expected a CompileError";
  } catch (const CompileError& e) {
    EXPECT_THAT(e.what(), HasSubstr("asks for channel 0"));
    EXPECT_THAT(e.what(), HasSubstr("pass_golden_test.cpp:"));
  }
}

// assign-threadblocks: the FIFO bound reorders sends so the program runs with 1 slot.
TEST(AssignThreadblocks, FifoBoundAvoidsDeadlockWithOneSlot) {
  lang::Program p("swap", lang::allToAll(2, 2, false));
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 4; ++i) {
      const int dst = i / 2;
      p.chunk(r, lang::Buffer::input, i).copy(dst, lang::Buffer::output, r * 2 + i % 2);
    }
  ASSERT_TRUE(p.checkPostcondition().empty());
  // Bounded by 1 slot: verified with 1 slot inside the pipeline.
  EXPECT_NO_THROW(compileWith(p, {}, 1));
  // Scheduled for 8 slots, the same program deadlocks when the runtime has only 1.
  const auto loose = compileWith(p, {}, 8);
  verify::VerifyOptions options;
  options.fifoSlots = 1;
  const auto report = verify::verifyAlgorithm(loose.algorithm, options);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.findings[0].kind, verify::FindingKind::deadlock);
}

TEST(AssignThreadblocks, LocalReducesLandOnThreadblocksWithPeers) {
  auto p = allPairsAllReduce(4);
  const auto result = compileWith(*p);
  // One bidirectional threadblock per peer, no extra local threadblock.
  for (const auto& rank : result.algorithm.ranks) {
    EXPECT_EQ(rank.threadblocks.size(), 3u);
    for (const auto& tb : rank.threadblocks)
      EXPECT_EQ(tb.sendPeer, tb.recvPeer);
  }
}

// Manual threadblocks (msccl-tools' allreduce_a100_allpairs_v2 pattern): copies pinned to
// threadblock = peer, local reduces to ranks + peer. Each rank leaves ids `r` and `ranks + r`
// unused; with two instances the local reduces open more threadblocks than the rank's copies
// have. The ids come out dense, with no empty threadblock.
TEST(AssignThreadblocks, ManualLocalThreadblocksGetDenseIds) {
  constexpr int kRanks = 4;
  lang::Program p("allpairs-manual", lang::allReduce(kRanks, kRanks, true),
                  lang::ProgramOptions{.instances = 2});
  for (int r = 0; r < kRanks; ++r)
    for (int q = 0; q < kRanks; ++q)
      if (q != r)
        p.chunk(r, lang::Buffer::input, q)
            .copy(q, lang::Buffer::scratch, r, {.sendTb = q, .recvTb = r});
  for (int q = 0; q < kRanks; ++q)
    for (int r = 0; r < kRanks; ++r)
      if (r != q)
        p.chunk(q, lang::Buffer::input, q)
            .reduce(p.chunk(q, lang::Buffer::scratch, r), {.sendTb = kRanks + r});
  for (int q = 0; q < kRanks; ++q)
    for (int r = 0; r < kRanks; ++r)
      if (r != q)
        p.chunk(q, lang::Buffer::input, q)
            .copy(r, lang::Buffer::input, q, {.sendTb = r, .recvTb = q});
  ASSERT_TRUE(p.checkPostcondition().empty());
  const auto result = compileWith(p);
  for (const auto& rank : result.algorithm.ranks) {
    ASSERT_FALSE(rank.threadblocks.empty());
    for (std::size_t i = 0; i < rank.threadblocks.size(); ++i) {
      EXPECT_EQ(rank.threadblocks[i].id, static_cast<int>(i)) << "rank " << rank.rank;
      EXPECT_FALSE(rank.threadblocks[i].steps.empty()) << "rank " << rank.rank << " tb " << i;
    }
  }
  EXPECT_TRUE(verify::verifyAlgorithm(result.algorithm).ok());
}

// insert-dependencies + prune-waits: pruning only removes waits, and the result still verifies.
TEST(PruneWaits, DisabledKeepsMoreWaits) {
  algorithms::BuildRequest request;
  request.algorithm = "allreduce.hierarchical";
  request.nodes = 2;
  request.gpusPerNode = 3;
  const auto p = algorithms::buildProgram(request);
  const auto pruned = compileWith(*p);
  const auto unpruned = compileWith(*p, {"prune-waits"});
  EXPECT_LT(ir::dependencyCount(pruned.algorithm), ir::dependencyCount(unpruned.algorithm));
  EXPECT_EQ(ir::stepCount(pruned.algorithm), ir::stepCount(unpruned.algorithm));
  EXPECT_THAT(ir::printText(pruned.algorithm), HasSubstr("deps=("));
  EXPECT_TRUE(verify::verifyAlgorithm(unpruned.algorithm).ok());
}

TEST(Pipeline, DeterministicBytes) {
  auto a = allPairsAllReduce(6);
  auto b = allPairsAllReduce(6);
  EXPECT_EQ(ir::writeMscclXml(compileWith(*a).algorithm),
            ir::writeMscclXml(compileWith(*b).algorithm));
}

TEST(Pipeline, PassNamesAndDisableErrors) {
  EXPECT_THAT(compiler::passNames(),
              ElementsAre("replicate-instances", "lower", "fuse-instructions", "assign-channels",
                          "assign-threadblocks", "insert-dependencies", "prune-waits", "verify"));
  auto p = ringAllReduce(3);
  try {
    compileWith(*p, {"fusion"});
    FAIL();
  } catch (const OptionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("unknown pass 'fusion'"));
  }
  try {
    compileWith(*p, {"lower"});
    FAIL();
  } catch (const OptionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot be disabled"));
  }
}

}  // namespace
}  // namespace chorus::testing

namespace chorus::testing {
namespace {

// fuse-instructions: a receive whose only use is a copy receives into the copy's destination,
// so an out-of-place ReduceScatter never writes the user's input buffer.
TEST(FuseInstructions, ReceiveCopyFoldingKeepsInputUntouched) {
  lang::Program p("rs", lang::reduceScatter(2, 1, false));
  for (int r = 0; r < 2; ++r) {
    const int peer = 1 - r;
    p.chunk(r, lang::Buffer::input, r)
        .reduce(p.chunk(peer, lang::Buffer::input, r))
        .copy(r, lang::Buffer::output, 0);
  }
  ASSERT_TRUE(p.checkPostcondition().empty());
  const auto folded = compileWith(p);
  EXPECT_THAT(stepLines(folded.algorithm, 0),
              ElementsAre("    0: send input[1] -> output[0] count=1",
                          "    1: recvReduceCopy input[0] -> output[0] count=1"));
  // Without the folding the sum lands in the caller's input first: the verifier refuses that
  // (writes-input), so this IR is printed unverified.
  const auto plain = compileWith(p, {"fuse-instructions", "verify"});
  EXPECT_THAT(stepLines(plain.algorithm, 0),
              ElementsAre("    0: send input[1] -> input[1] count=1",
                          "    1: recvReduceCopy input[0] -> input[0] count=1",
                          "    2: copy input[0] -> output[0] count=1"));
  try {
    compileWith(p, {"fuse-instructions"});
    ADD_FAILURE() << "the unfused program writes its input but verified";
  } catch (const CompileError& error) {
    EXPECT_THAT(error.what(), HasSubstr("writes-input: rank 0 tb 0 step 1 (recvReduceCopy from "
                                        "rank 1 with input[0] into input[0])"));
  }
}

}  // namespace
}  // namespace chorus::testing
