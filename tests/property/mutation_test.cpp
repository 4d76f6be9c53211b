// Mutation tests: deleting, reordering or retargeting any single step of a compiled program is
// caught by the verifier (postcondition, deadlock, race or structure finding).
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>

#include "algorithms/registry.h"
#include "verify/verify.h"

namespace chorus {
namespace {

struct Case {
  std::string algorithm;
  int ranks = 0;
  int nodes = 0;
  int gpus = 0;
  std::map<std::string, int> params = {};
};

ir::Algorithm compileCase(const Case& c) {
  algorithms::BuildRequest request;
  request.algorithm = c.algorithm;
  request.ranks = c.ranks;
  request.nodes = c.nodes;
  request.gpusPerNode = c.gpus;
  request.params = c.params;
  return algorithms::compileAlgorithm(request).algorithm;
}

// Removes step (tb, step) of a rank and renumbers the dependencies that point past it.
ir::Algorithm deleteStep(ir::Algorithm a, int rank, int tb, int step) {
  auto& tbs = a.ranks[rank].threadblocks;
  tbs[tb].steps.erase(tbs[tb].steps.begin() + step);
  for (auto& t : tbs)
    for (auto& s : t.steps) {
      std::vector<ir::StepRef> deps;
      for (auto d : s.deps) {
        if (d.tb == tb && d.step == step) continue;
        if (d.tb == tb && d.step > step) --d.step;
        deps.push_back(d);
      }
      s.deps = deps;
    }
  return a;
}

// Swaps steps k and k+1 of a threadblock, keeping each step's own dependencies with it.
ir::Algorithm swapSteps(ir::Algorithm a, int rank, int tb, int k) {
  auto& tbs = a.ranks[rank].threadblocks;
  std::swap(tbs[tb].steps[k], tbs[tb].steps[k + 1]);
  for (auto& t : tbs)
    for (auto& s : t.steps)
      for (auto& d : s.deps)
        if (d.tb == tb && (d.step == k || d.step == k + 1)) d.step = d.step == k ? k + 1 : k;
  return a;
}

// Whether two adjacent steps of one threadblock must stay in order: they use one connection
// direction, or touch a common chunk and one of them writes it.
bool ordered(const ir::Step& a, const ir::Step& b) {
  if ((ir::opSends(a.op) && ir::opSends(b.op)) || (ir::opReceives(a.op) && ir::opReceives(b.op)))
    return true;
  auto overlaps = [](ir::BufferKind ba, int ia, int ca, ir::BufferKind bb, int ib, int cb) {
    return ba == bb && ia < ib + cb && ib < ia + ca;
  };
  auto writes = [](const ir::Step& s) { return ir::opWritesDst(s.op); };
  auto reads = [](const ir::Step& s) { return ir::opReadsSrc(s.op); };
  const bool aw = writes(a), bw = writes(b);
  if (aw && bw && overlaps(a.dstBuffer, a.dstIndex, a.count, b.dstBuffer, b.dstIndex, b.count))
    return true;
  if (aw && reads(b) &&
      overlaps(a.dstBuffer, a.dstIndex, a.count, b.srcBuffer, b.srcIndex, b.count))
    return true;
  if (bw && reads(a) &&
      overlaps(b.dstBuffer, b.dstIndex, b.count, a.srcBuffer, a.srcIndex, a.count))
    return true;
  return false;
}

using Visit = std::function<void(int rank, int tb, int step)>;
void forEachStep(const ir::Algorithm& a, const Visit& visit) {
  for (const auto& rank : a.ranks)
    for (const auto& tb : rank.threadblocks)
      for (int s = 0; s < static_cast<int>(tb.steps.size()); ++s)
        visit(rank.rank, tb.id, s);
}

std::string where(const Case& c, const char* what, int rank, int tb, int step) {
  return c.algorithm + ": " + what + " rank " + std::to_string(rank) + " tb " + std::to_string(tb) +
         " step " + std::to_string(step);
}

class Mutation : public ::testing::TestWithParam<Case> {};

TEST_P(Mutation, EveryDeletionIsCaught) {
  const auto a = compileCase(GetParam());
  ASSERT_TRUE(verify::verifyAlgorithm(a).ok());
  int tried = 0;
  forEachStep(a, [&](int r, int tb, int s) {
    ++tried;
    EXPECT_FALSE(verify::verifyAlgorithm(deleteStep(a, r, tb, s)).ok())
        << where(GetParam(), "deleting", r, tb, s);
  });
  EXPECT_GT(tried, 0);
}

TEST_P(Mutation, EveryDependentReorderIsCaught) {
  const auto a = compileCase(GetParam());
  forEachStep(a, [&](int r, int tb, int s) {
    const auto& steps = a.ranks[r].threadblocks[tb].steps;
    if (s + 1 >= static_cast<int>(steps.size()) || !ordered(steps[s], steps[s + 1])) return;
    EXPECT_FALSE(verify::verifyAlgorithm(swapSteps(a, r, tb, s)).ok())
        << where(GetParam(), "swapping with the next", r, tb, s);
  });
}

TEST_P(Mutation, EveryRetargetIsCaught) {
  const auto a = compileCase(GetParam());
  forEachStep(a, [&](int r, int tb, int s) {
    const ir::Step& step = a.ranks[r].threadblocks[tb].steps[s];
    // Retarget the local location the step writes (or, for sends, reads) by one chunk.
    ir::Algorithm m = a;
    ir::Step& target = m.ranks[r].threadblocks[tb].steps[s];
    if (ir::opWritesDst(step.op))
      target.dstIndex = step.dstIndex > 0 ? step.dstIndex - 1 : step.dstIndex + 1;
    else if (ir::opReadsSrc(step.op))
      target.srcIndex = step.srcIndex > 0 ? step.srcIndex - 1 : step.srcIndex + 1;
    else
      return;
    EXPECT_FALSE(verify::verifyAlgorithm(m).ok()) << where(GetParam(), "retargeting", r, tb, s);
  });
}

INSTANTIATE_TEST_SUITE_P(
    Compiled, Mutation,
    ::testing::Values(Case{"allreduce.ring", 4}, Case{"allreduce.allpairs", 4},
                      Case{"allgather.ring", 4}, Case{"reducescatter.ring", 4},
                      Case{"alltoall.direct", 3}, Case{"allreduce.hierarchical", 0, 2, 3},
                      Case{"alltoall.two-step", 0, 2, 2}, Case{"alltonext", 0, 2, 2},
                      Case{"alltonext", 0, 2, 2, {{"direction", 1}}}),
    [](const ::testing::TestParamInfo<Case>& info) {
      std::string name = info.param.algorithm + "_" + std::to_string(info.index);
      for (auto& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

}  // namespace
}  // namespace chorus
