// Shared inputs of the tree synthesis tests: MXNet's p3.16xlarge / DGX-1 matrix
// (docs/sources.md "MXNet tree backend") and random symmetric link matrices in the style of MXNet's
// gpu_topology_test.cc GenerateMatrix, regenerated until a spanning tree can exist.
#pragma once

#include <random>
#include <vector>

#include "synth/link_matrix.h"
#include "synth/trees.h"

namespace chorus::testing_support {

// 3 = two NVLinks, 2 = one NVLink, 1 = PCIe (MXNet gpu_topology.h).
inline synth::LinkMatrix p3Matrix() {
  return synth::linkMatrixFromRows({{0, 2, 2, 3, 3, 1, 1, 1},
                                    {2, 0, 3, 2, 1, 3, 1, 1},
                                    {2, 3, 0, 3, 1, 1, 2, 1},
                                    {3, 2, 3, 0, 1, 1, 1, 2},
                                    {3, 1, 1, 1, 0, 2, 2, 3},
                                    {1, 3, 1, 1, 2, 0, 3, 2},
                                    {1, 1, 2, 1, 2, 3, 0, 3},
                                    {1, 1, 1, 2, 3, 2, 3, 0}});
}

// Whether the positive entries connect every GPU.
inline bool positivelyConnected(const synth::LinkMatrix& w) {
  std::vector<char> seen(static_cast<std::size_t>(w.size), 0);
  std::vector<int> stack = {0};
  seen[0] = 1;
  while (!stack.empty()) {
    const int a = stack.back();
    stack.pop_back();
    for (int b = 0; b < w.size; ++b) {
      if (seen[static_cast<std::size_t>(b)] == 0 && w.at(a, b) > 0) {
        seen[static_cast<std::size_t>(b)] = 1;
        stack.push_back(b);
      }
    }
  }
  for (const char s : seen)
    if (s == 0) return false;
  return true;
}

// A symmetric matrix with entries in {0, 1, 2, 3}: each pair is absent with probability
// `sparsity` (drawn per matrix in [0, maxSparsity)), else 1, 2 or 3 with equal odds. Every GPU
// has at least `depth` links and the links connect all GPUs (MXNet's IsSatisfactory plus
// connectivity).
inline synth::LinkMatrix randomLinkMatrix(int n, std::mt19937& gen, double maxSparsity = 0.5) {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const int depth = synth::computeDepth(n);
  for (;;) {
    const double sparsity = uniform(gen) * maxSparsity;
    synth::LinkMatrix w = synth::makeLinkMatrix(n);
    for (int a = 0; a < n; ++a) {
      for (int b = a + 1; b < n; ++b) {
        if (uniform(gen) < sparsity) continue;
        const double draw = uniform(gen);
        const double value = draw < 1.0 / 3 ? 1 : draw < 2.0 / 3 ? 2 : 3;
        w.at(a, b) = value;
        w.at(b, a) = value;
      }
    }
    bool enoughLinks = true;
    for (int a = 0; a < n && enoughLinks; ++a) {
      int links = 0;
      for (int b = 0; b < n; ++b)
        links += w.at(a, b) > 0 ? 1 : 0;
      enoughLinks = links >= std::min(depth, n - 1);
    }
    if (enoughLinks && positivelyConnected(w)) return w;
  }
}

}  // namespace chorus::testing_support
