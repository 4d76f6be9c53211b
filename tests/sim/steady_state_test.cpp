// The simulator's steady-state extrapolation (SimOptions::extrapolate, simulator.cpp step 5):
// on calls of many tiles it predicts what simulating every tile predicts (time, and each
// link's bytes and busy time) within kTolerance, simulates fewer tiles when the tiles repeat,
// and stays off where every step is recorded. Never asserts a measured time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "algorithms/registry.h"
#include "runtime/compile_for_test.h"
#include "sim/simulator.h"
#include "topology/fabric.h"
#include "topology/presets.h"

namespace chorus {
namespace {

// docs/simulator.md "Steady state" states this bound.
constexpr double kTolerance = 1e-6;

struct Case {
  std::string algorithm;
  std::string topology;
  int nodes = 1;
  std::uint64_t bytes = 0;
  bool byNodes = false;  // N x G shape (else --ranks = every device)
};

std::string caseName(const Case& c) {
  return c.algorithm + " on " + std::to_string(c.nodes) + " x " + c.topology + ", " +
         std::to_string(c.bytes) + " B";
}

ir::Algorithm compileFor(const Case& c, const topology::Topology& topology) {
  if (c.byNodes) {
    return testing_support::compileForTiming(
        {.algorithm = c.algorithm, .nodes = c.nodes, .gpusPerNode = topology.node.devices});
  }
  return testing_support::compileForTiming({.algorithm = c.algorithm, .ranks = topology.ranks()});
}

double relative(double a, double b) {
  return std::abs(a - b) / std::max(std::abs(b), 1e-30);
}

class SteadyState : public ::testing::TestWithParam<Case> {};

TEST_P(SteadyState, PredictsWhatEveryTilePredicts) {
  const Case& c = GetParam();
  const topology::Topology topology = topology::preset(c.topology, c.nodes);
  topology::Fabric fabric(topology);
  const ir::Algorithm plan = compileFor(c, topology);
  sim::SimOptions options;
  options.bytes = c.bytes;
  const sim::SimResult fast = sim::simulate(plan, fabric, options);
  options.extrapolate = false;
  const sim::SimResult full = sim::simulate(plan, fabric, options);

  EXPECT_FALSE(full.extrapolated);
  EXPECT_EQ(full.tilesSimulated, full.tiles);
  EXPECT_EQ(fast.tiles, full.tiles);
  EXPECT_LE(relative(fast.seconds, full.seconds), kTolerance)
      << caseName(c) << ": " << fast.seconds << " s extrapolated after " << fast.tilesSimulated
      << " of " << fast.tiles << " tiles, " << full.seconds << " s simulated";
  ASSERT_EQ(fast.links.size(), full.links.size()) << caseName(c);
  for (const sim::LinkUse& link : full.links) {
    const auto it = std::find_if(fast.links.begin(), fast.links.end(),
                                 [&](const sim::LinkUse& l) { return l.name == link.name; });
    ASSERT_NE(it, fast.links.end()) << caseName(c) << ": " << link.name;
    EXPECT_LE(relative(it->bytes, link.bytes), kTolerance) << caseName(c) << ": " << link.name;
    EXPECT_LE(std::abs(it->busy - link.busy), kTolerance * full.seconds)
        << caseName(c) << ": " << link.name;
  }
  if (fast.extrapolated) {
    EXPECT_LT(fast.tilesSimulated, fast.tiles) << caseName(c);
    EXPECT_LT(fast.stepsExecuted, full.stepsExecuted) << caseName(c);
  }
}

INSTANTIATE_TEST_SUITE_P(
    LibraryAlgorithms, SteadyState,
    ::testing::Values(
        // 512 tiles (N chunks per intra-node hop), sliced GPUs, NVSwitch and NICs.
        Case{"allreduce.hierarchical", "dgx-a100", 2, std::uint64_t{1} << 30, true},
        Case{"allreduce.hierarchical", "dgx-a100", 4, std::uint64_t{1} << 30, true},
        // A last tile shorter than the others.
        Case{"allreduce.hierarchical", "dgx-a100", 2, 1'000'000'000, true},
        Case{"allreduce.ring", "dgx-a100", 2, std::uint64_t{1} << 30},
        Case{"allgather.ring", "dgx-h100", 2, std::uint64_t{1} << 30},
        Case{"alltoall.direct", "dgx-1", 1, std::uint64_t{1} << 30},
        Case{"allreduce.hierarchical", "dgx-1", 1, std::uint64_t{1} << 30, true},
        Case{"allreduce.double-binary-tree", "dgx-1", 1, std::uint64_t{1} << 28},
        // Store-and-forward devices across nodes (engine and wire in series).
        Case{"allreduce.ring", "summit", 2, std::uint64_t{1} << 28}));

TEST(SteadyStateUse, ExtrapolatesTheHierarchicalAllReduce) {
  // The case issue 18 needs: hundreds of identical tiles.
  const Case c{"allreduce.hierarchical", "dgx-a100", 4, std::uint64_t{1} << 30, true};
  const topology::Topology topology = topology::preset(c.topology, c.nodes);
  topology::Fabric fabric(topology);
  const sim::SimResult r = sim::simulate(compileFor(c, topology), fabric, {.bytes = c.bytes});
  EXPECT_EQ(r.tiles, 512);
  EXPECT_TRUE(r.extrapolated);
  EXPECT_LE(r.tilesSimulated, r.tiles / 2);
}

TEST(SteadyStateUse, RecordingSimulatesEveryTile) {
  const Case c{"allreduce.hierarchical", "dgx-a100", 2, std::uint64_t{1} << 26, true};
  const topology::Topology topology = topology::preset(c.topology, c.nodes);
  topology::Fabric fabric(topology);
  const ir::Algorithm plan = compileFor(c, topology);
  sim::SimOptions options;
  options.bytes = c.bytes;
  options.criticalPath = true;
  const sim::SimResult r = sim::simulate(plan, fabric, options);
  EXPECT_FALSE(r.extrapolated);
  EXPECT_EQ(r.tilesSimulated, r.tiles);
  EXPECT_FALSE(r.criticalPath.empty());
}

TEST(SteadyStateUse, FewTilesAreSimulatedInFull) {
  const Case c{"allreduce.ring", "dgx-a100", 1, std::uint64_t{1} << 20};
  const topology::Topology topology = topology::preset(c.topology, c.nodes);
  topology::Fabric fabric(topology);
  const sim::SimResult r = sim::simulate(compileFor(c, topology), fabric, {.bytes = c.bytes});
  EXPECT_FALSE(r.extrapolated);
  EXPECT_EQ(r.tilesSimulated, r.tiles);
}

}  // namespace
}  // namespace chorus
