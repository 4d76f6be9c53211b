// Structure of the tree, chain, scatter-allgather and 2-D algorithms, read off their traced
// DAGs: message counts, tree depths, the double binary tree's complementary trees, chain hops,
// every broadcast root, and the 2-D algorithm's row/column phases (the registry sweep in
// algorithms_test.cpp already checks every postcondition at default parameters).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "algorithm_test_util.h"
#include "algorithms/registry.h"
#include "log2_for_test.h"

namespace chorus::algorithms {
namespace {

using testing_support::messagesOf;
using testing_support::nodesRequest;
using testing_support::ranksRequest;

using testing_support::ceilLog2;

int floorLog2(int value) {
  int bits = 0;
  while ((2 << bits) <= value)
    ++bits;
  return bits;
}

// The longest chain of messages linked by data dependencies (local ops count 0).
int messageDepth(const lang::Program& program) {
  const std::vector<ir::DagOp>& ops = program.dag().ops;
  std::vector<int> depth(ops.size(), 0);
  int deepest = 0;
  for (const ir::DagOp& op : ops) {
    int before = 0;
    for (int dep : op.trueDeps)
      before = std::max(before, depth[static_cast<std::size_t>(dep)]);
    depth[static_cast<std::size_t>(op.id)] = before + (op.src.rank != op.dst.rank ? 1 : 0);
    deepest = std::max(deepest, depth[static_cast<std::size_t>(op.id)]);
  }
  return deepest;
}

void expectCorrect(const lang::Program& program, const std::string& what) {
  for (const lang::Violation& violation : program.checkPostcondition())
    ADD_FAILURE() << what << ": " << violation.describe();
}

// ---- allreduce.binomial ----------------------------------------------------------------------

// Reduce then broadcast over one tree: 2(p-1) messages, rank 0 receives and sends ⌈lg p⌉
// each (its 2⌈lg p⌉ steps), every other rank sends exactly one partial sum, and no data path
// is longer than 2⌈lg p⌉ messages (exactly that for powers of two).
TEST(TreeAllReduceBinomialTest, TwoLogDepthAndTwoMessagesPerEdge) {
  for (int ranks = 2; ranks <= 16; ++ranks) {
    auto program = buildProgram(ranksRequest("allreduce.binomial", ranks));
    expectCorrect(*program, std::to_string(ranks));
    const std::vector<ir::DagOp> messages = messagesOf(*program);
    EXPECT_EQ(static_cast<int>(messages.size()), 2 * (ranks - 1)) << ranks;
    std::vector<int> reducesSent(static_cast<std::size_t>(ranks), 0);
    int rootSends = 0;
    int rootReceives = 0;
    for (const ir::DagOp& op : messages) {
      EXPECT_EQ(op.count, 1);
      if (op.kind == ir::DagOpKind::reduce) ++reducesSent[static_cast<std::size_t>(op.src.rank)];
      if (op.src.rank == 0) ++rootSends;
      if (op.dst.rank == 0) ++rootReceives;
    }
    EXPECT_EQ(rootSends, ceilLog2(ranks)) << ranks;
    EXPECT_EQ(rootReceives, ceilLog2(ranks)) << ranks;
    EXPECT_EQ(reducesSent[0], 0) << ranks;
    for (int r = 1; r < ranks; ++r)
      EXPECT_EQ(reducesSent[static_cast<std::size_t>(r)], 1) << ranks << " rank " << r;
    const int depth = messageDepth(*program);
    EXPECT_LE(depth, 2 * ceilLog2(ranks)) << ranks;
    if ((ranks & (ranks - 1)) == 0) {
      EXPECT_EQ(depth, 2 * ceilLog2(ranks)) << ranks;
    }
  }
}

// ---- allreduce.double-binary-tree ------------------------------------------------------------

struct TreePair {
  std::vector<std::set<int>> interior{2};
  std::vector<std::map<int, std::set<int>>> parents{2};   // child -> parents seen, per tree
  std::vector<std::map<int, std::set<int>>> children{2};  // parent -> children, per tree
};

// Tree t owns chunks t*k .. t*k+k-1: its edges are the reduces into a parent.
TreePair treesOf(const lang::Program& program, int pieces) {
  TreePair trees;
  for (const ir::DagOp& op : messagesOf(program)) {
    if (op.kind != ir::DagOpKind::reduce) continue;
    const std::size_t tree = op.dst.index < pieces ? 0 : 1;
    trees.interior[tree].insert(op.dst.rank);
    trees.parents[tree][op.src.rank].insert(op.dst.rank);
    trees.children[tree][op.dst.rank].insert(op.src.rank);
  }
  return trees;
}

int treeHeight(const std::map<int, std::set<int>>& parents, int ranks) {
  int height = 0;
  for (int r = 0; r < ranks; ++r) {
    int depth = 0;
    for (int at = r; parents.count(at) != 0; at = *parents.at(at).begin()) {
      ++depth;
      if (depth > ranks) return -1;  // a cycle
    }
    height = std::max(height, depth);
  }
  return height;
}

TEST(DoubleBinaryTreeTest, EveryRankIsInteriorInAtMostOneTree) {
  for (int ranks = 2; ranks <= 16; ++ranks) {
    auto program = buildProgram(ranksRequest("allreduce.double-binary-tree", ranks));
    const TreePair trees = treesOf(*program, 4);
    for (int r : trees.interior[0])
      EXPECT_EQ(trees.interior[1].count(r), 0u) << ranks << " ranks: rank " << r;
    EXPECT_FALSE(trees.interior[0].empty()) << ranks;
    EXPECT_FALSE(trees.interior[1].empty()) << ranks;
  }
}

// Two spanning binary trees of height ⌊lg p⌋, each with one root and one parent per other rank.
TEST(DoubleBinaryTreeTest, TwoSpanningBinaryTreesOfLogHeight) {
  for (int ranks = 2; ranks <= 16; ++ranks) {
    auto program = buildProgram(ranksRequest("allreduce.double-binary-tree", ranks));
    const TreePair trees = treesOf(*program, 4);
    for (std::size_t t = 0; t < 2; ++t) {
      EXPECT_EQ(static_cast<int>(trees.parents[t].size()), ranks - 1) << ranks << " tree " << t;
      for (const auto& [child, parents] : trees.parents[t])
        EXPECT_EQ(parents.size(), 1u) << ranks << " tree " << t << " rank " << child;
      for (const auto& [parent, children] : trees.children[t])
        EXPECT_LE(children.size(), 2u) << ranks << " tree " << t << " rank " << parent;
      EXPECT_EQ(treeHeight(trees.parents[t], ranks), floorLog2(ranks)) << ranks << " tree " << t;
    }
    // The roots differ, so the two halves' totals form at different ranks.
    int roots[2] = {-1, -1};
    for (std::size_t t = 0; t < 2; ++t)
      for (int r = 0; r < ranks; ++r)
        if (trees.parents[t].count(r) == 0) roots[t] = r;
    EXPECT_NE(roots[0], roots[1]) << ranks;
  }
}

// Every piece of each half goes up and down its own tree on its own channel: 2(p-1) messages
// per piece and tree, one chunk each.
TEST(DoubleBinaryTreeTest, PipelinePiecesAreSeparateMessagesOnPerTreeChannels) {
  for (int ranks : {2, 3, 7, 8, 13}) {
    for (int pieces : {1, 4, 32}) {
      auto program =
          buildProgram(ranksRequest("allreduce.double-binary-tree", ranks, {{"pipeline", pieces}}));
      expectCorrect(*program, std::to_string(ranks) + "/" + std::to_string(pieces));
      EXPECT_EQ(program->collective().chunkFactor(), 2 * pieces);
      const std::vector<ir::DagOp> messages = messagesOf(*program);
      EXPECT_EQ(static_cast<int>(messages.size()), 2 * pieces * 2 * (ranks - 1));
      for (const ir::DagOp& op : messages) {
        EXPECT_EQ(op.count, 1);
        EXPECT_EQ(op.channel, op.dst.index < pieces ? 0 : 1);
      }
    }
  }
}

TEST(DoubleBinaryTreeTest, CompilesAndVerifiesAtPipelineExtremes) {
  for (int ranks : {2, 5, 12, 16}) {
    for (int pieces : {1, 32}) {
      const compiler::CompileResult result = compileAlgorithm(
          ranksRequest("allreduce.double-binary-tree", ranks, {{"pipeline", pieces}}));
      EXPECT_EQ(result.algorithm.nranks, ranks);
    }
  }
}

// ---- broadcast.chain -------------------------------------------------------------------------

// Piece j hops root -> root+1 -> ... -> root-1: k(p-1) one-chunk messages, each rank receives
// k of them from its predecessor, and with k = 1 the chain is p-1 messages deep.
TEST(BroadcastChainTest, EveryPieceWalksTheWholeChain) {
  for (int ranks : {2, 5, 16}) {
    for (int pieces : {1, 8, 64}) {
      for (int root : {0, ranks - 1, ranks / 2}) {
        auto program = buildProgram(
            ranksRequest("broadcast.chain", ranks, {{"pipeline", pieces}, {"root", root}}));
        const std::string what =
            std::to_string(ranks) + "/" + std::to_string(pieces) + "/" + std::to_string(root);
        expectCorrect(*program, what);
        const std::vector<ir::DagOp> messages = messagesOf(*program);
        EXPECT_EQ(static_cast<int>(messages.size()), pieces * (ranks - 1)) << what;
        std::vector<int> received(static_cast<std::size_t>(ranks), 0);
        for (const ir::DagOp& op : messages) {
          EXPECT_EQ(op.count, 1) << what;
          EXPECT_EQ(op.dst.rank, (op.src.rank + 1) % ranks) << what;
          ++received[static_cast<std::size_t>(op.dst.rank)];
        }
        for (int r = 0; r < ranks; ++r)
          EXPECT_EQ(received[static_cast<std::size_t>(r)], r == root ? 0 : pieces) << what;
        EXPECT_EQ(messageDepth(*program), ranks - 1) << what;
      }
    }
  }
}

// ---- both pipelined / scattered broadcasts at every root -------------------------------------

TEST(BroadcastAlgorithmsTest, EveryRootCompilesAndVerifies) {
  for (const char* name : {"broadcast.chain", "broadcast.scatter-allgather"}) {
    for (int ranks : {2, 3, 6, 8, 11}) {
      for (int root = 0; root < ranks; ++root) {
        BuildRequest request = ranksRequest(name, ranks, {{"root", root}});
        const compiler::CompileResult result = compileAlgorithm(request);
        EXPECT_EQ(result.algorithm.root, root) << name << " " << ranks;
      }
    }
  }
}

// ---- broadcast.scatter-allgather -------------------------------------------------------------

// Every non-root rank receives each of the p blocks exactly once and the root none; the root
// sends ⌈lg p⌉ scatter messages and p-1 ring blocks; nobody sends more than 2(p-1) blocks.
TEST(BroadcastScatterAllGatherTest, EveryBlockArrivesOnceAndNoRankSendsMoreThanTwiceN) {
  for (int ranks = 2; ranks <= 16; ++ranks) {
    for (int root : {0, ranks - 1}) {
      auto program =
          buildProgram(ranksRequest("broadcast.scatter-allgather", ranks, {{"root", root}}));
      const std::string what = std::to_string(ranks) + " root " + std::to_string(root);
      expectCorrect(*program, what);
      std::vector<std::multiset<int>> blocksIn(static_cast<std::size_t>(ranks));
      std::vector<int> blocksSent(static_cast<std::size_t>(ranks), 0);
      int rootMessages = 0;
      for (const ir::DagOp& op : messagesOf(*program)) {
        EXPECT_EQ(op.kind, ir::DagOpKind::copy);
        for (int b = op.dst.index; b < op.dst.index + op.count; ++b)
          blocksIn[static_cast<std::size_t>(op.dst.rank)].insert(b);
        blocksSent[static_cast<std::size_t>(op.src.rank)] += op.count;
        if (op.src.rank == root) ++rootMessages;
      }
      for (int r = 0; r < ranks; ++r) {
        const std::multiset<int>& in = blocksIn[static_cast<std::size_t>(r)];
        if (r == root) {
          EXPECT_TRUE(in.empty()) << what;
          continue;
        }
        EXPECT_EQ(static_cast<int>(in.size()), ranks) << what << " rank " << r;
        for (int b = 0; b < ranks; ++b)
          EXPECT_EQ(in.count(b), 1u) << what << " rank " << r << " block " << b;
        EXPECT_LE(blocksSent[static_cast<std::size_t>(r)], 2 * (ranks - 1)) << what;
      }
      EXPECT_EQ(blocksSent[static_cast<std::size_t>(root)], 2 * (ranks - 1)) << what;
      EXPECT_EQ(rootMessages, ceilLog2(ranks) + ranks - 1) << what;
    }
  }
}

// ---- allreduce.2d ----------------------------------------------------------------------------

struct GridCase {
  int nodes;
  int gpus;
};

// Every message stays in one row (same node) or one column (same GPU index); there are
// 2NG(N+G-2) per half; half A (chunks < NG) runs its rows on channel 0 and its columns on 1,
// half B its columns on channel 2 and its rows on 3; and both
// dimensions carry messages that depend on no earlier message, i.e. the halves start on
// different dimensions at the same time.
TEST(TwoDimensionalAllReduceTest, RowAndColumnRingsRunConcurrently) {
  for (const GridCase grid : {GridCase{1, 2}, GridCase{2, 1}, GridCase{2, 2}, GridCase{2, 3},
                              GridCase{3, 2}, GridCase{1, 8}, GridCase{4, 1}, GridCase{4, 8}}) {
    const int nodes = grid.nodes;
    const int gpus = grid.gpus;
    const std::string what = std::to_string(nodes) + "x" + std::to_string(gpus);
    auto program = buildProgram(nodesRequest("allreduce.2d", nodes, gpus));
    expectCorrect(*program, what);
    const int half = nodes * gpus;
    EXPECT_EQ(program->collective().chunkFactor(), 2 * half) << what;
    const std::vector<ir::DagOp> messages = messagesOf(*program);
    EXPECT_EQ(static_cast<int>(messages.size()), 4 * half * (nodes + gpus - 2)) << what;

    const std::vector<ir::DagOp>& ops = program->dag().ops;
    bool firstRowMessage = false;
    bool firstColumnMessage = false;
    for (const ir::DagOp& op : messages) {
      const bool sameRow = op.src.rank / gpus == op.dst.rank / gpus;
      const bool sameColumn = op.src.rank % gpus == op.dst.rank % gpus;
      EXPECT_TRUE(sameRow != sameColumn) << what << ": " << op.src.rank << " -> " << op.dst.rank;
      const int expectedChannel = op.dst.index < half ? (sameRow ? 0 : 1) : (sameRow ? 3 : 2);
      EXPECT_EQ(op.channel, expectedChannel) << what;
      const bool first = std::none_of(op.trueDeps.begin(), op.trueDeps.end(), [&](int dep) {
        const ir::DagOp& before = ops[static_cast<std::size_t>(dep)];
        return before.src.rank != before.dst.rank;
      });
      if (first && sameRow) firstRowMessage = true;
      if (first && sameColumn) firstColumnMessage = true;
    }
    EXPECT_EQ(firstRowMessage, gpus > 1) << what;
    EXPECT_EQ(firstColumnMessage, nodes > 1) << what;
  }
}

// channels = 2: each of the four (half, dimension) groups spreads its blocks over two channels
// of its own, and every shape up to 4 x 8 still compiles and verifies.
TEST(TwoDimensionalAllReduceTest, ChannelsSplitEachGroupAndStillVerify) {
  for (int nodes = 1; nodes <= 4; ++nodes) {
    for (int gpus = 1; gpus <= 8; ++gpus) {
      if (nodes * gpus < 2) continue;
      const std::string what = std::to_string(nodes) + "x" + std::to_string(gpus);
      const BuildRequest request = nodesRequest("allreduce.2d", nodes, gpus, {{"channels", 2}});
      auto program = buildProgram(request);
      expectCorrect(*program, what);
      const int half = nodes * gpus;
      std::map<int, std::set<int>> channelsOf;  // group -> channels
      for (const ir::DagOp& op : messagesOf(*program)) {
        const bool sameRow = op.src.rank / gpus == op.dst.rank / gpus;
        const int group = op.dst.index < half ? (sameRow ? 0 : 1) : (sameRow ? 3 : 2);
        channelsOf[group].insert(op.channel);
      }
      // A ring of L >= 2 ranks has L >= 2 blocks, so it uses both of its group's channels.
      for (const auto& [group, channels] : channelsOf)
        EXPECT_EQ(channels, (std::set<int>{2 * group, 2 * group + 1})) << what << " g" << group;
      EXPECT_EQ(channelsOf.size(), static_cast<std::size_t>(2 * (nodes > 1) + 2 * (gpus > 1)))
          << what;
      const compiler::CompileResult result = compileAlgorithm(request);
      EXPECT_EQ(result.algorithm.nranks, half) << what;
    }
  }
}

}  // namespace
}  // namespace chorus::algorithms
