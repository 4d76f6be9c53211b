#include "selection/tuning_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "algorithms/registry.h"
#include "selection/plan_cache.h"
#include "support/error.h"

namespace chorus::selection {
namespace {

constexpr std::size_t kMaxCombinations = 6;

std::vector<int> parameterValues(const algorithms::ParamInfo& param, bool explore) {
  std::set<int> values = {param.defaultValue};
  if (explore) {
    const std::vector<int> extra =
        param.name == "channels" ? std::vector<int>{1, 2, 4}
                                 : std::vector<int>{param.defaultValue / 2, param.defaultValue * 2};
    for (int value : extra)
      if (value >= param.minValue && value <= param.maxValue) values.insert(value);
  }
  return {values.begin(), values.end()};
}

// The cartesian product of the parameters' values, default combination first.
std::vector<std::map<std::string, int>> parameterCombinations(const algorithms::AlgorithmInfo& info,
                                                              bool explore) {
  std::vector<std::map<std::string, int>> combinations = {{}};
  for (const algorithms::ParamInfo& param : info.params) {
    if (param.name == "root") continue;
    std::vector<std::map<std::string, int>> next;
    for (const auto& partial : combinations) {
      for (int value : parameterValues(param, explore)) {
        auto combination = partial;
        combination[param.name] = value;
        next.push_back(std::move(combination));
      }
    }
    combinations = std::move(next);
  }
  std::stable_partition(combinations.begin(), combinations.end(), [&](const auto& combination) {
    return std::all_of(info.params.begin(), info.params.end(), [&](const auto& param) {
      const auto it = combination.find(param.name);
      return it == combination.end() || it->second == param.defaultValue;
    });
  });
  if (combinations.size() > kMaxCombinations) combinations.resize(kMaxCombinations);
  return combinations;
}

std::vector<int> nodeCounts(const algorithms::AlgorithmInfo& info, int nranks) {
  if (info.shape == algorithms::Shape::ranks) return {0};
  std::vector<int> counts;
  for (int nodes = 2; nodes * 2 <= nranks; ++nodes)
    if (nranks % nodes == 0) counts.push_back(nodes);
  return counts;
}

bool compiles(const AlgorithmChoice& choice, int nranks) {
  try {
    compiledPlan(choice.probeRequest(nranks, 0));
    return true;
  } catch (const UserError&) {
    return false;
  }
}

// Among `points` (candidate index, time), the winner under the tie rule.
std::size_t pickWinner(const std::vector<std::pair<std::size_t, double>>& points,
                       const std::vector<CandidateMeasurements>& candidates, double tie) {
  double best = points.front().second;
  for (const auto& point : points)
    best = std::min(best, point.second);
  std::size_t winner = points.front().first;
  bool found = false;
  for (const auto& [index, time] : points) {
    if (time > best * (1 + tie)) continue;
    const CandidateMeasurements& c = candidates[index];
    const CandidateMeasurements& w = candidates[winner];
    if (!found || c.steps < w.steps ||
        (c.steps == w.steps && c.choice.describe() < w.choice.describe())) {
      winner = index;
      found = true;
    }
  }
  return winner;
}

}  // namespace

std::vector<AlgorithmChoice> tuningCandidates(ir::CollectiveKind collective, int nranks,
                                              const CandidateGrid& grid) {
  std::vector<AlgorithmChoice> candidates;
  const std::string name(ir::collectiveName(collective));
  for (const algorithms::AlgorithmInfo& info : algorithms::listAlgorithms()) {
    if (info.collective != name || nranks < info.minRanks) continue;
    for (int nodes : nodeCounts(info, nranks)) {
      for (const auto& params : parameterCombinations(info, grid.parameterValues)) {
        for (ir::Protocol protocol : grid.protocols) {
          for (int instances : grid.instances) {
            AlgorithmChoice choice;
            choice.algorithm = info.name;
            choice.params = params;
            choice.protocol = protocol;
            choice.instances = instances;
            choice.nodes = nodes;
            if (compiles(choice, nranks)) candidates.push_back(std::move(choice));
          }
        }
      }
    }
  }
  return candidates;
}

TuningTable buildTuningTable(ir::CollectiveKind collective, int nranks, std::string transport,
                             const std::vector<CandidateMeasurements>& candidates, double tie) {
  // Per size: (candidate, time) of every candidate measured there.
  std::map<std::uint64_t, std::vector<std::pair<std::size_t, double>>> bySize;
  for (std::size_t i = 0; i < candidates.size(); ++i)
    for (const auto& point : candidates[i].points)
      if (point.timeUs > 0) bySize[point.bytes].emplace_back(i, point.timeUs);
  if (bySize.empty()) {
    throw OptionError(
        fmt::format("no {} candidate produced a measurement at {} ranks; see the "
                    "errors above",
                    ir::collectiveName(collective), nranks));
  }
  TuningTable table;
  table.collective = collective;
  table.ranks = nranks;
  table.transport = std::move(transport);
  std::uint64_t previousBytes = 0;
  for (const auto& [bytes, points] : bySize) {
    const std::size_t winner = pickWinner(points, candidates, tie);
    const CandidateMeasurements& w = candidates[winner];
    TuningMeasurement m;
    m.bytes = bytes;
    m.algorithm = w.choice.describe();
    for (const auto& point : w.points)
      if (point.bytes == bytes) {
        m.timeUs = point.timeUs;
        m.busbwGbps = point.busbwGbps;
      }
    // The runner-up: the fastest other candidate.
    for (const auto& [index, time] : points) {
      if (index == winner) continue;
      if (m.runnerUp.empty() || time < m.runnerUpTimeUs) {
        m.runnerUp = candidates[index].choice.describe();
        m.runnerUpTimeUs = time;
      }
    }
    table.measured.push_back(m);
    if (!table.entries.empty() && table.entries.back().choice == w.choice) {
      previousBytes = bytes;
      continue;
    }
    std::uint64_t start = 0;
    if (!table.entries.empty()) {
      start = static_cast<std::uint64_t>(
          std::llround(std::sqrt(static_cast<double>(previousBytes) * static_cast<double>(bytes))));
      start = std::clamp<std::uint64_t>(start, previousBytes + 1, bytes);
      table.entries.back().range.max = start;
    }
    table.entries.push_back({SizeRange{start, kUnlimitedBytes}, w.choice});
    previousBytes = bytes;
  }
  return table;
}

}  // namespace chorus::selection
