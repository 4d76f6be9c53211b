// Topology-aware trees (MXNet trees): every deterministic vector of MXNet's gpu_topology_test.cc,
// the dgx1 link matrix against MXNet's p3.16xlarge matrix (docs/sources.md "MXNet tree backend"),
// invariants of every tree built from random matrices of 2..16 GPUs (seed printed), the best
// strategy never losing to MXNet's, and the link-matrix reader's errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "support/error.h"
#include "synth/link_matrix.h"
#include "synth/trees.h"
#include "test_seed.h"
#include "topology/presets.h"
#include "tree_test_util.h"

namespace chorus {
namespace {

using synth::LinkMatrix;
using ::testing::HasSubstr;
using testing_support::p3Matrix;

// The 7x7 matrix of the ComputeTreeWeight / IsValid tests: p3Matrix()'s first 7 GPUs, PCIe -> 0.
LinkMatrix sevenGpuMatrix() {
  return synth::linkMatrixFromRows({{0, 2, 2, 3, 3, 0, 0},
                                    {2, 0, 3, 2, 0, 3, 0},
                                    {2, 3, 0, 3, 0, 0, 2},
                                    {3, 2, 3, 0, 0, 0, 0},
                                    {3, 0, 0, 0, 0, 2, 2},
                                    {0, 3, 0, 0, 2, 0, 3},
                                    {0, 0, 2, 0, 2, 3, 0}});
}

// ---- gpu_topology_test.cc vectors -----------------------------------------------------------

TEST(MxnetVectors, FormTopology) {
  const std::optional<synth::Tree> first = synth::formTopology({3, 2, 1, 5, 0, 0, 4, 6}, 3);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->topo, (std::vector<int>{3, 3, 0, 3, 1, 0, 4, 3, 2, 1, 5, 0, 0, 4, 6}));
  EXPECT_EQ(first->scan, (std::vector<int>{0, 1, 3, 7, 15}));
  EXPECT_EQ(first->root, 3);
  const std::optional<synth::Tree> second = synth::formTopology({3, 2, 0, 4, 1, 1, 5, 6}, 3);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->topo, (std::vector<int>{3, 3, 1, 3, 0, 1, 5, 3, 2, 0, 4, 1, 1, 5, 6}));
  EXPECT_EQ(second->scan, (std::vector<int>{0, 1, 3, 7, 15}));
  EXPECT_FALSE(synth::formTopology({3, -1, 0, 4, 1, 1, 5, 6}, 3));
}

TEST(MxnetVectors, ComputeTreeWeight) {
  const LinkMatrix w = sevenGpuMatrix();
  EXPECT_EQ(synth::computeTreeWeight(w, {3, 2, 1, 5, 0, 0, 4, 6}, 3, false), 16);
  EXPECT_EQ(synth::computeTreeWeight(w, {3, 2, 0, 4, 1, 1, 5, 6}, 3, false), 17);
  // With penalties: 3 -> 0 is used twice in [3 0 0 4 ...] (level 0 and level 2): -100.
  EXPECT_EQ(synth::computeTreeWeight(w, {3, 0, 0, 4, 1, 2, 5, 6}, 3, true),
            synth::computeTreeWeight(w, {3, 0, 0, 4, 1, 2, 5, 6}, 3, false) - 100);
}

TEST(MxnetVectors, Postprocess) {
  struct Case {
    std::vector<int> input, expected;
    int n, depth;
  };
  const std::vector<Case> cases = {
      {{3, 0, 0, 4, 1, 2, 5, 6}, {3, 3, 0, 4, 1, 2, 5, 6}, 7, 3},
      {{2, 0, 0, 4, 1, 3, 5, 1}, {2, 2, 0, 4, 1, 3, 5, 5}, 6, 3},
      {{5, 4, 1, 3, 1, 0, 2, 0}, {5, 4, 5, 3, 1, 0, 2, 2}, 6, 3},
      {{10, 10, 0, 0, 0, 0, 0, 1, 2, 3, 6, 4, 7, 5, 8, 9},
       {10, 10, 10, 10, 0, 0, 0, 1, 2, 3, 6, 4, 7, 5, 8, 9},
       11,
       4},
  };
  for (const Case& c : cases) {
    std::vector<int> leaves = c.input;
    synth::postprocessLeaves(leaves, c.n, c.depth);
    EXPECT_EQ(leaves, c.expected);
  }
}

TEST(MxnetVectors, ComputeDepth) {
  const std::vector<std::pair<int, int>> cases = {{2, 1}, {3, 2}, {4, 2},  {5, 3},
                                                  {7, 3}, {8, 3}, {16, 4}, {17, 5}};
  for (const auto& [n, depth] : cases)
    EXPECT_EQ(synth::computeDepth(n), depth) << n;
}

TEST(MxnetVectors, IsValid) {
  const LinkMatrix w = sevenGpuMatrix();
  EXPECT_TRUE(synth::isValidState(w, {3, 2, 1, 5, 0, 0, 4, 6}, 7, 3));
  EXPECT_TRUE(synth::isValidState(w, {3, 2, 0, 4, 1, 1, 5, 6}, 7, 3));   // 3 connects to 1 first
  EXPECT_FALSE(synth::isValidState(w, {3, 2, 5, 1, 0, 4, 2, 5}, 7, 3));  // 3 and 5 not linked
  EXPECT_FALSE(synth::isValidState(w, {3, 7, 2, 6, 0, 1, 4, 5}, 7, 3));  // 7 is not a GPU
  EXPECT_TRUE(synth::isValidState(w, {3, -1, 2, 6, 0, 1, 4, 5}, 7, 3));
  EXPECT_FALSE(synth::isValidState(w, {3, -1, 2, 6, 0, 1, 4, -1}, 8, 3));  // GPUs missing
  EXPECT_TRUE(synth::isValidState(w, {3, -1, -1, -1, -1, -1, -1, -1}, 1, 3));
}

TEST(MxnetVectors, FindBestMove) {
  const LinkMatrix w = p3Matrix();
  const std::vector<int> sides = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<char> unlocked(8, 0);
  const synth::KLMove move = synth::findBestMove(w, sides, {20, 0, 0, 0, 0, 0, 0, 20}, unlocked);
  EXPECT_EQ(move.a, 0);
  EXPECT_EQ(move.b, 7);
  EXPECT_EQ(move.gain, 38);
  const synth::KLMove none = synth::findBestMove(w, sides, std::vector<double>(8, 0), unlocked);
  EXPECT_EQ(none.a, -1);
  EXPECT_EQ(none.b, -1);
  EXPECT_EQ(none.gain, 0);
}

TEST(MxnetVectors, FindBestEdge) {
  const LinkMatrix w = p3Matrix();
  const std::vector<int> color(8, 0);
  const synth::BestEdge best = synth::findBestEdge(w, color, 3, 0);
  EXPECT_EQ(best.candidates, (std::vector<int>{0, 2}));
  EXPECT_EQ(best.weight, 3);
  const synth::BestEdge none = synth::findBestEdge(w, color, 4, 1);
  EXPECT_EQ(none.candidates, (std::vector<int>{-1}));
  EXPECT_EQ(none.weight, 0);
}

TEST(MxnetVectors, KLGenerateBinaryTree) {
  // The perturbed, asymmetric p3 matrix of the test: W[0][2] = 3, W[4][6] = 3.
  LinkMatrix w = p3Matrix();
  w.at(0, 2) = 3;
  w.at(4, 6) = 3;
  for (const auto& [start, expected] : std::vector<std::pair<std::vector<int>, std::vector<int>>>{
           {{0, 2, 4, 6}, {0, 2, 4, 6, 0, 3, 2, 1, 4, 7, 6, 5}},
           {{0, 6, 4, 2}, {0, 6, 4, 2, 0, 3, 6, 5, 4, 7, 2, 1}}}) {
    synth::Clustering clustering;
    clustering.color = {0, 1, 1, 0, 2, 3, 3, 2};
    clustering.clusters = 4;
    clustering.pairs = {{0, -2}, {1, -2}, {2, -2}, {3, -2}};
    std::vector<int> roots = {0, 2, 4, 6};
    std::vector<int> topo = start;
    std::vector<int> scan = {0, 0};
    std::mt19937 gen(1);
    EXPECT_FALSE(synth::growTreeLevel(w, clustering, roots, topo, scan, gen));
    EXPECT_EQ(topo, expected);
    EXPECT_EQ(scan, (std::vector<int>{0, 0, 4}));
    EXPECT_TRUE(clustering.pairs.empty());
  }
}

TEST(MxnetVectors, UpdateWeight) {
  LinkMatrix w = synth::linkMatrixFromRows({{0, 1}, {1, 0}});
  synth::penalizeTreeLinks(w, {1, 1, 0}, 0.7);
  EXPECT_EQ(w, synth::linkMatrixFromRows({{0, 0.7}, {0.7, 0}}));
}

TEST(MxnetVectors, IsConnected) {
  EXPECT_FALSE(synth::isNvlinkConnected(
      synth::linkMatrixFromRows({{0, 0, 2, 0}, {0, 0, 0, 2}, {2, 0, 0, 0}, {0, 2, 0, 0}})));
  EXPECT_FALSE(synth::isNvlinkConnected(
      synth::linkMatrixFromRows({{1, 1, 2, 1}, {1, 1, 1, 2}, {2, 1, 1, 1}, {1, 2, 1, 1}})));
  EXPECT_TRUE(synth::isNvlinkConnected(
      synth::linkMatrixFromRows({{1, 1, 2, 2}, {1, 1, 1, 2}, {2, 1, 1, 1}, {2, 2, 1, 1}})));
}

// P or its complement, one new cluster, pair (0, 1), stop == false.
void expectBisection(const LinkMatrix& w, const std::vector<int>& expected) {
  synth::Clustering clustering = synth::initialClustering(w.size);
  std::mt19937 gen(1);
  EXPECT_FALSE(synth::splitClusters(w, clustering, gen));
  EXPECT_EQ(clustering.clusters, 2);
  EXPECT_EQ(clustering.pairs, (std::vector<synth::ClusterPair>{{0, 1}}));
  int differences = 0;
  for (std::size_t i = 0; i < expected.size(); ++i)
    differences += clustering.color[i] != expected[i] ? 1 : 0;
  EXPECT_TRUE(differences == 0 || differences == w.size)
      << ::testing::PrintToString(clustering.color);
}

TEST(MxnetVectors, KernighanLin) {
  expectBisection(synth::linkMatrixFromRows({{0, 1, 2, 3, 2, 4},
                                             {1, 0, 1, 4, 2, 1},
                                             {2, 1, 0, 3, 2, 1},
                                             {3, 4, 3, 0, 4, 3},
                                             {2, 2, 2, 4, 0, 2},
                                             {4, 1, 1, 3, 2, 0}}),
                  {0, 1, 0, 1, 1, 0});
  expectBisection(synth::linkMatrixFromRows({{0, 1, 0, 0, 1, 1, 0, 0},
                                             {1, 0, 0, 0, 1, 1, 0, 0},
                                             {0, 0, 0, 1, 0, 1, 1, 1},
                                             {0, 0, 1, 0, 0, 0, 1, 1},
                                             {1, 1, 0, 0, 0, 1, 0, 0},
                                             {1, 1, 1, 0, 1, 0, 0, 0},
                                             {0, 0, 1, 1, 0, 0, 0, 1},
                                             {0, 0, 1, 1, 0, 0, 1, 0}}),
                  {0, 0, 1, 1, 0, 0, 1, 1});
}

TEST(MxnetVectors, BacktrackingFromRootOnTheP3Matrix) {
  // ComputeTreesFromRoot with backtrack = true on the p3 matrix: a full 3-level tree.
  const std::optional<synth::Tree> tree = synth::backtrackTree(p3Matrix(), 0, true, 100'000'000);
  ASSERT_TRUE(tree);
  EXPECT_EQ(tree->topo.size(), 15u);
  EXPECT_EQ(tree->scan.size(), 5u);
  EXPECT_EQ(synth::describeTreeProblem(*tree, 8), "");
}

// ---- Link matrices --------------------------------------------------------------------------

TEST(LinkMatrix, Dgx1PresetReproducesMxnetsP3Matrix) {
  // The preset numbers GPUs like nvidia-smi on a DGX-1V, as MXNet's matrix does: identity map.
  EXPECT_EQ(synth::linkMatrixFromTopology(topology::preset("dgx1")), p3Matrix());
}

TEST(LinkMatrix, NvswitchPresetIsUniform) {
  const LinkMatrix w = synth::linkMatrixFromTopology(topology::preset("dgx-a100"));
  ASSERT_EQ(w.size, 8);
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b)
      EXPECT_EQ(w.at(a, b), a == b ? 0 : 2) << a << "," << b;
}

TEST(LinkMatrix, TwoNodesUseTheNetworkAsPcieClass) {
  const LinkMatrix w = synth::linkMatrixFromTopology(topology::preset("dgx1", 2));
  ASSERT_EQ(w.size, 16);
  EXPECT_EQ(w.at(0, 3), 3);
  EXPECT_EQ(w.at(8, 11), 3);
  EXPECT_EQ(w.at(0, 8), 1);
}

TEST(LinkMatrix, PcieRuleZeroesPcieWhenNvlinkConnects) {
  LinkMatrix w = p3Matrix();
  synth::applyPcieRule(w);
  EXPECT_EQ(w.at(0, 5), 0);
  EXPECT_EQ(w.at(0, 3), 3);
  LinkMatrix split = synth::linkMatrixFromRows({{0, 2, 1}, {2, 0, 1}, {1, 1, 0}});
  synth::applyPcieRule(split);
  EXPECT_DOUBLE_EQ(split.at(0, 2), 1.0 / 3);
}

TEST(LinkMatrix, ParsesTextAndJson) {
  const LinkMatrix expected = synth::linkMatrixFromRows({{0, 2, 3}, {2, 0, 1}, {3, 1, 0}});
  EXPECT_EQ(synth::parseLinkMatrix("# three GPUs\n0 2 3\n2, 0, 1\n\n3 1 0  # last\n", "m.txt"),
            expected);
  EXPECT_EQ(synth::parseLinkMatrix("[[0,2,3],[2,0,1],[3,1,0]]", "m.json"), expected);
  EXPECT_EQ(synth::parseLinkMatrix("{\"matrix\": [[0,2,3],[2,0,1],[3,1,0]]}", "m.json"), expected);
}

void expectParseError(const std::string& text, const std::string& fragment) {
  try {
    synth::parseLinkMatrix(text, "bad.txt");
    ADD_FAILURE() << "no error for: " << text;
  } catch (const ParseError& error) {
    EXPECT_THAT(error.what(), HasSubstr("bad.txt")) << error.what();
    EXPECT_THAT(error.what(), HasSubstr(fragment)) << error.what();
  }
}

TEST(LinkMatrix, ErrorsNameTheRowAndColumn) {
  expectParseError("0 2\n3 0\n", "row 0, column 1 is 2 but row 1, column 0 is 3");
  expectParseError("0 2 x\n2 0 1\n1 1 0\n", "bad.txt:1: row 0, column 2 is 'x'");
  expectParseError("0 2 1\n2 0\n1 1 0\n", "bad.txt:2: row 1 has 2 entries");
  expectParseError("0 -2\n-2 0\n", "row 0, column 1 is -2");
  expectParseError("1 2\n2 0\n", "row 0, column 0 is 1; the diagonal");
  expectParseError("0\n", "at least 2 GPUs");
  expectParseError("", "empty");
  expectParseError("[[0, 2], [2, \"a\"]]", "row 1, column 1 is \"a\"");
  expectParseError("{\"rows\": []}", "\"matrix\" key");
  expectParseError("[[0, 2], [2, 0]", "not valid JSON");
}

// ---- Tree construction ----------------------------------------------------------------------

// The invariants of §5 for every tree of `set`: n trees, tree r rooted at r, binary array of
// depth ceil(log2 n), left child = parent, every rank present and reduced exactly once, only
// positive-weight links; weights and usage consistent. With `mxnet`, transfers over links of
// weight 0 are counted instead of failing: MXNet joins the two GPUs of a 2-cluster without
// checking their link, and its Postprocess moves a subtree under a sibling's GPU without
// checking either (known MXNet defects that strategy mxnet keeps and strategy best avoids).
// Returns the number of such transfers.
int expectValidTrees(const synth::TreeSet& set, const LinkMatrix& w, bool mxnet = false) {
  int zeroWeight = 0;
  const int n = w.size;
  const int depth = synth::computeDepth(n);
  EXPECT_EQ(depth, static_cast<int>(std::ceil(std::log2(n))));
  if (static_cast<int>(set.trees.size()) != n) {
    ADD_FAILURE() << set.trees.size() << " trees for " << n << " GPUs";
    return zeroWeight;
  }
  double total = 0;
  std::vector<std::vector<int>> usage(static_cast<std::size_t>(n), std::vector<int>(n, 0));
  for (int r = 0; r < n; ++r) {
    const synth::Tree& tree = set.trees[static_cast<std::size_t>(r)];
    EXPECT_EQ(tree.root, r);
    EXPECT_EQ(tree.topo.size(), (std::size_t{2} << depth) - 1);
    EXPECT_EQ(static_cast<int>(tree.scan.size()), depth + 2);
    EXPECT_EQ(synth::describeTreeProblem(tree, n), "") << "tree " << r;
    const std::vector<synth::TreeEdge> edges = synth::listTreeEdges(tree);
    EXPECT_EQ(static_cast<int>(edges.size()), n - 1) << "tree " << r;
    for (const synth::TreeEdge& edge : edges) {
      if (mxnet && w.at(edge.parent, edge.child) == 0) {
        ++zeroWeight;
      } else {
        EXPECT_GT(w.at(edge.parent, edge.child), 0) << "tree " << r;
      }
      ++usage[static_cast<std::size_t>(edge.parent)][static_cast<std::size_t>(edge.child)];
      ++usage[static_cast<std::size_t>(edge.child)][static_cast<std::size_t>(edge.parent)];
    }
    EXPECT_DOUBLE_EQ(set.treeWeights[static_cast<std::size_t>(r)], synth::sumTreeWeight(w, tree));
    total += set.treeWeights[static_cast<std::size_t>(r)];
  }
  EXPECT_DOUBLE_EQ(set.totalWeight, total);
  EXPECT_EQ(set.usage, usage);
  EXPECT_EQ(set.mostUsed.count, synth::findMostUsedLink(usage).count);
  return zeroWeight;
}

synth::TreeOptions optionsFor(synth::TreeStrategy strategy) {
  synth::TreeOptions options;
  options.strategy = strategy;
  return options;
}

TEST(Trees, Dgx1GivesEightValidTreesWithBothStrategies) {
  LinkMatrix w = synth::linkMatrixFromTopology(topology::preset("dgx1"));
  synth::applyPcieRule(w);
  const synth::TreeSet mxnet = synth::computeTrees(w, optionsFor(synth::TreeStrategy::mxnet));
  const synth::TreeSet best = synth::computeTrees(w, optionsFor(synth::TreeStrategy::best));
  expectValidTrees(mxnet, w);
  expectValidTrees(best, w);
  // MXNet's KL succeeds on the DGX-1 (8 = 2^3): every tree comes from bisection.
  for (const synth::Tree& tree : mxnet.trees)
    EXPECT_EQ(tree.method, synth::TreeMethod::kernighanLin);
  // Regression pin of chorus's own output (docs/synthesis.md "DGX-1 results"): per-tree weights
  // and arrays. Not MXNet's figures: MXNet's trees depend on its RNG stream and its tests hold
  // no DGX-1 trees; the vectors of its gpu_topology_test.cc are the tests above.
  EXPECT_EQ(mxnet.treeWeights, (std::vector<double>{19, 19, 20, 16, 19, 15, 20, 16}));
  const std::vector<std::vector<int>> mxnetTopo = {
      {0, 0, 4, 0, 2, 4, 6, 0, 3, 2, 1, 4, 7, 6, 5}, {1, 1, 5, 1, 2, 5, 6, 1, 0, 2, 3, 5, 4, 6, 7},
      {2, 2, 6, 2, 3, 6, 7, 2, 1, 3, 0, 6, 5, 7, 4}, {3, 3, 7, 3, 2, 7, 6, 3, 1, 2, 0, 7, 5, 6, 4},
      {4, 4, 0, 4, 5, 0, 1, 4, 7, 5, 6, 0, 3, 1, 2}, {5, 5, 1, 5, 4, 1, 0, 5, 7, 4, 6, 1, 3, 0, 2},
      {6, 6, 2, 6, 7, 2, 3, 6, 5, 7, 4, 2, 1, 3, 0}, {7, 7, 3, 7, 6, 3, 2, 7, 5, 6, 4, 3, 1, 2, 0}};
  ASSERT_EQ(mxnet.trees.size(), mxnetTopo.size());
  for (std::size_t r = 0; r < mxnetTopo.size(); ++r)
    EXPECT_EQ(mxnet.trees[r].topo, mxnetTopo[r]) << "tree " << r;
  EXPECT_EQ(mxnet.totalWeight, 144);
  EXPECT_EQ(mxnet.mostUsed.count, 5);
  // The best strategy never loses on either measure, and wins on at least one.
  EXPECT_GE(best.totalWeight, mxnet.totalWeight);
  EXPECT_LE(best.mostUsed.count, mxnet.mostUsed.count);
  EXPECT_TRUE(best.totalWeight > mxnet.totalWeight || best.mostUsed.count < mxnet.mostUsed.count);
  // 56 transfers on 16 NVLink pairs: max usage >= 4, and at most 4 uses per link allow
  // 8 * 4 * 3 + 8 * 3 * 2 = 144 (at 5 uses: 8 * 5 * 3 + 8 * 2 * 2 = 152). Both are reached.
  EXPECT_EQ(best.mostUsed.count, 4);
  EXPECT_EQ(best.totalWeight, 144);
  synth::TreeOptions heavy = optionsFor(synth::TreeStrategy::best);
  heavy.prefer = synth::TreePreference::weight;
  const synth::TreeSet heaviest = synth::computeTrees(w, heavy);
  expectValidTrees(heaviest, w);
  EXPECT_GE(heaviest.totalWeight, mxnet.totalWeight);
  EXPECT_LE(heaviest.mostUsed.count, mxnet.mostUsed.count);
  EXPECT_EQ(heaviest.totalWeight, 152);
  EXPECT_EQ(heaviest.mostUsed.count, 5);
  std::printf("dgx1: mxnet total weight %g, max link usage %d; best total weight %g, max %d\n",
              mxnet.totalWeight, mxnet.mostUsed.count, best.totalWeight, best.mostUsed.count);
  // Deterministic: the same input gives the same trees.
  EXPECT_EQ(synth::computeTrees(w, optionsFor(synth::TreeStrategy::mxnet)).trees, mxnet.trees);
  EXPECT_EQ(synth::computeTrees(w, optionsFor(synth::TreeStrategy::best)).trees, best.trees);
}

TEST(Trees, PenaltyOneLetsLaterTreesReuseLinks) {
  LinkMatrix w = p3Matrix();
  synth::applyPcieRule(w);
  synth::TreeOptions options = optionsFor(synth::TreeStrategy::mxnet);
  options.penalty = 1.0;
  const synth::TreeSet set = synth::computeTrees(w, options);
  expectValidTrees(set, w);
  options.penalty = 0;
  EXPECT_THROW(synth::computeTrees(w, options), OptionError);
}

TEST(Trees, BacktrackOnlyMatchesTheExhaustiveSearch) {
  LinkMatrix w = p3Matrix();
  synth::applyPcieRule(w);
  synth::TreeOptions options = optionsFor(synth::TreeStrategy::mxnet);
  options.backtrackOnly = true;
  const synth::TreeSet set = synth::computeTrees(w, options);
  expectValidTrees(set, w);
  for (const synth::Tree& tree : set.trees)
    EXPECT_EQ(tree.method, synth::TreeMethod::backtracking);
}

TEST(Trees, MxnetKernighanLinCannotFinishFiveGpusButDeferringSmallClustersCan) {
  const LinkMatrix w = synth::linkMatrixFromRows(
      {{0, 3, 2, 1, 2}, {3, 0, 2, 2, 1}, {2, 2, 0, 3, 2}, {1, 2, 3, 0, 3}, {2, 1, 2, 3, 0}});
  for (int root = 0; root < 5; ++root) {
    EXPECT_FALSE(synth::kernighanLinTree(w, root, 1, 10, false)) << root;
    const std::optional<synth::Tree> tree = synth::kernighanLinTree(w, root, 1, 10, true);
    ASSERT_TRUE(tree) << root;
    EXPECT_EQ(synth::describeTreeProblem(*tree, 5), "") << root;
    EXPECT_EQ(synth::treeDepth(*tree), 3);
  }
}

TEST(Trees, DisconnectedMatrixIsAnOptionError) {
  const LinkMatrix w =
      synth::linkMatrixFromRows({{0, 2, 0, 0}, {2, 0, 0, 0}, {0, 0, 0, 3}, {0, 0, 3, 0}});
  try {
    synth::computeTrees(w);
    ADD_FAILURE() << "no error";
  } catch (const OptionError& error) {
    EXPECT_THAT(error.what(), HasSubstr("GPU(s) 2, 3 cannot be reached"));
  }
}

TEST(Trees, StrategyNames) {
  EXPECT_EQ(synth::parseTreeStrategy("mxnet"), synth::TreeStrategy::mxnet);
  EXPECT_EQ(synth::parseTreeStrategy("best"), synth::TreeStrategy::best);
  EXPECT_THROW(synth::parseTreeStrategy("fast"), OptionError);
  EXPECT_EQ(synth::parseTreePreference("weight"), synth::TreePreference::weight);
  EXPECT_THROW(synth::parseTreePreference("speed"), OptionError);
}

TEST(Trees, DescribeTreeProblemFindsDefects) {
  synth::Tree tree = *synth::formTopology({0, 1, 2, 3}, 2);
  EXPECT_EQ(synth::describeTreeProblem(tree, 4), "");
  synth::Tree reducedTwice = *synth::formTopology({0, 1, 1, 3}, 2);
  EXPECT_THAT(synth::describeTreeProblem(reducedTwice, 4), HasSubstr("reduced twice"));
  synth::Tree missing = *synth::formTopology({0, 0, 2, 3}, 2);
  EXPECT_THAT(synth::describeTreeProblem(missing, 4), HasSubstr("GPU 1 is not in the tree"));
  tree.topo[3] = 2;  // level 2 slot 0 must repeat its parent 0
  EXPECT_THAT(synth::describeTreeProblem(tree, 4), HasSubstr("left child"));
}

TEST(Trees, RandomMatricesGiveValidTrees) {
  std::mt19937 gen(testing_support::testSeed());
  int mxnetZeroWeight = 0;
  // One matrix per size, the best strategy's preference alternating with the size: a few
  // seconds here, within the sanitizer build's timeout.
  for (int n = 2; n <= 16; ++n) {
    const LinkMatrix w = testing_support::randomLinkMatrix(n, gen);
    const auto prefer = n % 2 == 0 ? synth::TreePreference::usage : synth::TreePreference::weight;
    SCOPED_TRACE(::testing::Message() << "n " << n << (n % 2 == 0 ? " usage" : " weight"));
    const synth::TreeSet mxnet = synth::computeTrees(w, optionsFor(synth::TreeStrategy::mxnet));
    const int zeroWeight = expectValidTrees(mxnet, w, /*mxnet=*/true);
    mxnetZeroWeight += zeroWeight;
    synth::TreeOptions options = optionsFor(synth::TreeStrategy::best);
    options.prefer = prefer;
    const synth::TreeSet best = synth::computeTrees(w, options);
    EXPECT_EQ(expectValidTrees(best, w), 0);
    if (zeroWeight == 0) {  // MXNet's trees are usable: best never loses to them
      EXPECT_GE(best.totalWeight, mxnet.totalWeight);
      EXPECT_LE(best.mostUsed.count, mxnet.mostUsed.count);
    }
  }
  std::printf("MXNet's trees crossed %d links of weight 0\n", mxnetZeroWeight);
}

}  // namespace
}  // namespace chorus
