#include "compiler/prune_waits.h"

#include <algorithm>
#include <queue>

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
  // Kahn over program order + deps.
  std::vector<int> indegree(total, 0);
  std::vector<std::vector<int>> succs(total);
  for (int t = 0; t < m; ++t)
    for (int s = 0; s < static_cast<int>(tbs[t].steps.size()); ++s) {
      const int id = idOf(t, s);
      if (s > 0) {
        succs[id - 1].push_back(id);
        ++indegree[id];
      }
      for (const auto& d : tbs[t].steps[s].deps) {
        succs[idOf(d.tb, d.step)].push_back(id);
        ++indegree[id];
      }
    }
  std::queue<int> ready;
  for (int id = 0; id < total; ++id)
    if (indegree[id] == 0) ready.push(id);
  std::vector<int> tbOf(total);
  for (int t = 0; t < m; ++t)
    for (int id = base[t]; id < base[t + 1]; ++id)
      tbOf[id] = t;

  // after[id] = clock known once step id has finished: entry u = highest finished step of tb u.
  std::vector<std::vector<int>> after(total);
  int visited = 0;
  while (!ready.empty()) {
    const int id = ready.front();
    ready.pop();
    ++visited;
    const int t = tbOf[id];
    const int s = id - base[t];
    std::vector<int> known = s > 0 ? after[id - 1] : std::vector<int>(m, -1);
    auto& deps = tbs[t].steps[s].deps;
    // Latest-first: a dependee whose own clock is richest is most likely to imply the others.
    std::vector<ir::StepRef> order = deps;
    std::sort(order.begin(), order.end(), [&](const ir::StepRef& a, const ir::StepRef& b) {
      int sa = 0, sb = 0;
      for (int v : after[idOf(a.tb, a.step)])
        sa += v;
      for (int v : after[idOf(b.tb, b.step)])
        sb += v;
      return sa != sb ? sa > sb : a < b;
    });
    std::vector<ir::StepRef> kept;
    for (const auto& d : order) {
      if (known[d.tb] >= d.step) continue;
      kept.push_back(d);
      const auto& other = after[idOf(d.tb, d.step)];
      for (int u = 0; u < m; ++u)
        known[u] = std::max(known[u], other[u]);
    }
    std::sort(kept.begin(), kept.end());
    deps = std::move(kept);
    known[t] = s;
    after[id] = std::move(known);
    for (int next : succs[id])
      if (--indegree[next] == 0) ready.push(next);
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
