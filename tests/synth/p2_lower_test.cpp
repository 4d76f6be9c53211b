// Lowering P² programs to one chorus program (src/synth/p2_lower): every synthesized program of
// Figure 2's placements traces to a DSL program whose postcondition holds (the reduction-group
// sums, in place), compiles through the pipeline with the verifier on, and a whole-system
// reduction runs on the thread transport with exact results; all of it under both lowerings
// (NCCL Ring and NCCL Tree, P² §4). On a latency-bound size the tree lowering of the
// single AllReduce is simulated faster than the ring one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "compiler/pipeline.h"
#include "p2_figures.h"
#include "runtime/thread_runner.h"
#include "sim/simulator.h"
#include "support/error.h"
#include "synth/p2_lower.h"
#include "topology/fabric.h"
#include "topology/presets.h"

namespace chorus::synth {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string violationsOf(const lang::Program& program) {
  std::string text;
  for (const lang::Violation& v : program.checkPostcondition())
    text += v.describe() + "\n";
  return text;
}

using testing_figures::figure2System;

// Every test below runs under both lowerings.
class P2LowerBoth : public ::testing::TestWithParam<Lowering> {
 protected:
  // devicesPerNode: the tree lowering's intra-node chains (Figure 2: 8 GPUs per server).
  LowerOptions lowerOptions(std::string name = "p2", int devicesPerNode = 8) const {
    LowerOptions options;
    options.name = std::move(name);
    options.lowering = GetParam();
    options.devicesPerNode = devicesPerNode;
    return options;
  }
};

INSTANTIATE_TEST_SUITE_P(Lowerings, P2LowerBoth, ::testing::Values(Lowering::ring, Lowering::tree),
                         [](const ::testing::TestParamInfo<Lowering>& info) {
                           return std::string(loweringName(info.param));
                         });

TEST_P(P2LowerBoth, EveryProgramOfFigure2PlacementsMeetsItsPostcondition) {
  for (const std::vector<int>& reduce : std::vector<std::vector<int>>{{0}, {1}}) {
    for (const PlacementCandidate& c :
         synthesizeReductions(figure2System(), std::vector<int>{4, 4}, reduce)) {
      for (const ReductionProgram& p : c.programs) {
        SCOPED_TRACE(formatMatrix(c.matrix) + " " + formatProgram(c.hierarchy, p));
        // 8 devices per node: NCCL's tree (chains in a server); 0: flat trees over the ring.
        for (int devicesPerNode : {8, 0}) {
          const auto lowered =
              lowerProgram(c.hierarchy, c.layout, p, lowerOptions("p2", devicesPerNode));
          EXPECT_EQ(lowered->nranks(), 16);
          EXPECT_THAT(lowered->collective().name(), StartsWith("group-reduction:"));
          EXPECT_EQ(violationsOf(*lowered), "");
        }
      }
    }
  }
}

TEST_P(P2LowerBoth, Figure10ProgramsCompileWithTheVerifier) {
  const ParallelismMatrix figure2d = {2, 4, {1, 1, 2, 2, 1, 2, 1, 2}};
  const ReductionLayout layout = layoutReduction(figure2d, std::vector<int>{1});
  const SynthesisHierarchy h = synthesisHierarchyOf(figure2System(), layout);
  for (const char* text :
       {"(server, InsideGroup, Reduce); (server, Master(rack), AllReduce); "
        "(server, InsideGroup, Broadcast)",
        "(server, InsideGroup, ReduceScatter); (server, Parallel(rack), AllReduce); "
        "(server, InsideGroup, AllGather)"}) {
    SCOPED_TRACE(text);
    const auto lowered = lowerProgram(h, layout, parseProgram(h, text), lowerOptions());
    ASSERT_EQ(violationsOf(*lowered), "");
    compiler::CompileOptions options;
    options.verify = true;
    const compiler::CompileResult result = compiler::compileProgram(lowered->dag(), options);
    EXPECT_EQ(result.algorithm.nranks, 16);
  }
}

// Reducing every device (one group) lowers to an AllReduce the runtime checks element by
// element: all programs of a 2 × 4 system with the reduction axis spanning both levels.
TEST_P(P2LowerBoth, WholeSystemReductionsRunExactlyOnThreads) {
  const SystemHierarchy system = {{{"node", 2}, {"GPU", 4}}};
  const std::vector<PlacementCandidate> candidates =
      synthesizeReductions(system, std::vector<int>{8}, std::vector<int>{0});
  ASSERT_EQ(candidates.size(), 1u);
  const PlacementCandidate& c = candidates.front();
  ASSERT_EQ(c.programs.size(), 47u);
  for (const ReductionProgram& p : c.programs) {
    SCOPED_TRACE(formatProgram(c.hierarchy, p));
    const auto lowered = lowerProgram(c.hierarchy, c.layout, p, lowerOptions("p2-test", 4));
    ASSERT_EQ(lowered->collective().name(), "allreduce");
    ASSERT_EQ(violationsOf(*lowered), "");
    const ir::Algorithm algorithm = compiler::compileProgram(lowered->dag()).algorithm;
    runtime::ThreadRunOptions options;
    options.count = 1031;
    options.type = runtime::DataType::int32;
    options.timeout = std::chrono::milliseconds(60'000);
    options.fifo.slotBytes = 4096;
    const runtime::ThreadRunReport report = runtime::runOnThreads(algorithm, options);
    EXPECT_TRUE(report.ok()) << report.firstWrong;
    EXPECT_GT(report.checkedElements, 0u);
  }
}

TEST(P2Lower, LoweringNamesParse) {
  EXPECT_EQ(parseLowering("tree"), Lowering::tree);
  EXPECT_EQ(parseLowering("ring"), Lowering::ring);
  try {
    parseLowering("chain");
    FAIL() << "expected OptionError";
  } catch (const OptionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("'chain'"));
    EXPECT_THAT(e.what(), HasSubstr("use ring"));
  }
}

// The paper's point for NCCL Tree (P² Appendix A): when latency dominates (few bytes,
// many ranks) a tree AllReduce beats the ring. 64 GPUs of 4 A100 nodes, 64 KiB per device.
TEST(P2Lower, TreeBeatsRingWhenLatencyDominates) {
  const topology::Topology topology = topology::loadTopology("hgx-a100-16", 4);
  const SystemHierarchy system = systemHierarchyOf(topology, topology.nodes);
  const PlacementCandidate c =
      synthesizeReductions(system, std::vector<int>{64}, std::vector<int>{0}).front();
  const ReductionProgram allReduce = parseProgram(
      c.hierarchy, "(" + c.hierarchy.levels.front().name + ", InsideGroup, AllReduce)");
  topology::Fabric fabric(topology);
  sim::SimOptions sim;
  sim.bytes = 64 * 1024;
  double seconds[2] = {0, 0};
  for (Lowering lowering : {Lowering::ring, Lowering::tree}) {
    LowerOptions options;
    options.lowering = lowering;
    options.devicesPerNode = topology.node.devices;  // NCCL's tree: chains inside the nodes
    const auto lowered = lowerProgram(c.hierarchy, c.layout, allReduce, options);
    seconds[lowering == Lowering::tree ? 1 : 0] =
        sim::simulate(compiler::compileProgram(lowered->dag()).algorithm, fabric, sim).seconds;
  }
  EXPECT_LT(seconds[1], seconds[0]) << "ring " << seconds[0] << " s, tree " << seconds[1] << " s";
}

TEST(P2Lower, GroupReductionNeedsAPartition) {
  EXPECT_THAT(makeGroupReduction(4, 1, {{0, 1, 2, 3}})->name(), "allreduce");
  const auto two = makeGroupReduction(4, 2, {{0, 2}, {1, 3}});
  EXPECT_EQ(two->expectedOutput(2, 1)->describe(),
            ir::ChunkValue::sum({{0, 1}, {2, 1}}).describe());
  EXPECT_EQ(two->refined(3)->chunkFactor(), 6);
  try {
    makeGroupReduction(4, 1, {{0, 1}, {1, 2, 3}});
    FAIL() << "expected OptionError";
  } catch (const OptionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("rank 1 "));
  }
  EXPECT_THROW(makeGroupReduction(4, 1, {{0, 1}}), OptionError);
}

}  // namespace
}  // namespace chorus::synth
