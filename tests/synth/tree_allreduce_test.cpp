// Tree AllReduce programs from synthesized trees (MXNet trees): the single- and multi-tree programs
// for the DGX-1 and for random matrices (seed printed) pass the traced postcondition and the
// compiler's verifier, and run with exact results on the thread transport; MXNet's switch
// between them by array size; defective trees are refused with the defect named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "ir/algorithm.h"
#include "runtime/thread_runner.h"
#include "support/error.h"
#include "synth/link_matrix.h"
#include "synth/tree_allreduce.h"
#include "synth/trees.h"
#include "test_seed.h"
#include "topology/presets.h"
#include "tree_test_util.h"

namespace chorus {
namespace {

using ::testing::HasSubstr;

// Runs `algorithm` on threads with int32 sums at two counts and expects exact results.
void expectExactOnThreads(const ir::Algorithm& algorithm, const std::string& label) {
  for (const std::size_t count : {std::size_t{1}, std::size_t{1031}}) {
    runtime::ThreadRunOptions options;
    options.count = count;
    options.type = runtime::DataType::int32;
    options.op = runtime::ReduceOp::sum;
    options.timeout = std::chrono::milliseconds(60'000);
    options.fifo.slotBytes = 4096;
    const runtime::ThreadRunReport report = runtime::runOnThreads(algorithm, options);
    EXPECT_TRUE(report.ok()) << label << " count " << count << ": " << report.firstWrong;
    EXPECT_GT(report.checkedElements, 0u) << label;
  }
}

void expectBothProgramsRun(const synth::TreeSet& set, const std::string& label, int pipeline = 1) {
  const int ranks = set.weights.size;
  synth::TreeAllReduceOptions options;
  options.pipeline = pipeline;
  const ir::Algorithm single = synth::compileTreeProgram(
      *synth::buildSingleTreeAllReduce(set.trees.front(), ranks, options));
  EXPECT_EQ(single.nranks, ranks);
  EXPECT_EQ(single.collective, ir::CollectiveKind::allreduce);
  expectExactOnThreads(single, label + " single tree");
  const ir::Algorithm multi =
      synth::compileTreeProgram(*synth::buildMultiTreeAllReduce(set.trees, ranks, options));
  EXPECT_EQ(multi.nranks, ranks);
  EXPECT_EQ(multi.chunksPerLoop, ranks * pipeline);
  expectExactOnThreads(multi, label + " multi-tree");
}

synth::TreeSet dgx1Trees(synth::TreeStrategy strategy) {
  synth::LinkMatrix w = synth::linkMatrixFromTopology(topology::preset("dgx1"));
  synth::applyPcieRule(w);
  synth::TreeOptions options;
  options.strategy = strategy;
  return synth::computeTrees(w, options);
}

TEST(TreeAllReduce, Dgx1MxnetTreesRunExactly) {
  expectBothProgramsRun(dgx1Trees(synth::TreeStrategy::mxnet), "dgx1 mxnet");
}

TEST(TreeAllReduce, Dgx1BestTreesRunExactlyAlsoPipelined) {
  const synth::TreeSet set = dgx1Trees(synth::TreeStrategy::best);
  expectBothProgramsRun(set, "dgx1 best");
  expectBothProgramsRun(set, "dgx1 best pipelined", 3);
}

TEST(TreeAllReduce, SingleTreeTakesTwoHopsPerLevel) {
  // Depth 3: the root's result reaches a leaf after 3 reduce and 3 broadcast levels; every
  // transfer is one step up and one down, so 2 * 7 communication steps per chunk in total.
  const synth::TreeSet set = dgx1Trees(synth::TreeStrategy::mxnet);
  const std::unique_ptr<lang::Program> program =
      synth::buildSingleTreeAllReduce(set.trees.front(), 8);
  int transfers = 0;
  for (const ir::DagOp& op : program->dag().ops)
    transfers += op.src.rank != op.dst.rank ? 1 : 0;
  EXPECT_EQ(transfers, 2 * 7);
}

TEST(TreeAllReduce, RandomMatricesRunExactly) {
  std::mt19937 gen(testing_support::testSeed());
  for (const int n : {2, 3, 5, 6, 8, 11, 13, 16}) {
    const synth::LinkMatrix w = testing_support::randomLinkMatrix(n, gen);
    for (const synth::TreeStrategy strategy :
         {synth::TreeStrategy::mxnet, synth::TreeStrategy::best}) {
      synth::TreeOptions options;
      options.strategy = strategy;
      expectBothProgramsRun(
          synth::computeTrees(w, options),
          std::to_string(n) + " ranks " + std::string(synth::treeStrategyName(strategy)));
    }
  }
}

// MXNet's switch (CommDeviceTree): tree 0 alone up to MXNET_KVSTORE_TREE_ARRAY_BOUND = 10^7
// elements, one tree per GPU above it, below, at and above the bound.
TEST(TreeAllReduce, ModeSwitchesAboveTheArrayBound) {
  constexpr std::uint64_t kBound = synth::kMxnetTreeArrayBound;
  EXPECT_EQ(kBound, 10'000'000u);
  EXPECT_EQ(synth::chooseTreeMode(1, 8), synth::TreeMode::single);
  EXPECT_EQ(synth::chooseTreeMode(kBound - 1, 8), synth::TreeMode::single);
  EXPECT_EQ(synth::chooseTreeMode(kBound, 8), synth::TreeMode::single);
  EXPECT_EQ(synth::chooseTreeMode(kBound + 1, 8), synth::TreeMode::multi);
  EXPECT_EQ(synth::chooseTreeMode(4 * kBound, 8), synth::TreeMode::multi);
  // Another bound, as MXNET_KVSTORE_TREE_ARRAY_BOUND=1000 would set it.
  EXPECT_EQ(synth::chooseTreeMode(1000, 8, 1000), synth::TreeMode::single);
  EXPECT_EQ(synth::chooseTreeMode(1001, 8, 1000), synth::TreeMode::multi);
  // Above the bound but shorter than 2 elements per GPU: MXNet keeps one tree.
  EXPECT_EQ(synth::chooseTreeMode(15, 8, 4), synth::TreeMode::single);
  EXPECT_EQ(synth::chooseTreeMode(16, 8, 4), synth::TreeMode::multi);
  EXPECT_EQ(synth::treeModeName(synth::TreeMode::single), "single-tree");
  EXPECT_EQ(synth::treeModeName(synth::TreeMode::multi), "multi-tree");
}

// The same switch as plan size ranges in bytes: [0, 4·(10^7 + 1)) single-tree, the rest
// multi-tree, for float32; the 2·ranks rule moves the edge when the bound is tiny.
TEST(TreeAllReduce, ModeByteRangesMeetAtTheFirstMultiTreeSize) {
  const std::uint64_t edge = 4 * (synth::kMxnetTreeArrayBound + 1);
  const synth::TreeModeBytes single =
      synth::treeModeBytes(synth::TreeMode::single, 8, synth::kMxnetTreeArrayBound, 4);
  const synth::TreeModeBytes multi =
      synth::treeModeBytes(synth::TreeMode::multi, 8, synth::kMxnetTreeArrayBound, 4);
  EXPECT_EQ(single.minBytes, 0u);
  EXPECT_EQ(single.maxBytes, edge);
  EXPECT_EQ(multi.minBytes, edge);
  EXPECT_EQ(multi.maxBytes, 0u);  // no limit
  EXPECT_EQ(synth::treeModeBytes(synth::TreeMode::multi, 8, 4, 2).minBytes, 2u * 16u);
}

// buildTreeAllReduceFor lowers what chooseTreeMode picks: at the bound the single tree (one
// chunk per piece), one element above it the DGX-1's 8 trees (8 slices).
TEST(TreeAllReduce, BuildForAnArraySizeUsesTheChosenMode) {
  const synth::TreeSet set = dgx1Trees(synth::TreeStrategy::mxnet);
  synth::TreeAllReduceOptions options;
  options.pipeline = 2;
  const std::uint64_t bound = synth::kMxnetTreeArrayBound;
  for (const std::uint64_t elements : {bound - 1, bound}) {
    const auto program = synth::buildTreeAllReduceFor(elements, set.trees, 8, options);
    EXPECT_EQ(program->collective().chunkFactor(), 2) << elements;
    EXPECT_EQ(program->dag().name, "allreduce.tree");
  }
  const auto multi = synth::buildTreeAllReduceFor(bound + 1, set.trees, 8, options);
  EXPECT_EQ(multi->collective().chunkFactor(), 16);
  EXPECT_EQ(multi->dag().name, "allreduce.multitree");
  expectExactOnThreads(synth::compileTreeProgram(*multi), "dgx1 mxnet above the bound");
  EXPECT_THROW(synth::buildTreeAllReduceFor(bound, {}, 8, options), OptionError);
}

TEST(TreeAllReduce, DefectiveTreeIsRefused) {
  const synth::Tree twice = *synth::formTopology({0, 1, 1, 3}, 2);
  try {
    synth::buildSingleTreeAllReduce(twice, 4);
    ADD_FAILURE() << "no error";
  } catch (const CompileError& error) {
    EXPECT_THAT(error.what(), HasSubstr("tree 0 (root 0)"));
    EXPECT_THAT(error.what(), HasSubstr("reduced twice"));
  }
  const synth::Tree good = *synth::formTopology({0, 1, 2, 3}, 2);
  EXPECT_THROW(synth::buildMultiTreeAllReduce({good, twice}, 4), CompileError);
  synth::TreeAllReduceOptions zero;
  zero.pipeline = 0;
  EXPECT_THROW(synth::buildSingleTreeAllReduce(good, 4, zero), OptionError);
}

}  // namespace
}  // namespace chorus
