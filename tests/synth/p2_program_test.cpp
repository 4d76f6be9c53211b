// P² reduction programs (src/synth/p2_program): Table 2's device groups, the synthesis
// hierarchy of §3.4 (Figure 2d, Table 1), printing and parsing P²'s notation, Figures 3, 4 and
// 10 in the language, syntax-guided enumeration (its program counts against Appendix A, and
// against an unpruned brute force), and placing programs on the whole system (checked again
// with the full-system semantics).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "p2_figures.h"
#include "support/error.h"
#include "synth/p2_placement.h"
#include "synth/p2_program.h"
#include "test_seed.h"

namespace chorus::synth {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Figure 2a as a synthesis hierarchy (Table 2 uses the system hierarchy itself).
SynthesisHierarchy figure2() {
  const std::vector<HierarchyLevel> levels = {{"server", 2}, {"CPU", 2}, {"GPU", 4}};
  return makeSynthesisHierarchy("rack", levels);
}

// "{A0, A1}, {B0, B1}": groups with Figure 2a's device names (CPU letter, GPU digit).
std::string named(const std::vector<std::vector<int>>& groups) {
  std::string text;
  for (const std::vector<int>& group : groups) {
    if (!text.empty()) text += ", ";
    text += "{";
    for (std::size_t i = 0; i < group.size(); ++i) {
      if (i > 0) text += ", ";
      text += static_cast<char>('A' + group[i] / 4);
      text += std::to_string(group[i] % 4);
    }
    text += "}";
  }
  return text;
}

std::string tableRow(const SynthesisHierarchy& h, std::string_view instruction) {
  const ReductionProgram p = parseProgram(h, instruction);
  return named(deriveGroups(h, p.instructions.front()));
}

TEST(P2Program, Table2GroupsForFigure2) {
  const SynthesisHierarchy h = figure2();
  EXPECT_EQ(tableRow(h, "(CPU, InsideGroup, AllReduce)"),
            "{A0, A1, A2, A3}, {B0, B1, B2, B3}, {C0, C1, C2, C3}, {D0, D1, D2, D3}");
  EXPECT_EQ(tableRow(h, "(CPU, Parallel(server), AllReduce)"),
            "{A0, B0}, {A1, B1}, {A2, B2}, {A3, B3}, {C0, D0}, {C1, D1}, {C2, D2}, {C3, D3}");
  EXPECT_EQ(tableRow(h, "(CPU, Parallel(rack), AllReduce)"),
            "{A0, B0, C0, D0}, {A1, B1, C1, D1}, {A2, B2, C2, D2}, {A3, B3, C3, D3}");
  EXPECT_EQ(tableRow(h, "(CPU, Master(rack), AllReduce)"), "{A0, B0, C0, D0}");
  EXPECT_EQ(tableRow(h, "(CPU, Master(server), AllReduce)"), "{A0, B0}, {C0, D0}");
  EXPECT_EQ(tableRow(h, "(server, InsideGroup, AllReduce)"),
            "{A0, A1, A2, A3, B0, B1, B2, B3}, {C0, C1, C2, C3, D0, D1, D2, D3}");
  EXPECT_EQ(tableRow(h, "(server, Parallel(rack), AllReduce)"),
            "{A0, C0}, {A1, C1}, {A2, C2}, {A3, C3}, {B0, D0}, {B1, D1}, {B2, D2}, {B3, D3}");
  EXPECT_EQ(tableRow(h, "(rack, InsideGroup, AllReduce)"),
            "{A0, A1, A2, A3, B0, B1, B2, B3, C0, C1, C2, C3, D0, D1, D2, D3}");
  EXPECT_EQ(tableRow(h, "(GPU, InsideGroup, AllReduce)").size(), 16u * 4u + 15u * 2u);
}

ParallelismMatrix figure2d() {
  return {2, 4, {1, 1, 2, 2, 1, 2, 1, 2}};
}

using testing_figures::figure2System;

// §2.5: reducing Figure 2d over shards uses the shard row [1 2 1 2]; levels of factor 1 add no
// groups, so the hierarchy is rack (root) → server 2 → GPU 2.
TEST(P2Program, SynthesisHierarchyOfFigure2d) {
  const std::vector<int> shards = {1};
  const SynthesisHierarchy h =
      synthesisHierarchyOf(figure2System(), layoutReduction(figure2d(), shards));
  EXPECT_EQ(formatSynthesisHierarchy(h), "[(rack, 1), (server, 2), (GPU, 2)]");
  EXPECT_EQ(h.levels[1].systemLevel, 1);
  EXPECT_EQ(h.levels[2].systemLevel, 3);
  EXPECT_EQ(synthesisDeviceCount(h), 4);
  const std::vector<int> data = {0};
  EXPECT_EQ(formatSynthesisHierarchy(
                synthesisHierarchyOf(figure2System(), layoutReduction(figure2d(), data))),
            "[(rack, 1), (CPU, 2), (GPU, 2)]");
  const SystemHierarchy a100 = {{{"node", 2}, {"GPU", 16}}};
  const ParallelismMatrix f2 = {2, 2, {2, 4, 1, 4}};  // Table 4's F2: [[2 4] [1 4]]
  EXPECT_EQ(formatSynthesisHierarchy(synthesisHierarchyOf(a100, layoutReduction(f2, data))),
            "[(root, 1), (node, 2), (GPU, 4)]");
}

SynthesisHierarchy figure2dShards() {
  const std::vector<int> shards = {1};
  return synthesisHierarchyOf(figure2System(), layoutReduction(figure2d(), shards));
}

const char* const kFigure3a = "(rack, InsideGroup, AllReduce)";
const char* const kFigure3b =
    "(server, InsideGroup, AllReduce); (server, Parallel(rack), AllReduce)";
const char* const kFigure10i =  // also Figure 3c
    "(server, InsideGroup, Reduce); (server, Master(rack), AllReduce); "
    "(server, InsideGroup, Broadcast)";
const char* const kFigure10ii =
    "(server, InsideGroup, ReduceScatter); (server, Parallel(rack), AllReduce); "
    "(server, InsideGroup, AllGather)";

TEST(P2Program, FormatAndParseRoundTrip) {
  const SynthesisHierarchy h = figure2dShards();
  for (const char* text : {kFigure3a, kFigure3b, kFigure10i, kFigure10ii}) {
    const ReductionProgram p = parseProgram(h, text);
    EXPECT_EQ(formatProgram(h, p), text);
  }
  const ReductionProgram p =
      parseProgram(h, "  (server ,Master( rack ),Reduce)\n;(rack,InsideGroup,Broadcast) ");
  ASSERT_EQ(p.instructions.size(), 2u);
  EXPECT_EQ(p.instructions[0], (Instruction{1, {FormKind::master, 0}, Collective::reduce}));
  EXPECT_TRUE(parseProgram(h, "  ").instructions.empty());
}

TEST(P2Program, ParseErrorsNameTheTokenAndTheLevels) {
  const SynthesisHierarchy h = figure2dShards();
  try {
    parseProgram(h, "(CPU, InsideGroup, AllReduce)");
    FAIL() << "expected ParseError";
  } catch (const ParseError& e) {
    EXPECT_THAT(e.what(), HasSubstr("expected a level name"));
    EXPECT_THAT(e.what(), HasSubstr("with levels rack, server, GPU"));
  }
  try {
    parseProgram(h, "(GPU, Parallel(server), AllToAll)");
    FAIL() << "expected ParseError";
  } catch (const ParseError& e) {
    EXPECT_THAT(e.what(), HasSubstr("expected AllReduce, ReduceScatter"));
    EXPECT_THAT(e.what(), HasSubstr("'AllToAll)'"));
  }
  EXPECT_THROW(parseProgram(h, "(GPU, Inside, AllReduce)"), ParseError);
  EXPECT_THROW(parseProgram(h, "(GPU, InsideGroup, AllReduce) (rack, InsideGroup, AllReduce)"),
               ParseError);
  try {
    parseProgram(h, "(server, Parallel(GPU), AllReduce)");
    FAIL() << "expected OptionError";
  } catch (const OptionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("ancestor of the slice"));
  }
  EXPECT_THROW(deriveGroups(h, {5, {}, Collective::allReduce}), OptionError);
}

TEST(P2Program, Figure3And10ProgramsAreValid) {
  const SynthesisHierarchy h = figure2dShards();
  for (const char* text : {kFigure3a, kFigure3b, kFigure10i, kFigure10ii}) {
    const CheckResult r = checkReductionProgram(h, parseProgram(h, text));
    EXPECT_TRUE(r.valid) << text << ": " << r.reason;
  }
  EXPECT_EQ(programSize(parseProgram(h, kFigure3a)), 1);
  EXPECT_EQ(programSize(parseProgram(h, kFigure3b)), 3);
  EXPECT_EQ(programSize(parseProgram(h, kFigure10i)), 4);
  EXPECT_EQ(programSize(parseProgram(h, kFigure10ii)), 4);
}

TEST(P2Program, Figure4ProgramsAreInvalid) {
  const SynthesisHierarchy h = figure2dShards();
  const CheckResult a = checkReductionProgram(
      h, parseProgram(h, "(server, InsideGroup, ReduceScatter); (rack, InsideGroup, AllReduce)"));
  EXPECT_FALSE(a.valid);
  EXPECT_EQ(a.failedStep, 1);
  EXPECT_THAT(a.reason, HasSubstr("hold different chunks"));
  const CheckResult b = checkReductionProgram(
      h, parseProgram(h, "(server, Parallel(rack), AllReduce); (rack, InsideGroup, AllReduce)"));
  EXPECT_FALSE(b.valid);
  EXPECT_EQ(b.failedStep, 1);
  EXPECT_THAT(b.reason, HasSubstr("reduced twice"));
  EXPECT_THROW(describeProgram(h, parseProgram(h, "(server, InsideGroup, AllReduce)")),
               OptionError);
}

// Figure 10(ii) on the whole system: ReduceScatter inside each CPU's GPU pairs, AllReduce of
// the halves across servers, AllGather back inside the pairs.
TEST(P2Program, PlacedFigure10iiExposesGroupsAndChunks) {
  const std::vector<int> shards = {1};
  const ReductionLayout layout = layoutReduction(figure2d(), shards);
  const SynthesisHierarchy h = synthesisHierarchyOf(figure2System(), layout);
  const std::vector<ProgramStep> steps = placeProgram(h, layout, parseProgram(h, kFigure10ii));
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].collective, Collective::reduceScatter);
  ASSERT_EQ(steps[0].groups.size(), 8u);
  EXPECT_EQ(steps[0].groups[0], (CollectiveGroup{{0, 1}, {0, 1, 2, 3}}));
  EXPECT_EQ(steps[0].groups[1], (CollectiveGroup{{8, 9}, {0, 1, 2, 3}}));
  EXPECT_EQ(steps[0].groups[2], (CollectiveGroup{{2, 3}, {0, 1, 2, 3}}));
  EXPECT_DOUBLE_EQ(steps[0].dataFraction, 1.0);
  EXPECT_EQ(steps[1].collective, Collective::allReduce);
  EXPECT_EQ(steps[1].groups[0], (CollectiveGroup{{0, 8}, {0, 1}}));
  EXPECT_EQ(steps[1].groups[1], (CollectiveGroup{{1, 9}, {2, 3}}));
  EXPECT_DOUBLE_EQ(steps[1].dataFraction, 0.5);
  EXPECT_EQ(steps[2].groups[0], (CollectiveGroup{{0, 1}, {0, 1, 2, 3}}));
  EXPECT_EQ(steps[2].totalChunks, 4);
  // Figure 10(i)'s master AllReduce runs only on the first GPU of each pair.
  const std::vector<ProgramStep> masters = placeProgram(h, layout, parseProgram(h, kFigure10i));
  ASSERT_EQ(masters[1].groups.size(), 4u);
  EXPECT_EQ(masters[1].groups[0], (CollectiveGroup{{0, 8}, {0, 1, 2, 3}}));
  EXPECT_EQ(masters[1].groups[1], (CollectiveGroup{{2, 10}, {0, 1, 2, 3}}));
}

std::vector<std::string> formattedPrograms(const SynthesisHierarchy& h,
                                           const std::vector<ReductionProgram>& programs) {
  std::vector<std::string> out;
  for (const ReductionProgram& p : programs)
    out.push_back(formatProgram(h, p));
  return out;
}

TEST(P2Program, OneLevelHierarchyHasThreePrograms) {
  const std::vector<HierarchyLevel> levels = {{"GPU", 4}};
  const SynthesisHierarchy h = makeSynthesisHierarchy("root", levels);
  EXPECT_THAT(formattedPrograms(h, enumeratePrograms(h)),
              ElementsAre("(root, InsideGroup, AllReduce)",
                          "(root, InsideGroup, ReduceScatter); (root, InsideGroup, AllGather)",
                          "(root, InsideGroup, Reduce); (root, InsideGroup, Broadcast)"));
}

// Appendix A: with size limit 5, every two-level synthesis hierarchy yields 47 programs
// (e.g. [32] on 2 nodes × 16 A100, "14/47"), whatever the level sizes.
TEST(P2Program, TwoLevelHierarchyHas47ProgramsInIncreasingSize) {
  for (const auto& [outer, inner] :
       std::vector<std::pair<int, int>>{{2, 2}, {2, 16}, {4, 8}, {4, 2}}) {
    const std::vector<HierarchyLevel> levels = {{"node", outer}, {"GPU", inner}};
    const SynthesisHierarchy h = makeSynthesisHierarchy("root", levels);
    SCOPED_TRACE(formatSynthesisHierarchy(h));
    const std::vector<ReductionProgram> programs = enumeratePrograms(h);
    ASSERT_EQ(programs.size(), 47u);
    std::set<std::string> distinct;
    for (std::size_t i = 0; i < programs.size(); ++i) {
      EXPECT_TRUE(checkReductionProgram(h, programs[i]).valid);
      EXPECT_LE(programSize(programs[i]), 5);
      if (i > 0) {
        EXPECT_LE(programSize(programs[i - 1]), programSize(programs[i]));
      }
      distinct.insert(formatProgram(h, programs[i]));
    }
    EXPECT_EQ(distinct.size(), programs.size());
    EXPECT_EQ(formatProgram(h, programs.front()), "(root, InsideGroup, AllReduce)");
    for (const char* text :
         {"(node, InsideGroup, AllReduce); (node, Parallel(root), AllReduce)",
          "(node, InsideGroup, Reduce); (node, Master(root), AllReduce); (node, InsideGroup, "
          "Broadcast)",
          "(node, InsideGroup, ReduceScatter); (node, Parallel(root), AllReduce); "
          "(node, InsideGroup, AllGather)"}) {
      EXPECT_TRUE(distinct.count(text)) << text;
    }
  }
  const std::vector<HierarchyLevel> levels = {{"node", 2}, {"GPU", 2}};
  const SynthesisHierarchy h = makeSynthesisHierarchy("root", levels);
  EXPECT_EQ(enumeratePrograms(h, {.sizeLimit = 5, .maxPrograms = 10}).size(), 10u);
  EXPECT_EQ(enumeratePrograms(h, {.sizeLimit = 1}).size(), 1u);
  EXPECT_THROW(enumeratePrograms(h, {.sizeLimit = -1}), OptionError);
}

std::size_t totalPrograms(const SystemHierarchy& system, std::vector<int> axes,
                          std::vector<int> reduce) {
  std::size_t total = 0;
  for (const PlacementCandidate& c : synthesizeReductions(system, axes, reduce))
    total += c.programs.size();
  return total;
}

// Appendix A's "programs" column (total over the matrices of each row).
TEST(P2Program, AppendixAProgramTotals) {
  const SystemHierarchy twoNodes = {{{"node", 2}, {"GPU", 16}}};
  EXPECT_EQ(totalPrograms(twoNodes, {32}, {0}), 47u);
  EXPECT_EQ(totalPrograms(twoNodes, {2, 16}, {0}), 6u);
  EXPECT_EQ(totalPrograms(twoNodes, {4, 8}, {0}), 50u);
  EXPECT_EQ(totalPrograms(twoNodes, {8, 4}, {1}), 50u);
  EXPECT_EQ(totalPrograms(twoNodes, {16, 2}, {1}), 6u);
  const SystemHierarchy fourNodes = {{{"node", 4}, {"GPU", 16}}};
  EXPECT_EQ(totalPrograms(fourNodes, {4, 16}, {0}), 53u);
  EXPECT_EQ(totalPrograms(fourNodes, {4, 16}, {1}), 97u);
  EXPECT_EQ(totalPrograms(fourNodes, {2, 32}, {1}), 94u);
  EXPECT_EQ(totalPrograms(fourNodes, {16, 2, 2}, {0, 2}), 188u);
  const SystemHierarchy v100 = {{{"node", 4}, {"GPU", 8}}};
  EXPECT_EQ(totalPrograms(v100, {8, 4}, {1}), 53u);
}

// The search prunes at the first invalid step and merges instructions with equal groups; an
// unpruned enumeration of every syntactic instruction sequence must find the same group-level
// programs.
TEST(P2Program, EnumerationMatchesUnprunedBruteForce) {
  const std::vector<HierarchyLevel> levels = {{"node", 2}, {"socket", 2}, {"GPU", 2}};
  const SynthesisHierarchy h = makeSynthesisHierarchy("root", levels);
  constexpr int kLimit = 3;
  std::vector<Instruction> syntax;
  for (int slice = 0; slice < 4; ++slice) {
    std::vector<Form> forms = {{FormKind::insideGroup, 0}};
    for (int e = 0; e < slice; ++e) {
      forms.push_back({FormKind::parallel, e});
      forms.push_back({FormKind::master, e});
    }
    for (const Form& form : forms) {
      // Single-device groups reduce nothing; P² never generates them (P² App. B.2).
      if (deriveGroups(h, {slice, form, Collective::allReduce}).front().size() < 2) continue;
      for (Collective c : kCollectives)
        syntax.push_back({slice, form, c});
    }
  }
  using GroupProgram = std::vector<std::pair<Collective, std::vector<std::vector<int>>>>;
  auto groupsOf = [&](const ReductionProgram& p) {
    GroupProgram out;
    for (const Instruction& i : p.instructions)
      out.push_back({i.collective, deriveGroups(h, i)});
    return out;
  };
  std::set<GroupProgram> brute;
  std::vector<ReductionProgram> frontier = {ReductionProgram{}};
  for (int length = 1; length <= kLimit; ++length) {
    std::vector<ReductionProgram> next;
    for (const ReductionProgram& p : frontier)
      for (const Instruction& i : syntax) {
        ReductionProgram q = p;
        q.instructions.push_back(i);
        if (programSize(q) > kLimit) continue;
        if (checkReductionProgram(h, q).valid) brute.insert(groupsOf(q));
        next.push_back(std::move(q));
      }
    frontier = std::move(next);
  }
  std::set<GroupProgram> enumerated;
  for (const ReductionProgram& p : enumeratePrograms(h, {.sizeLimit = kLimit}))
    enumerated.insert(groupsOf(p));
  EXPECT_EQ(enumerated, brute);
  EXPECT_GT(enumerated.size(), 3u);
}

// Every enumerated program, placed on the whole system, implements the reduction under the
// full-system semantics (16 devices, the layout's reduction groups as the goal), and dropping
// its last step breaks it. Random systems print their seed.
void checkPlacedPrograms(const SystemHierarchy& system, const std::vector<int>& axes,
                         const std::vector<int>& reduce, int sizeLimit) {
  for (const PlacementCandidate& c :
       synthesizeReductions(system, axes, reduce, {.sizeLimit = sizeLimit})) {
    SCOPED_TRACE(formatMatrix(c.matrix) + " " + formatSynthesisHierarchy(c.hierarchy));
    const int devices = deviceCount(system);
    const int chunks = synthesisDeviceCount(c.hierarchy);
    const StateContext initial = makeInitialContext(chunks, devices);
    const StateContext goal = makeGoalContext(chunks, devices, c.layout.groups);
    EXPECT_FALSE(c.programs.empty());
    for (const ReductionProgram& p : c.programs) {
      const std::vector<ProgramStep> steps = placeProgram(c.hierarchy, c.layout, p);
      const std::vector<GroupStep> groupSteps = groupStepsOf(steps);
      const CheckResult r = checkProgram(groupSteps, initial, goal);
      EXPECT_TRUE(r.valid) << formatProgram(c.hierarchy, p) << ": " << r.reason;
      if (!groupSteps.empty()) {
        const std::vector<GroupStep> shorter(groupSteps.begin(), groupSteps.end() - 1);
        EXPECT_FALSE(checkProgram(shorter, initial, goal).valid) << formatProgram(c.hierarchy, p);
      }
    }
  }
}

TEST(P2Program, PlacedProgramsAreValidOnTheWholeSystem) {
  checkPlacedPrograms(figure2System(), {4, 4}, {0}, 5);
  checkPlacedPrograms(figure2System(), {4, 4}, {1}, 5);
  checkPlacedPrograms(figure2System(), {2, 2, 4}, {0, 2}, 4);
}

TEST(P2Program, PlacedProgramsAreValidOnRandomSystems) {
  std::mt19937 rng(testing_support::testSeed());
  const std::vector<int> sizes = {1, 2, 3};
  for (int round = 0; round < 20; ++round) {
    SystemHierarchy system;
    int devices = 1;
    for (int j = 0; j < 3; ++j) {
      const int size = sizes[rng() % sizes.size()];
      system.levels.push_back({fmt::format("L{}", j), size});
      devices *= size;
    }
    std::vector<int> axes;
    int rest = devices;
    for (int i = 0; i < 2; ++i) {
      std::vector<int> divisors;
      for (int d = 1; d <= rest; ++d)
        if (rest % d == 0) divisors.push_back(d);
      axes.push_back(divisors[rng() % divisors.size()]);
      rest /= axes.back();
    }
    axes.push_back(rest);
    std::vector<int> reduce = {static_cast<int>(rng() % 3)};
    if (rng() % 2 == 0 && reduce.front() != 2) reduce.push_back(2);
    SCOPED_TRACE(formatHierarchy(system));
    checkPlacedPrograms(system, axes, reduce, 4);
  }
}

}  // namespace
}  // namespace chorus::synth
