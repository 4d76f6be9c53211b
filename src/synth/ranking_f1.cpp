#include "synth/ranking_f1.h"

#include <algorithm>
#include <iterator>
#include <numeric>
#include <vector>

#include "support/error.h"

namespace chorus::synth {
namespace {

// The indices of the `k` smallest `times`, ties by index.
std::vector<std::size_t> fastest(std::span<const double> times, std::size_t k) {
  std::vector<std::size_t> order(times.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return times[a] < times[b]; });
  order.resize(k);
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace

double computeTopKF1(std::span<const double> predicted, std::span<const double> measured, int k) {
  CHORUS_INTERNAL_ASSERT(predicted.size() == measured.size() && !predicted.empty() && k >= 1,
                         "top-k F1 needs one measured time per predicted one and k >= 1");
  const std::size_t kept = std::min(static_cast<std::size_t>(k), predicted.size());
  const std::vector<std::size_t> p = fastest(predicted, kept);
  const std::vector<std::size_t> m = fastest(measured, kept);
  std::vector<std::size_t> both;
  std::set_intersection(p.begin(), p.end(), m.begin(), m.end(), std::back_inserter(both));
  return static_cast<double>(both.size()) / static_cast<double>(kept);
}

}  // namespace chorus::synth
