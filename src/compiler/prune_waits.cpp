#include "compiler/prune_waits.h"

#include <algorithm>
#include <queue>
#include <span>

#include "compiler/flat_successors.h"
#include "compiler/insert_dependencies.h"
#include "support/error.h"

namespace chorus::compiler {

namespace {

void pruneRank(ir::RankProgram& rank) {
  auto& tbs = rank.threadblocks;
  const int m = static_cast<int>(tbs.size());
  // Dense step ids.
  std::vector<int> base(m + 1, 0);
  for (int t = 0; t < m; ++t)
    base[t + 1] = base[t] + static_cast<int>(tbs[t].steps.size());
  const int total = base[m];
  auto idOf = [&](int t, int s) { return base[t] + s; };
  // Kahn over program order + deps. Successor lists in one flat array (CSR), each in the order
  // the edges are met below.
  auto forEachEdge = [&](auto&& visit) {
    for (int t = 0; t < m; ++t)
      for (int s = 0; s < static_cast<int>(tbs[t].steps.size()); ++s) {
        const int id = idOf(t, s);
        if (s > 0) visit(id - 1, id);
        for (const auto& d : tbs[t].steps[s].deps)
          visit(idOf(d.tb, d.step), id);
      }
  };
  FlatSuccessors successors = flatSuccessors(total, forEachEdge);
  std::vector<int>& indegree = successors.indegree;
  const std::vector<int>& succBegin = successors.begin;
  const std::vector<int>& succs = successors.succs;
  std::queue<int> ready;
  for (int id = 0; id < total; ++id)
    if (indegree[id] == 0) ready.push(id);
  std::vector<int> tbOf(total);
  for (int t = 0; t < m; ++t)
    for (int id = base[t]; id < base[t + 1]; ++id)
      tbOf[id] = t;

  // after(id) = clock known once step id has finished: entry u = highest finished step of tb u.
  // One row of m entries per step, in one flat array.
  std::vector<int> afterRows(static_cast<std::size_t>(total) * m, -1);
  auto after = [&](int id) {
    return std::span<int>(afterRows.data() + static_cast<std::size_t>(id) * m, m);
  };
  auto clockSum = [&](const ir::StepRef& d) {
    int sum = 0;
    for (int v : after(idOf(d.tb, d.step)))
      sum += v;
    return sum;
  };
  std::vector<ir::StepRef> order, kept;
  int visited = 0;
  while (!ready.empty()) {
    const int id = ready.front();
    ready.pop();
    ++visited;
    const int t = tbOf[id];
    const int s = id - base[t];
    const auto known = after(id);
    if (s > 0) std::ranges::copy(after(id - 1), known.begin());
    auto& deps = tbs[t].steps[s].deps;
    if (!deps.empty()) {
      // Latest-first: a dependee whose own clock is richest is most likely to imply the others.
      order.assign(deps.begin(), deps.end());
      std::sort(order.begin(), order.end(), [&](const ir::StepRef& a, const ir::StepRef& b) {
        const int sa = clockSum(a), sb = clockSum(b);
        return sa != sb ? sa > sb : a < b;
      });
      kept.clear();
      for (const auto& d : order) {
        if (known[d.tb] >= d.step) continue;
        kept.push_back(d);
        const auto other = after(idOf(d.tb, d.step));
        for (int u = 0; u < m; ++u)
          known[u] = std::max(known[u], other[u]);
      }
      std::sort(kept.begin(), kept.end());
      deps.assign(kept.begin(), kept.end());
    }
    known[t] = s;
    for (int e = succBegin[id]; e < succBegin[id + 1]; ++e)
      if (--indegree[succs[e]] == 0) ready.push(succs[e]);
  }
  CHORUS_INTERNAL_ASSERT(visited == total, "dependency cycle inside a rank");
}

}  // namespace

ir::Algorithm pruneWaits(ir::Algorithm algorithm, const PassContext&) {
  for (auto& rank : algorithm.ranks)
    pruneRank(rank);
  markDependents(algorithm);
  return algorithm;
}

}  // namespace chorus::compiler
