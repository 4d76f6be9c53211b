// The event-driven simulator on the one-port uniform machine (uniformTopology(..., sendPorts =
// 1): a rank sends one message at a time, α included) against the one-port closed forms and
// the Hockney rows of docs/sources.md "α-β-γ closed forms" as printed. Never asserts a measured
// time.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>

#include "algorithms/registry.h"
#include "alpha_beta_constants.h"
#include "ir/algorithm.h"
#include "runtime/compile_for_test.h"
#include "sim/closed_form.h"
#include "sim/simulator.h"
#include "topology/fabric.h"
#include "topology/presets.h"

namespace chorus {
namespace {

using testing_support::kBandwidth;
using testing_support::kLargeAlpha;
using testing_support::kMiB;
using testing_support::kReduceRate;
using testing_support::kSmallAlpha;
constexpr int kOnePort = 1;

// Simulated seconds of library algorithm `name` on p one-port ranks, without tiling.
double simulateOnePort(const std::string& name, int p, std::uint64_t bytes, double alpha) {
  topology::Fabric fabric(topology::uniformTopology(p, alpha, kBandwidth, kReduceRate, kOnePort));
  return sim::simulate(testing_support::compileForTiming({.algorithm = name, .ranks = p}), fabric,
                       sim::SimOptions{.bytes = bytes, .tiling = false})
      .seconds;
}

sim::AlphaBetaGamma onePortCost(double alpha) {
  return sim::AlphaBetaGamma{
      .alpha = alpha, .beta = 1 / kBandwidth, .gamma = 1 / kReduceRate, .onePort = true};
}

// ---- every one-port form ----------------------------------------------------------------------

class OnePortAgreement : public ::testing::TestWithParam<std::string_view> {};

// For every p where the form holds, sizes whose chunks do and do not divide evenly, and α both
// far below and above a chunk's wire time: |simulated − closed| ≤ 1%.
TEST_P(OnePortAgreement, SimulatorWithinOnePercent) {
  const std::string name(GetParam());
  int checked = 0;
  for (int p : {2, 3, 4, 5, 6, 8, 12, 16}) {
    if (!sim::closedFormSeconds(name, p, kMiB, onePortCost(1e-6))) {
      EXPECT_FALSE(std::has_single_bit(static_cast<unsigned>(p)))
          << name << " has no one-port form at p = " << p;
      continue;
    }
    const ir::Algorithm algorithm =
        testing_support::compileForTiming({.algorithm = name, .ranks = p});
    for (double alpha : {kSmallAlpha, kLargeAlpha}) {
      topology::Fabric fabric(
          topology::uniformTopology(p, alpha, kBandwidth, kReduceRate, kOnePort));
      for (std::uint64_t bytes : {kMiB, std::uint64_t{3'000'004}, 64 * kMiB}) {
        const double closed = *sim::closedFormSeconds(name, p, bytes, onePortCost(alpha));
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

INSTANTIATE_TEST_SUITE_P(Library, OnePortAgreement, ::testing::ValuesIn(sim::closedFormNames()),
                         [](const ::testing::TestParamInfo<std::string_view>& info) {
                           std::string id(info.param);
                           for (char& c : id)
                             if (c == '.' || c == '-') c = '_';
                           return id;
                         });

// The one-port forms by hand at p = 4, n = 1 MiB (blocks of c = n/4), where they differ from
// the multi-port ones.
TEST(OnePortForm, HandComputedAtFourRanks) {
  const double a = 2e-6, b = 1e-10, g = 5e-11, n = kMiB, c = n / 4;
  const sim::AlphaBetaGamma cost{.alpha = a, .beta = b, .gamma = g, .onePort = true};
  auto form = [&](const char* name) { return *sim::closedFormSeconds(name, 4, kMiB, cost); };
  EXPECT_DOUBLE_EQ(form("alltoall.pairwise"), 3 * (a + c * b));
  EXPECT_DOUBLE_EQ(form("alltoall.direct"), 3 * (a + c * b));
  EXPECT_DOUBLE_EQ(form("alltoall.scatter-destination"), 3 * (a + c * b));
  EXPECT_DOUBLE_EQ(form("allgather.direct"), 3 * (a + c * b));
  EXPECT_DOUBLE_EQ(form("alltoall.bruck"), 2 * (a + 2 * c * b));
  EXPECT_DOUBLE_EQ(form("allgather.bruck"), 2 * a + 3 * c * b);
  EXPECT_DOUBLE_EQ(form("broadcast.binomial"), 2 * (a + n * b));
  EXPECT_DOUBLE_EQ(form("broadcast.chain"), 10 * (a + n / 8 * b));
  EXPECT_DOUBLE_EQ(form("reducescatter.pairwise"), 3 * (a + c * b) + 3 * c * g);
  EXPECT_DOUBLE_EQ(form("allreduce.oneshot"), 3 * (a + n * b + n * g));
  EXPECT_DOUBLE_EQ(form("allreduce.binomial"), 4 * (a + n * b) + 2 * n * g);
  // One message per rank and step: the same as on the multi-port fabric.
  for (const char* name : {"allreduce.ring", "allreduce.rabenseifner", "reduce.binomial",
                           "reducescatter.recursive-halving", "allgather.recursive-doubling"}) {
    const sim::AlphaBetaGamma multiPort{.alpha = a, .beta = b, .gamma = g};
    EXPECT_DOUBLE_EQ(form(name), *sim::closedFormSeconds(name, 4, kMiB, multiPort)) << name;
  }
}

// ---- docs/sources.md "α-β-γ closed forms" rows as printed --------------------------------------
// p = 2^k and n divisible by 4p, so every block is exactly n/p and the printed rows apply
// without rounding. Each check is the row's formula, written out, against the simulator.

constexpr std::uint64_t kRowBytes = 16 * kMiB;

struct Row {
  int p;
  double alpha;
  double n = static_cast<double>(kRowBytes);
  double b = 1 / kBandwidth;
  double g = 1 / kReduceRate;
  double lg() const { return std::log2(p); }
  double share() const { return (p - 1.0) / p; }  // (p−1)/p
};

// Every (p, α) a row is checked at.
template <typename Check>
void forEachRow(Check check) {
  for (int p : {2, 4, 8, 16})
    for (double alpha : {kSmallAlpha, kLargeAlpha})
      check(Row{.p = p, .alpha = alpha});
}

void expectRow(const char* name, const Row& r, double printed) {
  const double simulated = simulateOnePort(name, r.p, kRowBytes, r.alpha);
  EXPECT_NEAR(simulated, printed, 0.01 * printed) << name << " p=" << r.p << " alpha=" << r.alpha;
}

// "Allreduce ring": 2(p−1)α + 2((p−1)/p)nβ + ((p−1)/p)nγ.
TEST(SimSynthRow, AllreduceRing) {
  forEachRow([](const Row& r) {
    expectRow("allreduce.ring", r,
              2 * (r.p - 1) * r.alpha + 2 * r.share() * r.n * r.b + r.share() * r.n * r.g);
  });
}

// "Allreduce recursive doubling": lg p·(α + nβ + nγ).
TEST(SimSynthRow, AllreduceRecursiveDoubling) {
  forEachRow([](const Row& r) {
    expectRow("allreduce.recursive-doubling", r, r.lg() * (r.alpha + r.n * r.b + r.n * r.g));
  });
}

// "Allreduce Rabenseifner": 2 lg p·α + 2((p−1)/p)nβ + ((p−1)/p)nγ.
TEST(SimSynthRow, AllreduceRabenseifner) {
  forEachRow([](const Row& r) {
    expectRow("allreduce.rabenseifner", r,
              2 * r.lg() * r.alpha + 2 * r.share() * r.n * r.b + r.share() * r.n * r.g);
  });
}

// "Bcast binomial tree": lg p·α + lg p·nβ.
TEST(SimSynthRow, BroadcastBinomial) {
  forEachRow([](const Row& r) {
    expectRow("broadcast.binomial", r, r.lg() * r.alpha + r.lg() * r.n * r.b);
  });
}

// "Reduce binomial": lg p·(α + nβ + nγ).
TEST(SimSynthRow, ReduceBinomial) {
  forEachRow([](const Row& r) {
    expectRow("reduce.binomial", r, r.lg() * (r.alpha + r.n * r.b + r.n * r.g));
  });
}

// "Alltoall Bruck": lg p·α + (n/2)·lg p·β.
TEST(SimSynthRow, AlltoallBruck) {
  forEachRow([](const Row& r) {
    expectRow("alltoall.bruck", r, r.lg() * r.alpha + r.n / 2 * r.lg() * r.b);
  });
}

// "Alltoall pairwise exchange" prints (p−1)α + nβ, but its nβ counts the rank's own block,
// which never crosses the wire: the exact cost is (p−1)α + ((p−1)/p)nβ, checked here, and the
// printed row is exactly one block's β (nβ/p) above the simulation.
TEST(SimSynthRow, AlltoallPairwise) {
  forEachRow([](const Row& r) {
    const double exact = (r.p - 1) * r.alpha + r.share() * r.n * r.b;
    expectRow("alltoall.pairwise", r, exact);
    const double printed = (r.p - 1) * r.alpha + r.n * r.b;
    EXPECT_NEAR(printed - simulateOnePort("alltoall.pairwise", r.p, kRowBytes, r.alpha),
                r.n / r.p * r.b, 0.01 * printed)
        << "p=" << r.p << " alpha=" << r.alpha;
  });
}

// The other rows chorus has an algorithm for, as printed.
TEST(SimSynthRow, AllgatherAndReduceScatter) {
  forEachRow([](const Row& r) {
    // "Allgather ring": (p−1)α + ((p−1)/p)nβ.
    expectRow("allgather.ring", r, (r.p - 1) * r.alpha + r.share() * r.n * r.b);
    // "Allgather recursive doubling": lg p·α + ((p−1)/p)nβ.
    expectRow("allgather.recursive-doubling", r, r.lg() * r.alpha + r.share() * r.n * r.b);
    // "Allgather Bruck": ⌈lg p⌉α + ((p−1)/p)nβ.
    expectRow("allgather.bruck", r, r.lg() * r.alpha + r.share() * r.n * r.b);
    // "Reduce-scatter recursive halving": lg p·α + ((p−1)/p)n(β + γ).
    expectRow("reducescatter.recursive-halving", r,
              r.lg() * r.alpha + r.share() * r.n * (r.b + r.g));
    // "Reduce-scatter recursive doubling (non-commutative)": lg p·α + n(lg p − (p−1)/p)(β+γ),
    // an upper bound: a round's two reduction pieces may run on two threadblocks at once
    // (closed_form.cpp), at most one block's γ per round below the row.
    const double recursiveDoubling = r.lg() * r.alpha + (r.lg() - r.share()) * r.n * (r.b + r.g);
    const double simulated =
        simulateOnePort("reducescatter.recursive-doubling", r.p, kRowBytes, r.alpha);
    EXPECT_LE(simulated, recursiveDoubling * (1 + 1e-9)) << "p=" << r.p;
    EXPECT_GE(simulated, recursiveDoubling - r.lg() * r.n / r.p * r.g) << "p=" << r.p;
    // "Reduce-scatter pairwise exchange": (p−1)α + ((p−1)/p)n(β + γ).
    expectRow("reducescatter.pairwise", r, (r.p - 1) * r.alpha + r.share() * r.n * (r.b + r.g));
    // "Reduce: reduce-scatter (rec. halving) + binomial gather": 2 lg p·α + 2((p−1)/p)nβ +
    // ((p−1)/p)nγ.
    expectRow("reduce.rabenseifner", r,
              2 * r.lg() * r.alpha + 2 * r.share() * r.n * r.b + r.share() * r.n * r.g);
  });
}

// Ports matter: on the multi-port fabric pairwise alltoall pays one α and one block, on the
// one-port machine p−1 of each.
TEST(OnePort, SerializesAPairwiseAlltoall) {
  const int p = 8;
  const double alpha = kLargeAlpha;
  topology::Fabric multiPort(topology::uniformTopology(p, alpha, kBandwidth, kReduceRate));
  const double many =
      sim::simulate(
          testing_support::compileForTiming({.algorithm = "alltoall.pairwise", .ranks = p}),
          multiPort, sim::SimOptions{.bytes = kRowBytes, .tiling = false})
          .seconds;
  const double one = simulateOnePort("alltoall.pairwise", p, kRowBytes, alpha);
  EXPECT_NEAR(one / many, p - 1.0, 0.01 * (p - 1));
}

}  // namespace
}  // namespace chorus
