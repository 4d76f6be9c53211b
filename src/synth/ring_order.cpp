#include "synth/ring_order.h"
#include "support/index.h"

#include <algorithm>
#include <functional>

namespace chorus::synth {
namespace {

// Step 2 for one threshold: a Hamiltonian cycle through `local` (node-local device ids, the
// first fixed) over pairs of weight >= w, or empty.
std::vector<int> findCycle(const LinkMatrix& links, const std::vector<int>& local, double w) {
  const std::size_t n = local.size();
  for (int a : local) {
    int degree = 0;
    for (int b : local)
      degree += a != b && links.at(a, b) >= w ? 1 : 0;
    if (degree < 2) return {};
  }
  std::vector<int> path{local[0]};
  std::vector<bool> used(n, false);
  used[0] = true;
  int budget = kRingSearchBudget;
  const std::function<bool()> extend = [&]() -> bool {
    if (path.size() == n) return links.at(path.back(), path.front()) >= w;
    for (std::size_t i = 1; i < n; ++i) {
      if (used[i] || links.at(path.back(), local[i]) < w) continue;
      if (--budget < 0) return false;
      used[i] = true;
      path.push_back(local[i]);
      if (extend()) return true;
      path.pop_back();
      used[i] = false;
    }
    return false;
  };
  return extend() ? path : std::vector<int>{};
}

std::vector<int> orderNode(const LinkMatrix& links, const std::vector<int>& local) {
  if (local.size() <= 2) return local;
  std::vector<double> weights;
  for (int a : local)
    for (int b : local)
      if (a != b) weights.push_back(links.at(a, b));
  std::sort(weights.begin(), weights.end(), std::greater<>());
  weights.erase(std::unique(weights.begin(), weights.end()), weights.end());
  for (double w : weights) {
    std::vector<int> cycle = findCycle(links, local, w);
    if (!cycle.empty()) return cycle;
  }
  return local;  // only pairs of weight 0 (no link at all): keep the given order
}

}  // namespace

std::vector<int> orderRing(const LinkMatrix& nodeLinks, std::span<const int> members) {
  std::vector<int> given(members.begin(), members.end());
  const int perNode = nodeLinks.size;
  if (perNode == 0 || given.size() <= 2) return given;
  std::vector<int> nodes;
  std::vector<std::vector<int>> local;
  for (int m : given) {
    const auto it = std::find(nodes.begin(), nodes.end(), m / perNode);
    if (it == nodes.end()) {
      nodes.push_back(m / perNode);
      local.push_back({m % perNode});
    } else {
      local[ix(static_cast<int>(it - nodes.begin()))].push_back(m % perNode);
    }
  }
  std::vector<int> ring;
  for (std::size_t k = 0; k < nodes.size(); ++k)
    for (int d : orderNode(nodeLinks, local[k]))
      ring.push_back(nodes[k] * perNode + d);
  return ring;
}

}  // namespace chorus::synth
