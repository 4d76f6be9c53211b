// Topology-aware ring order (src/synth/ring_order) and top-k F1 (src/synth/ranking_f1): the
// baseline AllReduce of `chorus synth reduction` rings along NVLink on dgx1 and in rank order
// on a uniform topology; F1 of hand-made rankings.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <set>
#include <utility>
#include <vector>

#include "compiler/pipeline.h"
#include "synth/link_matrix.h"
#include "synth/p2_lower.h"
#include "synth/p2_placement.h"
#include "synth/p2_program.h"
#include "synth/ranking_f1.h"
#include "synth/ring_order.h"
#include "topology/presets.h"
#include "topology/topology.h"

namespace chorus::synth {
namespace {

using ::testing::ElementsAre;

const std::vector<int> kEight = {0, 1, 2, 3, 4, 5, 6, 7};

// Unordered device pairs joined by a direct NVLink link in `topology`'s node.
std::set<std::pair<int, int>> nvlinkPairs(const topology::Topology& topology) {
  std::set<std::pair<int, int>> pairs;
  for (const topology::Link& link : topology.node.links)
    if (link.kind == topology::LinkKind::nvlink && link.a < topology.node.devices &&
        link.b < topology.node.devices)
      pairs.insert({std::min(link.a, link.b), std::max(link.a, link.b)});
  return pairs;
}

bool onlyNvlink(const std::vector<int>& ring, const std::set<std::pair<int, int>>& pairs,
                int perNode) {
  for (std::size_t i = 0; i < ring.size(); ++i) {
    const int a = ring[i] % perNode;
    const int b = ring[(i + 1) % ring.size()] % perNode;
    if (!pairs.contains({std::min(a, b), std::max(a, b)})) return false;
  }
  return true;
}

TEST(RingOrder, Dgx1RingUsesOnlyNvlinkAndKeepsTheFirstMember) {
  const topology::Topology dgx1 = topology::preset("dgx1");
  const std::vector<int> ring = orderRing(linkMatrixFromTopology(dgx1), kEight);
  ASSERT_EQ(ring.size(), 8u);
  EXPECT_EQ(std::set<int>(ring.begin(), ring.end()).size(), 8u);
  EXPECT_EQ(ring.front(), 0);
  EXPECT_TRUE(onlyNvlink(ring, nvlinkPairs(dgx1), 8)) << ::testing::PrintToString(ring);
  // Rank order crosses PCIe (3-4 has no NVLink), which is what the baseline used to do.
  EXPECT_FALSE(onlyNvlink(kEight, nvlinkPairs(dgx1), 8));
  // The double-brick pairs (45 GB/s) alone form the ring 0-3-2-1-5-6-7-4.
  EXPECT_THAT(ring, ElementsAre(0, 3, 2, 1, 5, 6, 7, 4));
}

TEST(RingOrder, UniformTopologyKeepsRankOrder) {
  const LinkMatrix links = linkMatrixFromTopology(topology::preset("uniform"));
  EXPECT_EQ(orderRing(links, kEight), kEight);
  EXPECT_EQ(orderRing(LinkMatrix{}, std::vector<int>{5, 2, 7}), (std::vector<int>{5, 2, 7}));
}

TEST(RingOrder, NodesStayContiguousAndEachFollowsNvlink) {
  const topology::Topology dgx1 = topology::preset("dgx1");
  std::vector<int> sixteen;
  for (int r = 0; r < 16; ++r)
    sixteen.push_back(r);
  const std::vector<int> ring = orderRing(linkMatrixFromTopology(dgx1), sixteen);
  ASSERT_EQ(ring.size(), 16u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_LT(ring[static_cast<std::size_t>(i)], 8);
    EXPECT_GE(ring[static_cast<std::size_t>(8 + i)], 8);
  }
  EXPECT_TRUE(onlyNvlink(std::vector<int>(ring.begin(), ring.begin() + 8), nvlinkPairs(dgx1), 8));
  // The GCP V100 ring of P² is already in rank order.
  EXPECT_EQ(orderRing(linkMatrixFromTopology(topology::preset("gcp-v100")), kEight), kEight);
}

// The single AllReduce of an 8-device placement on dgx1, lowered with the node's links, sends
// only between NVLink pairs.
TEST(RingOrder, Dgx1BaselineAllReduceSendsOnlyOverNvlink) {
  const topology::Topology dgx1 = topology::preset("dgx1");
  const SystemHierarchy system = systemHierarchyOf(dgx1, 1);
  const std::vector<PlacementCandidate> candidates =
      synthesizeReductions(system, std::vector<int>{8}, std::vector<int>{0});
  ASSERT_EQ(candidates.size(), 1u);
  const PlacementCandidate& c = candidates.front();
  LowerOptions options;
  options.nodeLinks = linkMatrixFromTopology(dgx1);
  const ReductionProgram baseline = parseProgram(
      c.hierarchy, fmt::format("({}, InsideGroup, AllReduce)", c.hierarchy.levels.front().name));
  const auto lowered = lowerProgram(c.hierarchy, c.layout, baseline, options);
  EXPECT_TRUE(lowered->checkPostcondition().empty());
  const ir::Algorithm algorithm = compiler::compileProgram(lowered->dag()).algorithm;
  const std::set<std::pair<int, int>> pairs = nvlinkPairs(dgx1);
  int sends = 0;
  for (const ir::RankProgram& rank : algorithm.ranks)
    for (const ir::Threadblock& tb : rank.threadblocks)
      if (tb.sendPeer >= 0) {
        ++sends;
        const int r = static_cast<int>(&rank - algorithm.ranks.data());
        EXPECT_TRUE(pairs.contains({std::min(r, tb.sendPeer), std::max(r, tb.sendPeer)}))
            << r << " -> " << tb.sendPeer;
      }
  EXPECT_GT(sends, 0);
}

// Every program of a two-node dgx1 placement still meets its postcondition when its rings
// follow NVLink (each block ends on the member it belongs to).
TEST(RingOrder, LoweringAlongNvlinkKeepsEveryPostcondition) {
  const topology::Topology dgx1 = topology::preset("dgx1", 2);
  LowerOptions options;
  options.nodeLinks = linkMatrixFromTopology(topology::preset("dgx1"));
  for (const PlacementCandidate& c : synthesizeReductions(
           systemHierarchyOf(dgx1, 2), std::vector<int>{4, 4}, std::vector<int>{0})) {
    for (const ReductionProgram& p : c.programs) {
      SCOPED_TRACE(formatMatrix(c.matrix) + " " + formatProgram(c.hierarchy, p));
      EXPECT_TRUE(lowerProgram(c.hierarchy, c.layout, p, options)->checkPostcondition().empty());
    }
  }
}

TEST(TopKF1, HandMadeRankings) {
  // Candidates 0..5; predicted order 0 1 2 3 4 5, measured order 1 0 3 2 5 4.
  const std::vector<double> predicted = {1, 2, 3, 4, 5, 6};
  const std::vector<double> measured = {2, 1, 4, 3, 6, 5};
  EXPECT_DOUBLE_EQ(computeTopKF1(predicted, measured, 1), 0.0);      // {0} vs {1}
  EXPECT_DOUBLE_EQ(computeTopKF1(predicted, measured, 2), 1.0);      // {0,1} vs {1,0}
  EXPECT_DOUBLE_EQ(computeTopKF1(predicted, measured, 3), 2.0 / 3);  // {0,1,2} vs {0,1,3}
  EXPECT_DOUBLE_EQ(computeTopKF1(predicted, measured, 5), 0.8);      // 4 of 5 shared
  EXPECT_DOUBLE_EQ(computeTopKF1(predicted, measured, 10), 1.0);     // k >= n: every candidate
  // A perfect and a reversed ranking.
  EXPECT_DOUBLE_EQ(computeTopKF1(predicted, predicted, 1), 1.0);
  const std::vector<double> reversed = {6, 5, 4, 3, 2, 1};
  EXPECT_DOUBLE_EQ(computeTopKF1(predicted, reversed, 3), 0.0);
  // Ties go to the lower index.
  const std::vector<double> tied = {1, 1, 1};
  EXPECT_DOUBLE_EQ(computeTopKF1(tied, std::vector<double>{3, 2, 1}, 1), 0.0);
  EXPECT_DOUBLE_EQ(computeTopKF1(tied, std::vector<double>{1, 2, 3}, 1), 1.0);
}

}  // namespace
}  // namespace chorus::synth
