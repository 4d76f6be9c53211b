// P² parallelism placement (src/synth/p2_placement): the parallelism matrices of P² §3.1
// for Figure 2's system (counted by reasoning and by an independent brute force), the counts
// implied by Appendix A's tables, the device layout of a matrix (Figure 2's n/m markers and
// reduction groups), hierarchies derived from topology presets, and the option errors.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "p2_figures.h"
#include "support/error.h"
#include "synth/p2_placement.h"
#include "test_seed.h"
#include "topology/presets.h"
#include "topology/topology.h"

namespace chorus::synth {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using testing_figures::figure2System;

ParallelismMatrix matrixOf(std::vector<std::vector<int>> rows) {
  ParallelismMatrix m;
  m.axes = static_cast<int>(rows.size());
  m.levels = static_cast<int>(rows.front().size());
  for (const auto& row : rows)
    m.factors.insert(m.factors.end(), row.begin(), row.end());
  return m;
}

std::set<std::string> formatted(const std::vector<ParallelismMatrix>& matrices) {
  std::set<std::string> out;
  for (const ParallelismMatrix& m : matrices)
    out.insert(formatMatrix(m));
  return out;
}

// Independent count: every matrix whose cell (i, j) lies in [1, h_j], checked against
// Equations 1 and 2 directly (no divisor reasoning, no search order).
std::set<std::string> bruteForceMatrices(const SystemHierarchy& h, const std::vector<int>& axes) {
  const int rows = static_cast<int>(axes.size());
  const int cols = static_cast<int>(h.levels.size());
  std::vector<int> cells(static_cast<std::size_t>(rows * cols), 1);
  std::set<std::string> found;
  while (true) {
    bool ok = true;
    for (int j = 0; j < cols && ok; ++j) {
      int product = 1;
      for (int i = 0; i < rows; ++i)
        product *= cells[static_cast<std::size_t>(i * cols + j)];
      ok = product == h.levels[static_cast<std::size_t>(j)].size;
    }
    for (int i = 0; i < rows && ok; ++i) {
      int product = 1;
      for (int j = 0; j < cols; ++j)
        product *= cells[static_cast<std::size_t>(i * cols + j)];
      ok = product == axes[static_cast<std::size_t>(i)];
    }
    if (ok) found.insert(formatMatrix({rows, cols, cells}));
    int pos = 0;  // odometer
    while (pos < rows * cols) {
      const int limit = h.levels[static_cast<std::size_t>(pos % cols)].size;
      if (++cells[static_cast<std::size_t>(pos)] <= limit) break;
      cells[static_cast<std::size_t>(pos)] = 1;
      ++pos;
    }
    if (pos == rows * cols) break;
  }
  return found;
}

// Figure 2a with data parallelism 4 and 4 parameter shards. By Equation 1 the rack column is
// [1 1]; the server and CPU columns are [a 2/a] and [b 2/b] with a, b ∈ {1, 2}; the GPU column
// is [c 4/c] with c ∈ {1, 2, 4}. Equation 2 for the data row needs a·b·c = 4 (the shard row
// then has 16/4 = 4 too): (a,b,c) ∈ {(1,1,4), (1,2,2), (2,1,2), (2,2,1)}, so 4 matrices,
// three of which are Figure 2b, 2c and 2d.
TEST(P2Placement, Figure2SystemWithData4Shards4HasFourMatrices) {
  const std::vector<int> axes = {4, 4};
  const std::vector<ParallelismMatrix> matrices =
      enumerateParallelismMatrices(figure2System(), axes);
  ASSERT_EQ(matrices.size(), 4u);
  const std::set<std::string> names = formatted(matrices);
  EXPECT_TRUE(names.count("[[1 2 2 1] [1 1 1 4]]")) << "Figure 2b";
  EXPECT_TRUE(names.count("[[1 2 1 2] [1 1 2 2]]")) << "Figure 2c";
  EXPECT_TRUE(names.count("[[1 1 2 2] [1 2 1 2]]")) << "Figure 2d";
  EXPECT_TRUE(names.count("[[1 1 1 4] [1 2 2 1]]"));
  EXPECT_EQ(names, bruteForceMatrices(figure2System(), axes));
  // Sorted, each once.
  for (std::size_t i = 1; i < matrices.size(); ++i)
    EXPECT_LT(matrices[i - 1].factors, matrices[i].factors);
}

TEST(P2Placement, EveryMatrixSatisfiesBothProductConstraints) {
  const SystemHierarchy h = figure2System();
  for (const std::vector<int>& axes :
       std::vector<std::vector<int>>{{16}, {4, 4}, {2, 8}, {2, 2, 4}}) {
    for (const ParallelismMatrix& m : enumerateParallelismMatrices(h, axes)) {
      for (int j = 0; j < m.levels; ++j) {
        int product = 1;
        for (int i = 0; i < m.axes; ++i)
          product *= m.factor(i, j);
        EXPECT_EQ(product, h.levels[static_cast<std::size_t>(j)].size) << formatMatrix(m);
      }
      for (int i = 0; i < m.axes; ++i) {
        int product = 1;
        for (int j = 0; j < m.levels; ++j)
          product *= m.factor(i, j);
        EXPECT_EQ(product, axes[static_cast<std::size_t>(i)]) << formatMatrix(m);
      }
    }
  }
}

TEST(P2Placement, MatchesBruteForceOnRandomSystems) {
  std::mt19937 rng(testing_support::testSeed());
  const std::vector<int> sizes = {1, 2, 3, 4, 6};
  for (int round = 0; round < 40; ++round) {
    SystemHierarchy h;
    const int levels = 1 + static_cast<int>(rng() % 3);
    int devices = 1;
    for (int j = 0; j < levels; ++j) {
      const int size = sizes[rng() % sizes.size()];
      h.levels.push_back({fmt::format("L{}", j), size});
      devices *= size;
    }
    // Random axes whose product is the device count: peel off random divisors.
    std::vector<int> axes;
    int rest = devices;
    const int axisCount = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i + 1 < axisCount; ++i) {
      std::vector<int> divisors;
      for (int d = 1; d <= rest; ++d)
        if (rest % d == 0) divisors.push_back(d);
      const int d = divisors[rng() % divisors.size()];
      axes.push_back(d);
      rest /= d;
    }
    axes.push_back(rest);
    SCOPED_TRACE(formatHierarchy(h));
    EXPECT_EQ(formatted(enumerateParallelismMatrices(h, axes)), bruteForceMatrices(h, axes));
  }
}

// Appendix A lists, per system, every matrix of an axes setting (its program totals are the
// matrix count times 47 or 3; see p2_program_test).
TEST(P2Placement, AppendixACountsOnFourNodesOf16A100) {
  const SystemHierarchy h = {{{"node", 4}, {"GPU", 16}}};
  EXPECT_THAT(formatted(enumerateParallelismMatrices(h, std::vector<int>{4, 16})),
              ElementsAre("[[1 4] [4 4]]", "[[2 2] [2 8]]", "[[4 1] [1 16]]"));
  EXPECT_THAT(formatted(enumerateParallelismMatrices(h, std::vector<int>{16, 2, 2})),
              ElementsAre("[[1 16] [2 1] [2 1]]", "[[2 8] [1 2] [2 1]]", "[[2 8] [2 1] [1 2]]",
                          "[[4 4] [1 2] [1 2]]"));
  EXPECT_EQ(enumerateParallelismMatrices(h, std::vector<int>{8, 2, 4}).size(), 5u);
  EXPECT_EQ(enumerateParallelismMatrices(h, std::vector<int>{64}).size(), 1u);
  const SystemHierarchy two = {{{"node", 2}, {"GPU", 16}}};
  EXPECT_THAT(formatted(enumerateParallelismMatrices(two, std::vector<int>{2, 16})),
              ElementsAre("[[1 2] [2 8]]", "[[2 1] [1 16]]"));
}

// Figure 2b: device marker n/m = data batch n, parameter shard m; each CPU is one replica.
TEST(P2Placement, Figure2bLayoutGivesEachCpuOneReplica) {
  const ParallelismMatrix m = matrixOf({{1, 2, 2, 1}, {1, 1, 1, 4}});
  for (int device = 0; device < 16; ++device) {
    const int server = device / 8, cpu = device / 4 % 2, gpu = device % 4;
    EXPECT_THAT(axisCoordinatesOf(m, device), ElementsAre(server * 2 + cpu, gpu)) << device;
  }
}

TEST(P2Placement, DeviceAtInvertsAxisCoordinates) {
  const std::vector<int> axes = {2, 2, 4};
  for (const ParallelismMatrix& m : enumerateParallelismMatrices(figure2System(), axes)) {
    std::set<std::vector<int>> seen;
    for (int device = 0; device < 16; ++device) {
      const std::vector<int> c = axisCoordinatesOf(m, device);
      EXPECT_EQ(deviceAt(m, c), device) << formatMatrix(m);
      seen.insert(c);
    }
    EXPECT_EQ(seen.size(), 16u) << formatMatrix(m);  // a bijection
  }
}

// Figure 2d, reducing over shards (axis 1): A0, A1, C0, C1 hold data batch 0 (Figure 4's
// discussion reduces A0 with A1 and A0 with C0). A0..D3 are devices 0..15.
TEST(P2Placement, Figure2dReductionGroupsOverShards) {
  const ParallelismMatrix m = matrixOf({{1, 1, 2, 2}, {1, 2, 1, 2}});
  const std::vector<int> reduce = {1};
  const ReductionLayout layout = layoutReduction(m, reduce);
  EXPECT_THAT(layout.levelFactors, ElementsAre(1, 2, 1, 2));
  EXPECT_THAT(layout.groups, ElementsAre(ElementsAre(0, 1, 8, 9), ElementsAre(2, 3, 10, 11),
                                         ElementsAre(4, 5, 12, 13), ElementsAre(6, 7, 14, 15)));
  for (const std::vector<int>& group : layout.groups) {
    const int data = axisCoordinatesOf(m, group.front())[0];
    for (std::size_t index = 0; index < group.size(); ++index) {
      EXPECT_EQ(axisCoordinatesOf(m, group[index])[0], data);
      EXPECT_EQ(axisCoordinatesOf(m, group[index])[1], static_cast<int>(index));
    }
  }
  // Over data (axis 0) instead: groups of the same shard.
  const std::vector<int> reduceData = {0};
  const ReductionLayout byData = layoutReduction(m, reduceData);
  EXPECT_THAT(byData.levelFactors, ElementsAre(1, 1, 2, 2));
  EXPECT_THAT(byData.groups.front(), ElementsAre(0, 2, 4, 6));
}

// Table 1's two reduction axes collapse per level: [[1 2 3] [4 5 6] [7 8 9]] over axes 0 and 2
// gives [7 16 27]; reducing over every axis gives one group of all devices.
TEST(P2Placement, ReductionOverSeveralAxesCollapsesFactorsPerLevel) {
  const ParallelismMatrix table1 = matrixOf({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}});
  const std::vector<int> reduce = {2, 0};  // order does not matter
  const ReductionLayout layout = layoutReduction(table1, reduce);
  EXPECT_THAT(layout.reductionAxes, ElementsAre(0, 2));
  EXPECT_THAT(layout.levelFactors, ElementsAre(7, 16, 27));
  EXPECT_EQ(layout.groups.size(), 4u * 5u * 6u);
  const ParallelismMatrix m = matrixOf({{1, 2, 1, 2}, {1, 1, 2, 2}});
  const std::vector<int> both = {0, 1};
  const ReductionLayout all = layoutReduction(m, both);
  ASSERT_EQ(all.groups.size(), 1u);
  std::vector<int> sorted = all.groups.front();
  std::sort(sorted.begin(), sorted.end());
  for (int d = 0; d < 16; ++d)
    EXPECT_EQ(sorted[static_cast<std::size_t>(d)], d);
}

TEST(P2Placement, HierarchyOfTopologyPresets) {
  EXPECT_EQ(formatHierarchy(systemHierarchyOf(topology::preset("dgx1"), 2)),
            "[(node, 2), (socket, 2), (pcie-switch, 2), (device, 2)]");
  EXPECT_EQ(formatHierarchy(systemHierarchyOf(topology::preset("hgx-a100-16"), 4)),
            "[(node, 4), (baseboard, 2), (device, 8)]");
  topology::Topology flat = topology::preset("hgx-a100-16");
  flat.node.levels.clear();
  EXPECT_EQ(formatHierarchy(systemHierarchyOf(flat, 2)), "[(node, 2), (device, 16)]");
  EXPECT_EQ(deviceCount(systemHierarchyOf(flat, 2)), 32);
}

TEST(P2Placement, HierarchyOfTopologyRejectsNonUniformLevels) {
  topology::Topology t = topology::preset("dgx1");
  t.node.levels = {{"odd", {{0, 2, 4, 6}, {1, 3, 5, 7}}}};
  try {
    systemHierarchyOf(t, 1);
    FAIL() << "expected OptionError";
  } catch (const OptionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("level 'odd'"));
    EXPECT_THAT(e.what(), HasSubstr("consecutive"));
  }
  t.node.levels = {{"uneven", {{0, 1, 2}, {3, 4, 5, 6, 7}}}};
  EXPECT_THROW(systemHierarchyOf(t, 1), OptionError);
  EXPECT_THROW(systemHierarchyOf(topology::preset("dgx1"), 0), OptionError);
}

TEST(P2Placement, OptionErrorsNameTheProblem) {
  try {
    enumerateParallelismMatrices(figure2System(), std::vector<int>{2, 4});
    FAIL() << "expected OptionError";
  } catch (const OptionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("use 8 devices"));
    EXPECT_THAT(e.what(), HasSubstr("has 16"));
  }
  EXPECT_THROW(enumerateParallelismMatrices(figure2System(), std::vector<int>{}), OptionError);
  EXPECT_THROW(enumerateParallelismMatrices(figure2System(), std::vector<int>{0, 16}), OptionError);
  const ParallelismMatrix m = matrixOf({{1, 1, 2, 2}, {1, 2, 1, 2}});
  try {
    layoutReduction(m, std::vector<int>{2});
    FAIL() << "expected OptionError";
  } catch (const OptionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("reduction axis 2 does not exist"));
  }
  EXPECT_THROW(layoutReduction(m, std::vector<int>{1, 1}), OptionError);
  EXPECT_THROW(layoutReduction(m, std::vector<int>{}), OptionError);
  EXPECT_THROW(deviceAt(m, std::vector<int>{4, 0}), OptionError);
  EXPECT_THROW(deviceAt(m, std::vector<int>{0}), OptionError);
}

}  // namespace
}  // namespace chorus::synth
