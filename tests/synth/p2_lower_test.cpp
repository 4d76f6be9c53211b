// Lowering P² programs to one chorus program (src/synth/p2_lower): every synthesized program of
// Figure 2's placements traces to a DSL program whose postcondition holds (the reduction-group
// sums, in place), compiles through the pipeline with the verifier on, and a whole-system
// reduction runs on the thread transport with exact results.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "compiler/pipeline.h"
#include "p2_figures.h"
#include "runtime/thread_runner.h"
#include "support/error.h"
#include "synth/p2_lower.h"

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

TEST(P2Lower, EveryProgramOfFigure2PlacementsMeetsItsPostcondition) {
  for (const std::vector<int>& reduce : std::vector<std::vector<int>>{{0}, {1}}) {
    for (const PlacementCandidate& c :
         synthesizeReductions(figure2System(), std::vector<int>{4, 4}, reduce)) {
      for (const ReductionProgram& p : c.programs) {
        SCOPED_TRACE(formatMatrix(c.matrix) + " " + formatProgram(c.hierarchy, p));
        const auto lowered = lowerProgram(c.hierarchy, c.layout, p);
        EXPECT_EQ(lowered->nranks(), 16);
        EXPECT_THAT(lowered->collective().name(), StartsWith("group-reduction:"));
        EXPECT_EQ(violationsOf(*lowered), "");
      }
    }
  }
}

TEST(P2Lower, Figure10ProgramsCompileWithTheVerifier) {
  const ParallelismMatrix figure2d = {2, 4, {1, 1, 2, 2, 1, 2, 1, 2}};
  const ReductionLayout layout = layoutReduction(figure2d, std::vector<int>{1});
  const SynthesisHierarchy h = synthesisHierarchyOf(figure2System(), layout);
  for (const char* text :
       {"(server, InsideGroup, Reduce); (server, Master(rack), AllReduce); "
        "(server, InsideGroup, Broadcast)",
        "(server, InsideGroup, ReduceScatter); (server, Parallel(rack), AllReduce); "
        "(server, InsideGroup, AllGather)"}) {
    SCOPED_TRACE(text);
    const auto lowered = lowerProgram(h, layout, parseProgram(h, text));
    ASSERT_EQ(violationsOf(*lowered), "");
    compiler::CompileOptions options;
    options.verify = true;
    const compiler::CompileResult result = compiler::compileProgram(lowered->dag(), options);
    EXPECT_EQ(result.algorithm.nranks, 16);
  }
}

// Reducing every device (one group) lowers to an AllReduce the runtime checks element by
// element: all programs of a 2 × 4 system with the reduction axis spanning both levels.
TEST(P2Lower, WholeSystemReductionsRunExactlyOnThreads) {
  const SystemHierarchy system = {{{"node", 2}, {"GPU", 4}}};
  const std::vector<PlacementCandidate> candidates =
      synthesizeReductions(system, std::vector<int>{8}, std::vector<int>{0});
  ASSERT_EQ(candidates.size(), 1u);
  const PlacementCandidate& c = candidates.front();
  ASSERT_EQ(c.programs.size(), 47u);
  for (const ReductionProgram& p : c.programs) {
    SCOPED_TRACE(formatProgram(c.hierarchy, p));
    LowerOptions lowerOptions;
    lowerOptions.name = "p2-test";
    const auto lowered = lowerProgram(c.hierarchy, c.layout, p, lowerOptions);
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
