// The one-sided simulator (src/sim/one_sided_sim.h) on hand-written MSCCL++ plans
// (tests/mscclpp_plans.h) over the uniform α-β-γ machine, where the model's times can be stated
// by hand: puts in one threadblock follow one another, port puts overlap across channels, a
// signal costs α, packets move twice their bytes. Then against the two-sided simulator on the
// same algorithms (a library plan and its lowering, ir::lowerToOneSided), and its errors. Never
// asserts a measured time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "alpha_beta_constants.h"
#include "chorus/error.h"
#include "ir/mscclpp_plan.h"
#include "ir/one_sided_lowering.h"
#include "mscclpp_plans.h"
#include "runtime/compile_for_test.h"
#include "sim/simulator.h"
#include "topology/fabric.h"
#include "topology/presets.h"

namespace chorus {
namespace {

using ::testing::HasSubstr;
using testing_support::kBandwidth;
using testing_support::kMiB;
using testing_support::kReduceRate;
using testing_support::kSmallAlpha;
namespace plans = chorus::testing_support::mscclpp_plans;

ir::Algorithm oneSidedPlan(const nlohmann::json& plan) {
  return ir::readMscclppPlan(plan.dump(), "plan.json");
}

sim::SimResult simulateOnUniform(const ir::Algorithm& algorithm, std::uint64_t bytes,
                                 bool trace = false) {
  topology::Fabric fabric(
      topology::uniformTopology(algorithm.nranks, kSmallAlpha, kBandwidth, kReduceRate));
  return sim::simulate(algorithm, fabric, sim::SimOptions{.bytes = bytes, .trace = trace});
}

double bytesOnLinks(const sim::SimResult& result) {
  double bytes = 0;
  for (const sim::LinkUse& link : result.links)
    bytes += link.bytes;
  return bytes;
}

// Two-phase AllReduce, one threadblock per rank, chunk c = bytes / n: n − 1 puts of c one after
// another, signals (α), n − 1 reductions at γ, n − 1 puts, signals (α).
TEST(OneSidedSim, MemoryPutsOfOneThreadblockFollowOneAnother) {
  for (int n : {2, 4, 8}) {
    const double c = static_cast<double>(kMiB) / n;
    const double expected =
        2 * (n - 1) * c / kBandwidth + (n - 1) * c / kReduceRate + 2 * kSmallAlpha;
    const sim::SimResult r = simulateOnUniform(oneSidedPlan(plans::twoPhaseAllReduce(n)), kMiB);
    EXPECT_NEAR(r.seconds, expected, 1e-9 * expected) << n << " ranks";
    EXPECT_DOUBLE_EQ(bytesOnLinks(r), 2.0 * n * (n - 1) * c) << n << " ranks";
    EXPECT_EQ(r.tiles, 1);
  }
}

// Port-channel AllGather: every rank posts one put-with-signal per peer; each channel's proxy
// carries its own, so the n − 1 puts overlap on their links: c / β + α whatever n is.
TEST(OneSidedSim, PortPutsOverlapAcrossChannels) {
  for (int n : {2, 4, 8}) {
    const double c = static_cast<double>(kMiB) / n;  // AllGather's size is the whole output
    const double expected = c / kBandwidth + kSmallAlpha;
    const sim::SimResult r = simulateOnUniform(oneSidedPlan(plans::portAllGather(n)), kMiB);
    EXPECT_NEAR(r.seconds, expected, 1e-9 * expected) << n << " ranks";
  }
}

// The LL-packet AllReduce moves the same data as the two-phase one, as packets: twice the bytes
// on the links, and no signal (a packet read waits for its packets only).
TEST(OneSidedSim, PacketsMoveTwiceTheirBytes) {
  for (int n : {2, 4}) {
    const sim::SimResult packets = simulateOnUniform(oneSidedPlan(plans::packetAllReduce(n)), kMiB);
    const sim::SimResult plain = simulateOnUniform(oneSidedPlan(plans::twoPhaseAllReduce(n)), kMiB);
    EXPECT_DOUBLE_EQ(bytesOnLinks(packets), 2 * bytesOnLinks(plain)) << n << " ranks";
    // Latency-bound: two hops of α each way, as the two-phase plan's two signals.
    const sim::SimResult tiny = simulateOnUniform(oneSidedPlan(plans::packetAllReduce(n)), 64);
    EXPECT_GE(tiny.seconds, 2 * kSmallAlpha) << n << " ranks";
    EXPECT_LT(tiny.seconds, 2.1 * kSmallAlpha) << n << " ranks";
  }
}

// A semaphore or a barrier orders the two threadblocks of the hand-off: the second copy starts
// when the first ended.
TEST(OneSidedSim, SemaphoresAndBarriersOrderThreadblocks) {
  for (bool barrier : {false, true}) {
    const sim::SimResult r =
        simulateOnUniform(oneSidedPlan(plans::handOff(barrier)), kMiB, /*trace=*/true);
    double firstEnd = -1, secondStart = -1;
    for (const sim::StepRecord& step : r.trace) {
      if (step.op != ir::OpKind::copy) continue;
      if (step.tb == 0) firstEnd = step.end;
      if (step.tb == 1) secondStart = step.start;
    }
    ASSERT_GE(firstEnd, 0);
    EXPECT_GE(secondStart, firstEnd) << (barrier ? "barrier" : "semaphore");
  }
}

// A library plan and its lowering to puts and signals run the same algorithm; on the uniform
// machine, one message per chunk (no tiling), the lowering's only extra cost is its opening
// handshake (one α) and the signal after each put (the two-sided message pays its α anyway).
TEST(OneSidedSim, ALoweredPlanTakesAboutAsLongAsItsTwoSidedPlan) {
  for (const char* name : {"allreduce.ring", "allgather.ring", "reducescatter.ring"}) {
    const ir::Algorithm twoSided =
        testing_support::compileForTiming({.algorithm = name, .ranks = 4});
    const ir::Algorithm lowered = ir::lowerToOneSided(twoSided);
    topology::Fabric fabric(topology::uniformTopology(4, kSmallAlpha, kBandwidth, kReduceRate));
    for (std::uint64_t bytes : {std::uint64_t{1024}, kMiB, 16 * kMiB}) {
      const double two =
          sim::simulate(twoSided, fabric, sim::SimOptions{.bytes = bytes, .tiling = false}).seconds;
      const double one = sim::simulate(lowered, fabric, sim::SimOptions{.bytes = bytes}).seconds;
      EXPECT_GE(one, two - 1e-12) << name << " at " << bytes;
      EXPECT_LE(one, two + 2 * kSmallAlpha + 0.01 * two) << name << " at " << bytes;
    }
  }
}

TEST(OneSidedSim, ADeadlockNamesTheBlockedWait) {
  nlohmann::json plan = plans::twoPhaseAllReduce(2);
  // Rank 1's first signal dropped: rank 0's first wait never returns.
  auto& ops = plan["gpus"][1]["threadblocks"][0]["ops"];
  ops.erase(ops.begin() + 2);
  try {
    simulateOnUniform(oneSidedPlan(plan), kMiB);
    FAIL() << "expected a SimulationError";
  } catch (const SimulationError& e) {
    EXPECT_THAT(e.what(), HasSubstr("deadlocked"));
    EXPECT_THAT(e.what(), HasSubstr("rank 0 tb 0 step"));
    EXPECT_THAT(e.what(), HasSubstr("wait with rank 1"));
  }
}

TEST(OneSidedSim, AMalformedPlanIsRefusedByName) {
  ir::Algorithm algorithm = oneSidedPlan(plans::twoPhaseAllReduce(2));
  algorithm.ranks[0].threadblocks[0].steps[0].channel = 7;
  try {
    simulateOnUniform(algorithm, kMiB);
    FAIL() << "expected a PlanError";
  } catch (const PlanError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot be simulated"));
    EXPECT_THAT(e.what(), HasSubstr("names channel 7"));
  }
}

TEST(OneSidedSim, CrossThreadblockDepsAreRefusedInOneSidedPlans) {
  ir::Algorithm algorithm = oneSidedPlan(plans::handOff(false));
  algorithm.ranks[0].threadblocks[1].steps[2].deps.push_back(ir::StepRef{0, 0});
  try {
    simulateOnUniform(algorithm, kMiB);
    FAIL() << "expected a PlanError";
  } catch (const PlanError& e) {
    EXPECT_THAT(e.what(), HasSubstr("deps"));
    EXPECT_THAT(e.what(), HasSubstr("semaphore or a barrier"));
  }
}

TEST(OneSidedSim, TheCriticalPathEndsAtTheLastStep) {
  topology::Fabric fabric(topology::uniformTopology(4, kSmallAlpha, kBandwidth, kReduceRate));
  const sim::SimResult r = sim::simulate(oneSidedPlan(plans::twoPhaseAllReduce(4)), fabric,
                                         sim::SimOptions{.bytes = kMiB, .criticalPath = true});
  ASSERT_FALSE(r.criticalPath.empty());
  EXPECT_DOUBLE_EQ(r.criticalPath.back().end, r.seconds);
  bool waitedForASignal = false;
  for (const sim::StepRecord& step : r.criticalPath)
    waitedForASignal = waitedForASignal || step.waitedFor.starts_with("signal from rank");
  EXPECT_TRUE(waitedForASignal);
}

}  // namespace
}  // namespace chorus
