// The event-driven simulator against the closed-form α-β-γ models (xCCL notes; docs/sources.md
// "α-β-γ closed forms") on the uniform topology without tiling, congestion on a shared link, and
// every library algorithm on every preset. Never asserts a measured time: every expectation is a
// model's.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "algorithms/registry.h"
#include "alpha_beta_constants.h"
#include "ir/algorithm.h"
#include "runtime/compile_for_test.h"
#include "sim/closed_form.h"
#include "sim/simulator.h"
#include "topology/fabric.h"
#include "topology/presets.h"
#include "topology/topology.h"

namespace chorus {
namespace {

using testing_support::kBandwidth;
using testing_support::kLargeAlpha;
using testing_support::kMiB;
using testing_support::kReduceRate;
using testing_support::kSmallAlpha;

// ---- closed forms ---------------------------------------------------------------------------

class ClosedFormAgreement : public ::testing::TestWithParam<std::string_view> {};

// For every p where the form holds, sizes whose chunks do and do not divide evenly, and α both
// far below and above a chunk's wire time: |simulated − closed| ≤ 1%.
TEST_P(ClosedFormAgreement, SimulatorWithinOnePercent) {
  const std::string name(GetParam());
  int checked = 0;
  for (int p : {2, 3, 4, 5, 6, 8, 12, 16}) {
    const sim::AlphaBetaGamma probe{1e-6, 1 / kBandwidth, 1 / kReduceRate};
    if (!sim::closedFormSeconds(name, p, kMiB, probe)) {
      EXPECT_FALSE(std::has_single_bit(static_cast<unsigned>(p)))
          << name << " has no form at p = " << p;
      continue;
    }
    const ir::Algorithm algorithm =
        testing_support::compileForTiming({.algorithm = name, .ranks = p});
    for (double alpha : {kSmallAlpha, kLargeAlpha}) {
      topology::Fabric fabric(topology::uniformTopology(p, alpha, kBandwidth, kReduceRate));
      const sim::AlphaBetaGamma cost{alpha, 1 / kBandwidth, 1 / kReduceRate};
      for (std::uint64_t bytes : {kMiB, std::uint64_t{3'000'004}, 64 * kMiB}) {
        const double closed = *sim::closedFormSeconds(name, p, bytes, cost);
        const sim::SimResult result =
            sim::simulate(algorithm, fabric, sim::SimOptions{.bytes = bytes, .tiling = false});
        EXPECT_NEAR(result.seconds, closed, 0.01 * closed)
            << name << " p=" << p << " bytes=" << bytes << " alpha=" << alpha;
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 4 * 2 * 3) << "every form holds at least for p = 2, 4, 8, 16";
}

INSTANTIATE_TEST_SUITE_P(Library, ClosedFormAgreement, ::testing::ValuesIn(sim::closedFormNames()),
                         [](const ::testing::TestParamInfo<std::string_view>& info) {
                           std::string id(info.param);
                           for (char& c : id)
                             if (c == '.' || c == '-') c = '_';
                           return id;
                         });

TEST(ClosedForm, CoversTheClassicAlgorithmsAtPowersOfTwo) {
  const sim::AlphaBetaGamma cost{1e-6, 1e-10, 1e-11};
  for (const char* name :
       {"allreduce.ring", "allreduce.recursive-doubling", "allreduce.rabenseifner",
        "allgather.ring", "allgather.recursive-doubling", "allgather.bruck", "allgather.direct",
        "reducescatter.ring", "reducescatter.recursive-halving", "reducescatter.pairwise",
        "broadcast.binomial", "reduce.binomial", "reduce.rabenseifner", "alltoall.bruck",
        "alltoall.pairwise", "alltoall.direct"}) {
    for (int p : {2, 4, 8, 16, 64})
      EXPECT_TRUE(sim::closedFormSeconds(name, p, kMiB, cost)) << name << " p=" << p;
  }
  EXPECT_FALSE(sim::closedFormSeconds("allreduce.hierarchical", 8, kMiB, cost));
  EXPECT_FALSE(sim::closedFormSeconds("allreduce.ring", 1, kMiB, cost));
  EXPECT_FALSE(sim::closedFormSeconds("allreduce.recursive-doubling", 6, kMiB, cost));
  // Its two reduction pieces per round overlap or not as the compiler places them
  // (closed_form.cpp); SimSynthRow bounds the simulator by the printed row instead.
  EXPECT_FALSE(sim::closedFormSeconds("reducescatter.recursive-doubling", 8, kMiB, cost));
}

TEST(ClosedForm, NamesAreLibraryAlgorithms) {
  for (std::string_view name : sim::closedFormNames())
    EXPECT_NO_THROW(algorithms::findAlgorithm(name)) << name;
}

// The forms themselves, by hand, at p = 4, n = 1 MiB (chunks of n/4 = 256 KiB).
TEST(ClosedForm, HandComputedAtFourRanks) {
  const double a = 2e-6, b = 1e-10, g = 5e-11, n = kMiB, c = n / 4;
  const sim::AlphaBetaGamma cost{a, b, g};
  auto form = [&](const char* name) { return *sim::closedFormSeconds(name, 4, kMiB, cost); };
  EXPECT_DOUBLE_EQ(form("allreduce.ring"), 6 * a + 6 * c * b + 3 * c * g);
  EXPECT_DOUBLE_EQ(form("allreduce.recursive-doubling"), 2 * (a + n * b + n * g));
  EXPECT_DOUBLE_EQ(form("allreduce.rabenseifner"), 4 * a + 6 * c * b + 3 * c * g);
  EXPECT_DOUBLE_EQ(form("reducescatter.recursive-halving"), 2 * a + 3 * c * (b + g));
  EXPECT_DOUBLE_EQ(form("broadcast.binomial"), 2 * (a + n * b));
  EXPECT_DOUBLE_EQ(form("reduce.binomial"), 2 * (a + n * b + n * g));
  // Differences from the one-port paper rows: pairwise sends its p−1 blocks on p−1 links at
  // once, and Bruck's round 1 (blocks 2, 3) needs round 0's block 3 but sends 2 blocks.
  EXPECT_DOUBLE_EQ(form("alltoall.pairwise"), a + c * b);
  EXPECT_DOUBLE_EQ(form("alltoall.bruck"), 2 * (a + 2 * c * b));
}

// ---- congestion -------------------------------------------------------------------------------

// Three devices on one switch, each joined by its own duplex link.
topology::Topology starTopology(double bandwidth, double latency) {
  topology::Topology topology;
  topology.name = "star";
  topology.node.name = "star of 3";
  topology.node.devices = 3;
  for (const char* name : {"gpu0", "gpu1", "gpu2", "switch"}) {
    topology::Vertex vertex;
    vertex.name = name;
    topology.node.vertices.push_back(vertex);
  }
  for (int device = 0; device < 3; ++device) {
    topology::Link link;
    link.name = "link" + std::to_string(device);
    link.a = device;
    link.b = 3;
    link.bandwidth = bandwidth;
    link.latency = latency;
    topology.node.links.push_back(link);
  }
  topology.node.device.kind = "test";
  return topology;
}

// A custom collective of one whole-buffer message per (src, dst) pair, each in its own
// threadblocks: the smallest program with chosen concurrent flows.
ir::Algorithm flowsProgram(const std::vector<std::pair<int, int>>& flows, int nranks) {
  ir::Algorithm algorithm;
  algorithm.name = "flows";
  algorithm.collective = ir::CollectiveKind::custom;
  algorithm.customName = "flows";
  algorithm.nranks = nranks;
  algorithm.chunksPerLoop = 1;
  algorithm.ranks.resize(static_cast<std::size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    algorithm.ranks[static_cast<std::size_t>(r)].rank = r;
    algorithm.ranks[static_cast<std::size_t>(r)].inputChunks = 1;
    algorithm.ranks[static_cast<std::size_t>(r)].outputChunks = nranks;
  }
  auto addTb = [&](int rank, int sendPeer, int recvPeer, ir::Step step) {
    ir::RankProgram& program = algorithm.ranks[static_cast<std::size_t>(rank)];
    ir::Threadblock tb;
    tb.id = static_cast<int>(program.threadblocks.size());
    tb.sendPeer = sendPeer;
    tb.recvPeer = recvPeer;
    tb.steps.push_back(step);
    program.threadblocks.push_back(std::move(tb));
  };
  for (const auto& [src, dst] : flows) {
    ir::Step send;
    send.op = ir::OpKind::send;
    send.srcBuffer = ir::BufferKind::input;
    send.dstBuffer = ir::BufferKind::output;
    send.dstIndex = src;
    addTb(src, dst, -1, send);
    ir::Step recv;
    recv.op = ir::OpKind::recv;
    recv.srcBuffer = ir::BufferKind::input;
    recv.dstBuffer = ir::BufferKind::output;
    recv.dstIndex = src;
    addTb(dst, -1, src, recv);
  }
  return algorithm;
}

double flowSeconds(const std::vector<std::pair<int, int>>& flows, bool tiling,
                   sim::SimResult* result = nullptr) {
  topology::Fabric fabric(starTopology(kBandwidth, 1e-6));
  const sim::SimResult r = sim::simulate(flowsProgram(flows, 3), fabric,
                                         sim::SimOptions{.bytes = 64 * kMiB, .tiling = tiling});
  if (result != nullptr) *result = r;
  return r.seconds;
}

TEST(Congestion, TwoFlowsIntoOneDeviceTakeTwiceAsLong) {
  for (bool tiling : {false, true}) {
    const double one = flowSeconds({{0, 2}}, tiling);
    sim::SimResult shared;
    const double two = flowSeconds({{0, 2}, {1, 2}}, tiling, &shared);
    EXPECT_NEAR(two / one, 2.0, 0.02) << "tiling " << tiling;
    ASSERT_FALSE(shared.links.empty());
    // The switch -> gpu2 direction carried both messages and is listed first.
    EXPECT_NEAR(shared.links.front().bytes, 2.0 * 64 * kMiB, 1.0) << shared.links.front().name;
    EXPECT_GT(shared.links.front().utilization, 0.95);
  }
}

TEST(Congestion, DisjointFlowsDoNotSlowEachOther) {
  for (bool tiling : {false, true}) {
    const double one = flowSeconds({{0, 2}}, tiling);
    // 0 -> 2 and 2 -> 1 share no link direction (links are duplex).
    EXPECT_NEAR(flowSeconds({{0, 2}, {2, 1}}, tiling) / one, 1.0, 0.01) << "tiling " << tiling;
  }
}

// ---- processes sharing cores (the local topology) ---------------------------------------------

// The star with wires too fast to matter, one engine per device of `copyRate`, and `cores`
// cores shared by the node's devices.
topology::Topology coreSharingStar(int cores, double copyRate, double wakeLatency = 0) {
  topology::Topology topology = starTopology(1e18, 0);
  topology.node.cores = cores;
  topology.node.wakeLatency = wakeLatency;
  topology.node.device.copyRate = copyRate;
  topology.node.device.engines = 1;
  return topology;
}

double coreSharingSeconds(const std::vector<std::pair<int, int>>& flows,
                          const topology::Topology& topology) {
  topology::Fabric fabric(topology);
  return sim::simulate(flowsProgram(flows, 3), fabric,
                       sim::SimOptions{.bytes = 3 * kMiB, .tiling = false})
      .seconds;
}

TEST(CoreSharing, CoresAreSharedByBusyRanksThenEachRankAmongItsFlows) {
  constexpr double kRate = 1e9;
  const double chunk = 3.0 * kMiB;  // each rank's input: one message
  // Rank 0 sends to 1 and 2: one process with two flows wants one core, so each send gets
  // half of it (2 chunks / rate); then ranks 1 and 2 receive at once, two processes on one
  // core (2 chunks / rate again). Counting the flows on the core too would give 6.
  EXPECT_NEAR(coreSharingSeconds({{0, 1}, {0, 2}}, coreSharingStar(1, kRate)) * kRate / chunk, 4.0,
              1e-6);
  // With two cores the receivers run side by side: 2 + 1.
  EXPECT_NEAR(coreSharingSeconds({{0, 1}, {0, 2}}, coreSharingStar(2, kRate)) * kRate / chunk, 3.0,
              1e-6);
}

TEST(CoreSharing, MessagesWaitForTheReceiverToBeScheduledOnlyWhenRanksOutnumberCores) {
  constexpr double kRate = 1e9;
  constexpr double kWake = 30e-6;
  const double alone = coreSharingSeconds({{0, 1}}, coreSharingStar(1, kRate));
  // 3 ranks on 1 core: the receiver is off the core 2/3 of the time.
  EXPECT_NEAR(coreSharingSeconds({{0, 1}}, coreSharingStar(1, kRate, kWake)) - alone, kWake * 2 / 3,
              1e-9);
  EXPECT_NEAR(coreSharingSeconds({{0, 1}}, coreSharingStar(3, kRate, kWake)),
              coreSharingSeconds({{0, 1}}, coreSharingStar(3, kRate)), 1e-12);
}

// ---- every algorithm on every preset ----------------------------------------------------------

TEST(Presets, EveryLibraryAlgorithmSimulatesOnEveryPreset) {
  std::map<std::tuple<std::string, int, int, int>, ir::Algorithm> compiled;
  int simulated = 0;
  for (const topology::PresetInfo& info : topology::presets()) {
    if (info.name == "local") continue;
    const topology::Topology single = topology::preset(info.name, 1);
    std::vector<int> nodeCounts = {1};
    if (!single.node.nics.empty()) nodeCounts.push_back(2);
    for (int nodes : nodeCounts) {
      topology::Fabric fabric(topology::preset(info.name, nodes));
      const int gpus = single.node.devices;
      for (const algorithms::AlgorithmInfo& algorithm : algorithms::listAlgorithms()) {
        const bool byNodes = algorithm.shape == algorithms::Shape::nodes;
        if (nodes * gpus < algorithm.minRanks) continue;
        const auto key = byNodes ? std::make_tuple(algorithm.name, 0, nodes, gpus)
                                 : std::make_tuple(algorithm.name, nodes * gpus, 0, 0);
        auto it = compiled.find(key);
        if (it == compiled.end()) {
          it = compiled
                   .emplace(key, testing_support::compileForTiming(
                                     byNodes ? algorithms::BuildRequest{.algorithm = algorithm.name,
                                                                        .nodes = nodes,
                                                                        .gpusPerNode = gpus}
                                             : algorithms::BuildRequest{.algorithm = algorithm.name,
                                                                        .ranks = nodes * gpus}))
                   .first;
        }
        const sim::SimResult result =
            sim::simulate(it->second, fabric, sim::SimOptions{.bytes = kMiB});
        EXPECT_TRUE(std::isfinite(result.seconds) && result.seconds > 0)
            << algorithm.name << " on " << info.name << " x " << nodes << ": " << result.seconds;
        ++simulated;
      }
    }
  }
  EXPECT_GT(simulated, 100);
}

}  // namespace
}  // namespace chorus
