// P² state-matrix semantics (src/synth/p2_semantics): every rule of P² Figure 8 on its
// two-device example (4 devices, reduction between devices 0 and 1) and on each failing
// premise, Figure 7's state, and whole programs on Figure 2's 16 GPUs with the Figure 2d
// placement reducing over shards: Figure 4's programs rejected, Figure 3's and Figure 10's
// accepted.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "support/error.h"
#include "synth/p2_semantics.h"
#include "test_seed.h"

namespace chorus::synth {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

RuleResult apply2(Collective c, const StateMatrix& s0, const StateMatrix& s1) {
  const std::vector<StateMatrix> pre = {s0, s1};
  return applyRule(c, pre);
}

// Figure 8's setting: 4 devices (4 chunks), device 0 and device 1 with their own data.
const StateMatrix kOwn0 = makeState({"1000", "1000", "1000", "1000"});
const StateMatrix kOwn1 = makeState({"0100", "0100", "0100", "0100"});
const StateMatrix kSum01 = makeState({"1100", "1100", "1100", "1100"});
const StateMatrix kEmpty = makeEmptyState(4, 4);

TEST(P2Semantics, Figure7StateHasThreeChunks) {
  const StateMatrix s = makeState({"1100", "0110", "0011", "0000"});
  EXPECT_THAT(nonEmptyRows(s), ElementsAre(0, 1, 2));
  EXPECT_TRUE(s.at(0, 1));
  EXPECT_FALSE(s.at(0, 2));
  EXPECT_EQ(formatState(s), "1100/0110/0011/0000");
  EXPECT_THROW(makeState({"1100", "011"}), ParseError);
  EXPECT_THROW(makeState({"1x00"}), ParseError);
}

TEST(P2Semantics, AllReduceSumsIntoEveryDevice) {
  const RuleResult r = apply2(Collective::allReduce, kOwn0, kOwn1);
  ASSERT_TRUE(r.applies) << r.violation;
  EXPECT_THAT(r.post, ElementsAre(kSum01, kSum01));
}

TEST(P2Semantics, ReduceScatterScattersTheSumsRows) {
  const RuleResult r = apply2(Collective::reduceScatter, kOwn0, kOwn1);
  ASSERT_TRUE(r.applies) << r.violation;
  EXPECT_EQ(r.post[0], makeState({"1100", "1100", "0000", "0000"}));
  EXPECT_EQ(r.post[1], makeState({"0000", "0000", "1100", "1100"}));
  // Only the non-empty rows are scattered.
  const StateMatrix half0 = makeState({"0000", "1000", "0000", "1000"});
  const StateMatrix half1 = makeState({"0000", "0100", "0000", "0100"});
  const RuleResult again = apply2(Collective::reduceScatter, half0, half1);
  ASSERT_TRUE(again.applies) << again.violation;
  EXPECT_EQ(again.post[0], makeState({"0000", "1100", "0000", "0000"}));
  EXPECT_EQ(again.post[1], makeState({"0000", "0000", "0000", "1100"}));
}

TEST(P2Semantics, ReduceScatterNeedsTheChunksToDivide) {
  const std::vector<StateMatrix> three = {makeState({"100", "100"}), makeState({"010", "010"}),
                                          makeState({"001", "001"})};
  const RuleResult r = applyRule(Collective::reduceScatter, three);
  EXPECT_FALSE(r.applies);
  EXPECT_THAT(r.violation, HasSubstr("R-ReduceScatter"));
  EXPECT_THAT(r.violation, HasSubstr("2 non-empty chunks cannot be scattered evenly over 3"));
}

TEST(P2Semantics, AllGatherJoinsDisjointPieces) {
  const StateMatrix piece0 = makeState({"1100", "1100", "0000", "0000"});
  const StateMatrix piece1 = makeState({"0000", "0000", "1100", "1100"});
  const RuleResult r = apply2(Collective::allGather, piece0, piece1);
  ASSERT_TRUE(r.applies) << r.violation;
  EXPECT_THAT(r.post, ElementsAre(kSum01, kSum01));
}

TEST(P2Semantics, AllGatherRejectsOverlappingOrUnequalPieces) {
  const RuleResult overlap = apply2(Collective::allGather, kOwn0, kOwn1);
  EXPECT_FALSE(overlap.applies);
  EXPECT_THAT(overlap.violation, HasSubstr("both hold chunk 0"));
  const StateMatrix one = makeState({"1000", "0000", "0000", "0000"});
  const StateMatrix three = makeState({"0000", "0100", "0100", "0100"});
  const RuleResult unequal = apply2(Collective::allGather, one, three);
  EXPECT_FALSE(unequal.applies);
  EXPECT_THAT(unequal.violation, HasSubstr("1 and 3 chunks"));
}

TEST(P2Semantics, ReduceLeavesTheSumOnTheFirstDevice) {
  const RuleResult r = apply2(Collective::reduce, kOwn0, kOwn1);
  ASSERT_TRUE(r.applies) << r.violation;
  EXPECT_THAT(r.post, ElementsAre(kSum01, kEmpty));
}

TEST(P2Semantics, BroadcastCopiesTheFirstDevice) {
  const RuleResult r = apply2(Collective::broadcast, kSum01, kEmpty);
  ASSERT_TRUE(r.applies) << r.violation;
  EXPECT_THAT(r.post, ElementsAre(kSum01, kSum01));
  // s_i ≤ s_0 may hold with equality for some devices as long as one gains.
  const std::vector<StateMatrix> pre = {kSum01, kSum01, kOwn1};
  EXPECT_TRUE(applyRule(Collective::broadcast, pre).applies);
}

TEST(P2Semantics, BroadcastNeedsInformationIncrease) {
  const RuleResult lose = apply2(Collective::broadcast, kOwn0, kOwn1);
  EXPECT_FALSE(lose.applies);
  EXPECT_THAT(lose.violation, HasSubstr("R-Broadcast"));
  EXPECT_THAT(lose.violation, HasSubstr("lacks"));
  const RuleResult same = apply2(Collective::broadcast, kSum01, kSum01);
  EXPECT_FALSE(same.applies);
  EXPECT_THAT(same.violation, HasSubstr("adds nothing"));
}

TEST(P2Semantics, ReducingRulesRejectDifferentChunks) {
  const StateMatrix first = makeState({"1000", "1000", "0000", "0000"});
  const StateMatrix second = makeState({"0000", "0000", "0100", "0100"});
  for (Collective c : {Collective::allReduce, Collective::reduceScatter, Collective::reduce}) {
    const RuleResult r = apply2(c, first, second);
    EXPECT_FALSE(r.applies) << collectiveName(c);
    EXPECT_THAT(r.violation, HasSubstr("R-" + std::string(collectiveName(c))));
    EXPECT_THAT(r.violation, HasSubstr("hold different chunks ({0,1} vs {2,3})"));
  }
}

TEST(P2Semantics, ReducingRulesRejectReducingTwice) {
  for (Collective c : {Collective::allReduce, Collective::reduceScatter, Collective::reduce}) {
    const RuleResult r = apply2(c, kSum01, kOwn1);
    EXPECT_FALSE(r.applies) << collectiveName(c);
    EXPECT_THAT(r.violation, HasSubstr("both contain device 1's data"));
  }
}

TEST(P2Semantics, StepsLeaveOtherDevicesAloneAndRejectBadGroups) {
  const StateContext initial = makeInitialContext(4, 4);
  const StepResult step = applyStep(initial, {Collective::allReduce, {{0, 1}}});
  ASSERT_TRUE(step.applies);
  EXPECT_EQ(step.after[0], kSum01);
  EXPECT_EQ(step.after[2], initial[2]);
  EXPECT_EQ(step.after[3], initial[3]);
  try {
    applyStep(initial, {Collective::reduce, {{0, 1}, {1, 2}}});
    FAIL() << "expected OptionError";
  } catch (const OptionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("device 1 appears twice in a Reduce step"));
  }
  EXPECT_THROW(applyStep(initial, {Collective::reduce, {{0, 4}}}), OptionError);
  EXPECT_THROW(applyStep(initial, {Collective::reduce, {{}}}), OptionError);
  const StepResult bad = applyStep(step.after, {Collective::allReduce, {{2, 3}, {0, 1}}});
  EXPECT_FALSE(bad.applies);
  EXPECT_THAT(bad.violation, HasSubstr("devices 0 and 1"));
}

// Figure 2a's 16 GPUs (A0..A3 = 0..3, B0 = 4, C0 = 8, D0 = 12) under Figure 2d's matrix
// [[1 1 2 2] [1 2 1 2]], reducing over the shards: the reduction groups are {x, x+1, x+8, x+9}
// for x ∈ {0, 2, 4, 6} (A0, A1, C0, C1 for x = 0); 4 chunks (one per group member).
constexpr int kDevices = 16;
constexpr int kChunks = 4;
const std::vector<int> kGroupBases = {0, 2, 4, 6};

std::vector<std::vector<int>> perGroup(const std::function<std::vector<std::vector<int>>(int)>& f) {
  std::vector<std::vector<int>> groups;
  for (int x : kGroupBases)
    for (std::vector<int>& g : f(x))
      groups.push_back(std::move(g));
  return groups;
}

const std::vector<std::vector<int>> kWhole = perGroup([](int x) {
  return std::vector<std::vector<int>>{{x, x + 1, x + 8, x + 9}};
});
const std::vector<std::vector<int>> kInServer = perGroup([](int x) {  // S0: same CPU
  return std::vector<std::vector<int>>{{x, x + 1}, {x + 8, x + 9}};
});
const std::vector<std::vector<int>> kAcross = perGroup([](int x) {  // S1/S2: across servers
  return std::vector<std::vector<int>>{{x, x + 8}, {x + 1, x + 9}};
});
const std::vector<std::vector<int>> kMasters = perGroup([](int x) {
  return std::vector<std::vector<int>>{{x, x + 8}};
});

CheckResult check(const std::vector<GroupStep>& steps) {
  return checkProgram(steps, makeInitialContext(kChunks, kDevices),
                      makeGoalContext(kChunks, kDevices, kWhole));
}

TEST(P2Semantics, Figure3ProgramsAreAccepted) {
  const CheckResult a = check({{Collective::allReduce, kWhole}});
  EXPECT_TRUE(a.valid) << a.reason;
  const CheckResult b =
      check({{Collective::allReduce, kInServer}, {Collective::allReduce, kAcross}});
  EXPECT_TRUE(b.valid) << b.reason;
  const CheckResult c = check({{Collective::reduce, kInServer},
                               {Collective::allReduce, kMasters},
                               {Collective::broadcast, kInServer}});
  EXPECT_TRUE(c.valid) << c.reason;
}

TEST(P2Semantics, Figure10ProgramsAreAccepted) {
  const CheckResult i = check({{Collective::reduce, kInServer},
                               {Collective::allReduce, kMasters},
                               {Collective::broadcast, kInServer}});
  EXPECT_TRUE(i.valid) << i.reason;
  const CheckResult ii = check({{Collective::reduceScatter, kInServer},
                                {Collective::allReduce, kAcross},
                                {Collective::allGather, kInServer}});
  EXPECT_TRUE(ii.valid) << ii.reason;
  // After the ReduceScatter, A0 holds chunks {0,1} and A1 chunks {2,3}, both summed over
  // {A0, A1}; the AllReduce across servers then completes A0's half with C0's.
  const StepResult rs =
      applyStep(makeInitialContext(kChunks, kDevices), {Collective::reduceScatter, kInServer});
  ASSERT_TRUE(rs.applies);
  StateMatrix a0 = makeEmptyState(kChunks, kDevices);
  for (int k : {0, 1})
    for (int d : {0, 1})
      a0.set(k, d);
  EXPECT_EQ(rs.after[0], a0);
}

TEST(P2Semantics, Figure4aReduceScatterThenAllReduceIsRejected) {
  // (a): the ReduceScatter leaves the first half on A0 and the second on A1; an AllReduce
  // over A0 and A1 would add the two halves together.
  for (const auto& second : {kWhole, kInServer}) {
    const CheckResult r =
        check({{Collective::reduceScatter, kInServer}, {Collective::allReduce, second}});
    EXPECT_FALSE(r.valid);
    EXPECT_EQ(r.failedStep, 1);
    EXPECT_THAT(r.reason, HasSubstr("devices 0 and 1 hold different chunks ({0,1} vs {2,3})"));
  }
}

TEST(P2Semantics, Figure4bAllReduceTwiceIsRejected) {
  // (b): after A0 and C0 are reduced, any later reduction of both reduces their data twice.
  for (const auto& second : {kWhole, kAcross}) {
    const CheckResult r =
        check({{Collective::allReduce, kAcross}, {Collective::allReduce, second}});
    EXPECT_FALSE(r.valid);
    EXPECT_EQ(r.failedStep, 1);
    EXPECT_THAT(r.reason, HasSubstr("chunk 0 of devices 0 and 8 both contain device 0's data"));
  }
}

TEST(P2Semantics, ReducingAcrossTheWrongAxisMissesTheGoal) {
  // Every rule applies, but A0 and A2 hold different data batches: the goal is unreachable.
  const std::vector<std::vector<int>> wrong = {{0, 2}, {1, 3}};
  const CheckResult r = check({{Collective::allReduce, wrong}});
  EXPECT_FALSE(r.valid);
  EXPECT_EQ(r.failedStep, -1);
  EXPECT_THAT(r.reason, HasSubstr("device 0 ends with"));
  // An incomplete program is not valid either.
  const CheckResult partial = check({{Collective::allReduce, kInServer}});
  EXPECT_FALSE(partial.valid);
  EXPECT_THAT(partial.reason, HasSubstr("but the reduction needs"));
}

TEST(P2Semantics, GoalContextRejectsOverlappingGroups) {
  const std::vector<std::vector<int>> overlapping = {{0, 1}, {1, 2}};
  EXPECT_THROW(makeGoalContext(2, 4, overlapping), OptionError);
}

// Every rule keeps what a group holds in union (rows move between members, never vanish or
// appear), and AllReduce, AllGather and Broadcast leave the members equal.
TEST(P2Semantics, RandomStepsKeepEveryChunkASetOfContributions) {
  std::mt19937 rng(testing_support::testSeed());
  for (int round = 0; round < 200; ++round) {
    const int devices = 2 + static_cast<int>(rng() % 6);
    StateContext context = makeInitialContext(devices, devices);
    for (int stepIndex = 0; stepIndex < 6; ++stepIndex) {
      std::vector<int> order(static_cast<std::size_t>(devices));
      for (int d = 0; d < devices; ++d)
        order[static_cast<std::size_t>(d)] = d;
      std::shuffle(order.begin(), order.end(), rng);
      const int size = 2 + static_cast<int>(rng() % static_cast<unsigned>(devices - 1));
      GroupStep step{kCollectives[rng() % 5],
                     {std::vector<int>(order.begin(), order.begin() + size)}};
      const StepResult r = applyStep(context, step);
      if (!r.applies) continue;
      if (step.collective == Collective::allReduce || step.collective == Collective::allGather ||
          step.collective == Collective::broadcast) {
        for (int d : step.groups.front()) {
          EXPECT_EQ(r.after[static_cast<std::size_t>(d)],
                    r.after[static_cast<std::size_t>(step.groups.front().front())]);
        }
      }
      std::vector<int> before(static_cast<std::size_t>(devices * devices), 0);
      std::vector<int> after(before.size(), 0);
      for (int d : step.groups.front())
        for (std::size_t c = 0; c < before.size(); ++c) {
          before[c] |= context[static_cast<std::size_t>(d)].cells[c];
          after[c] |= r.after[static_cast<std::size_t>(d)].cells[c];
        }
      EXPECT_EQ(before, after) << collectiveName(step.collective);
      context = r.after;
    }
  }
}

}  // namespace
}  // namespace chorus::synth
