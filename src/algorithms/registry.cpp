// The algorithm registry: collects every family's entries, validates build requests and
// drives build -> postcondition check -> compile.
#include "algorithms/registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <future>
#include <string>

#include "algorithms/families.h"
#include "support/error.h"

namespace chorus::algorithms {
namespace {

constexpr int kMaxRanks = 1024;  // 128 eight-GPU nodes (simulation at scale)
constexpr int kMaxInstances = 32;
constexpr std::size_t kMaxListedViolations = 10;

std::vector<AlgorithmInfo> collectAlgorithms() {
  std::vector<AlgorithmInfo> all;
  for (auto family :
       {&ringAlgorithms, &allPairsAlgorithms, &hierarchicalAlgorithms, &allToAllAlgorithms,
        &allToNextAlgorithms, &treeAlgorithms, &halvingDoublingAlgorithms, &directAlgorithms,
        &doubleBinaryTreeAlgorithms, &twoDimensionalAlgorithms, &broadcastAlgorithms,
        &bruckAlgorithms, &hierarchicalAllToAllAlgorithms, &hierarchicalAllGatherAlgorithms}) {
    for (AlgorithmInfo& info : family())
      all.push_back(std::move(info));
  }
  std::sort(all.begin(), all.end(),
            [](const AlgorithmInfo& a, const AlgorithmInfo& b) { return a.name < b.name; });
  return all;
}

std::size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const std::size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The candidate closest to `word` by edit distance (ties: first in order).
std::string closestName(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t bestDistance = static_cast<std::size_t>(-1);
  for (const std::string& candidate : candidates) {
    std::size_t distance = editDistance(word, candidate);
    // A prefix or substring match ("ring" -> "allreduce.ring") counts as close.
    if (!word.empty() && candidate.find(word) != std::string::npos)
      distance = std::min(distance, std::size_t{1});
    if (distance < bestDistance) {
      bestDistance = distance;
      best = candidate;
    }
  }
  return best;
}

std::vector<std::string> algorithmNames() {
  std::vector<std::string> names;
  for (const AlgorithmInfo& info : listAlgorithms())
    names.push_back(info.name);
  return names;
}

// "1..8", or "forward|backward" for a parameter with value names.
std::string describeValues(const ParamInfo& param) {
  if (param.valueNames.empty()) return fmt::format("{}..{}", param.minValue, param.maxValue);
  return fmt::format("{}", fmt::join(param.valueNames, "|"));
}

std::string describeParams(const AlgorithmInfo& info) {
  if (info.params.empty()) return fmt::format("{} takes no parameters", info.name);
  std::string text = fmt::format("{} takes:", info.name);
  for (const ParamInfo& param : info.params) {
    text += fmt::format(" {} ({}, default {})", param.name, describeValues(param),
                        param.spell(param.defaultValue));
  }
  return text;
}

void resolveShape(const AlgorithmInfo& info, const BuildRequest& request, BuildArgs& args) {
  const bool nodeShapeGiven = request.nodes != 0 || request.gpusPerNode != 0;
  if (info.shape == Shape::ranks && !(info.alsoByNodes && nodeShapeGiven)) {
    if (request.nodes != 0 || request.gpusPerNode != 0) {
      throw OptionError(
          fmt::format("{} is sized by --ranks N, not --nodes/--gpus-per-node; use e.g. --ranks {}",
                      info.name, std::max(2, request.nodes * std::max(1, request.gpusPerNode))));
    }
    if (request.ranks == 0) {
      throw OptionError(fmt::format("{} needs the number of ranks; add --ranks N (N >= {})",
                                    info.name, info.minRanks));
    }
    args.ranks = request.ranks;
    args.nodes = 1;
    args.gpusPerNode = request.ranks;
  } else {
    if (request.nodes == 0 || request.gpusPerNode == 0) {
      if (info.alsoByNodes) {
        throw OptionError(fmt::format(
            "{} takes --nodes and --gpus-per-node together (or --ranks N alone); add the missing "
            "one",
            info.name));
      }
      throw OptionError(fmt::format("{} needs the cluster shape; add --nodes N --gpus-per-node G{}",
                                    info.name, request.ranks != 0 ? " instead of --ranks" : ""));
    }
    if (request.nodes < 1 || request.gpusPerNode < 1) {
      throw OptionError(fmt::format("{}: --nodes ({}) and --gpus-per-node ({}) must be >= 1",
                                    info.name, request.nodes, request.gpusPerNode));
    }
    if (request.ranks != 0 && request.ranks != request.nodes * request.gpusPerNode) {
      throw OptionError(
          fmt::format("{}: --ranks {} disagrees with --nodes {} x --gpus-per-node {}; drop --ranks",
                      info.name, request.ranks, request.nodes, request.gpusPerNode));
    }
    if (request.nodes > kMaxRanks || request.gpusPerNode > kMaxRanks) {
      throw OptionError(fmt::format("{}: at most {} ranks are supported", info.name, kMaxRanks));
    }
    args.nodes = request.nodes;
    args.gpusPerNode = request.gpusPerNode;
    args.ranks = request.nodes * request.gpusPerNode;
  }
  if (args.ranks < info.minRanks) {
    throw OptionError(fmt::format("{} needs at least {} ranks, got {}; use more ranks", info.name,
                                  info.minRanks, args.ranks));
  }
  if (args.ranks > kMaxRanks) {
    throw OptionError(fmt::format("{}: at most {} ranks are supported, got {}", info.name,
                                  kMaxRanks, args.ranks));
  }
}

void resolveParams(const AlgorithmInfo& info, const BuildRequest& request, BuildArgs& args) {
  std::vector<std::string> known;
  for (const ParamInfo& param : info.params) {
    known.push_back(param.name);
    args.params[param.name] = param.defaultValue;
  }
  for (const auto& [key, value] : request.params) {
    auto it = std::find_if(info.params.begin(), info.params.end(),
                           [&](const ParamInfo& param) { return param.name == key; });
    if (it == info.params.end()) {
      std::string hint =
          known.empty() ? "" : fmt::format(" (did you mean '{}'?)", closestName(key, known));
      throw OptionError(fmt::format("unknown parameter '{}' for {}{}; {}", key, info.name, hint,
                                    describeParams(info)));
    }
    if (value < it->minValue || value > it->maxValue) {
      throw OptionError(fmt::format("parameter {}={} is out of range for {}; use {} ({})", key,
                                    value, info.name, describeValues(*it), it->description));
    }
    args.params[key] = value;
  }
}

}  // namespace

std::string_view shapeName(Shape shape) {
  return shape == Shape::ranks ? "ranks" : "nodes x gpus";
}

std::string ParamInfo::spell(int value) const {
  const long index = static_cast<long>(value) - minValue;
  if (index >= 0 && index < static_cast<long>(valueNames.size())) return valueNames[index];
  return std::to_string(value);
}

int BuildArgs::param(std::string_view name) const {
  auto it = params.find(std::string(name));
  CHORUS_INTERNAL_ASSERT(it != params.end(),
                         fmt::format("algorithm reads undeclared parameter '{}'", name));
  return it->second;
}

const std::vector<AlgorithmInfo>& listAlgorithms() {
  static const std::vector<AlgorithmInfo> algorithms = collectAlgorithms();
  return algorithms;
}

const AlgorithmInfo& findAlgorithm(std::string_view name) {
  for (const AlgorithmInfo& info : listAlgorithms()) {
    if (info.name == name) return info;
  }
  const std::vector<std::string> names = algorithmNames();
  throw OptionError(fmt::format("unknown algorithm '{}'; did you mean '{}'? Known algorithms: {}",
                                name, closestName(name, names), fmt::join(names, ", ")));
}

std::pair<std::string, int> parseParamAssignment(std::string_view text) {
  const std::size_t equals = text.find('=');
  if (equals == std::string_view::npos || equals == 0) {
    throw OptionError(
        fmt::format("--set expects key=value (e.g. --set channels=2), got '{}'", text));
  }
  const std::string_view key = text.substr(0, equals);
  const std::string_view valueText = text.substr(equals + 1);
  int value = 0;
  const auto [end, error] =
      std::from_chars(valueText.data(), valueText.data() + valueText.size(), value);
  if (error != std::errc{} || end != valueText.data() + valueText.size() || valueText.empty()) {
    throw OptionError(fmt::format("--set {}: '{}' is not an integer; parameters take whole numbers",
                                  key, valueText));
  }
  return {std::string(key), value};
}

std::pair<std::string, int> parseParamAssignment(std::string_view text, const AlgorithmInfo& info) {
  const std::size_t equals = text.find('=');
  const std::string_view key = equals == std::string_view::npos ? text : text.substr(0, equals);
  const auto param = std::find_if(info.params.begin(), info.params.end(),
                                  [&](const ParamInfo& p) { return p.name == key; });
  if (equals == std::string_view::npos || param == info.params.end() || param->valueNames.empty())
    return parseParamAssignment(text);
  const std::string_view valueText = text.substr(equals + 1);
  for (std::size_t i = 0; i < param->valueNames.size(); ++i)
    if (param->valueNames[i] == valueText)
      return {std::string(key), param->minValue + static_cast<int>(i)};
  int value = 0;
  const auto [end, error] =
      std::from_chars(valueText.data(), valueText.data() + valueText.size(), value);
  if (error != std::errc{} || end != valueText.data() + valueText.size() || valueText.empty()) {
    throw OptionError(fmt::format("--set {}={}: not a value of {}'s {}; use {} ({})", key,
                                  valueText, info.name, key, describeValues(*param),
                                  param->description));
  }
  return {std::string(key), value};
}

BuildArgs resolveRequest(const BuildRequest& request) {
  const AlgorithmInfo& info = findAlgorithm(request.algorithm);
  BuildArgs args;
  resolveShape(info, request, args);
  resolveParams(info, request, args);
  if (request.instances < 1 || request.instances > kMaxInstances) {
    throw OptionError(
        fmt::format("--instances {} is out of range; use 1..{}", request.instances, kMaxInstances));
  }
  args.programOptions.instances = request.instances;
  args.programOptions.protocol = request.protocol;
  return args;
}

std::unique_ptr<lang::Program> buildProgram(const BuildRequest& request) {
  const AlgorithmInfo& info = findAlgorithm(request.algorithm);
  const BuildArgs args = resolveRequest(request);
  return info.build(info.name, args);
}

void requirePostcondition(const lang::Program& program, std::string_view algorithm) {
  const std::vector<lang::Violation> violations = program.checkPostcondition();
  if (!violations.empty()) {
    std::string message = fmt::format("{} does not implement {}: {} output chunk(s) wrong",
                                      algorithm, program.collective().name(), violations.size());
    for (std::size_t i = 0; i < violations.size() && i < kMaxListedViolations; ++i) {
      message += "\n  " + violations[i].describe();
    }
    if (violations.size() > kMaxListedViolations) {
      message += fmt::format("\n  ... and {} more", violations.size() - kMaxListedViolations);
    }
    throw CompileError(message);
  }
}

compiler::CompileResult compileTraced(std::unique_ptr<lang::Program> program,
                                      std::string_view algorithm,
                                      const compiler::CompileOptions& options) {
  ir::Dag dag = program->takeDag();
  // The passes need only the traced graph: the postcondition check and the release of the
  // program's symbolic values (seconds at 1024 ranks) run beside them.
  std::future<void> checked =
      std::async(std::launch::async, [owned = std::move(program), algorithm]() mutable {
        requirePostcondition(*owned, algorithm);
        owned.reset();
      });
  compiler::CompileResult result;
  try {
    result = compiler::compileProgram(std::move(dag), options);
  } catch (...) {
    checked.get();  // a program that misses its postcondition says so first
    throw;
  }
  checked.get();
  return result;
}

compiler::CompileResult compileAlgorithm(const BuildRequest& request,
                                         const compiler::CompileOptions& options) {
  return compileTraced(buildProgram(request), request.algorithm, options);
}

}  // namespace chorus::algorithms
