#include "selection/algorithm_choice.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <vector>

#include "support/error.h"
#include "support/strings.h"

namespace chorus::selection {
namespace {

constexpr std::string_view kSettingKeys = "instances, protocol (simple, ll, ll128), nodes";

int parseSetting(std::string_view key, std::string_view value, std::string_view where) {
  int number = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (value.empty() || error != std::errc{} || end != value.data() + value.size()) {
    throw OptionError(fmt::format("{}: {}={} is not a whole number; settings look like {}=2", where,
                                  key, value, key));
  }
  return number;
}

std::string lowercase(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower;
}

void applySetting(AlgorithmChoice& choice, const algorithms::AlgorithmInfo& info,
                  std::string_view key, std::string_view value, std::string_view where) {
  if (key == "protocol") {
    const auto protocol = ir::parseProtocolName(value);
    if (!protocol) {
      throw OptionError(
          fmt::format("{}: protocol={} is unknown; use simple, ll or ll128", where, value));
    }
    choice.protocol = *protocol;
    return;
  }
  const int number = parseSetting(key, value, where);
  if (key == "instances") {
    choice.instances = number;
    return;
  }
  if (key == "nodes") {
    if (info.shape != algorithms::Shape::nodes) {
      throw OptionError(
          fmt::format("{}: {} is sized by ranks alone; drop nodes={}", where, info.name, value));
    }
    if (number < 1) throw OptionError(fmt::format("{}: nodes={} must be >= 1", where, value));
    choice.nodes = number;
    return;
  }
  const bool declared = std::any_of(info.params.begin(), info.params.end(),
                                    [&](const algorithms::ParamInfo& p) { return p.name == key; });
  if (!declared || key == "root") {
    std::vector<std::string> names;
    for (const algorithms::ParamInfo& param : info.params)
      if (param.name != "root") names.push_back(param.name);
    throw OptionError(fmt::format("{}: '{}' is not a setting of {}{}; its settings are {}{}{}",
                                  where, key, info.name,
                                  key == "root" ? " here (the root comes from each call)" : "",
                                  fmt::join(names, ", "), names.empty() ? "" : ", ", kSettingKeys));
  }
  choice.params[std::string(key)] = number;
}

}  // namespace

bool takesRoot(const algorithms::AlgorithmInfo& info) {
  return std::any_of(info.params.begin(), info.params.end(),
                     [](const algorithms::ParamInfo& param) { return param.name == "root"; });
}

std::string resolveAlgorithmName(std::string_view name, ir::CollectiveKind kind,
                                 std::string_view where) {
  const std::string collective(ir::collectiveName(kind));
  std::vector<std::string> choices;
  for (const algorithms::AlgorithmInfo& info : algorithms::listAlgorithms()) {
    if (info.name == name && info.collective != collective) {
      throw OptionError(fmt::format("{}: {} implements {}, not {}; move it to a '{}=' group", where,
                                    info.name, info.collective, collective, info.collective));
    }
    if (info.collective != collective) continue;
    if (info.name == name || info.name == collective + "." + std::string(name)) return info.name;
    choices.push_back(info.name.substr(collective.size() + 1));
  }
  throw OptionError(fmt::format(
      "{}: unknown {} algorithm '{}'; choose one of {} (or the full names '{}.NAME'), or give a "
      "plan file path ending in .xml, .json or .txt",
      where, collective, name,
      choices.empty() ? "(none)" : fmt::format("{}", fmt::join(choices, ", ")), collective));
}

AlgorithmChoice parseAlgorithmChoice(std::string_view text, ir::CollectiveKind collective,
                                     std::string_view where) {
  AlgorithmChoice choice;
  std::string_view name = trim(text);
  std::string_view settings;
  const std::size_t brace = name.find('{');
  if (brace != std::string_view::npos) {
    if (!name.ends_with('}')) {
      throw OptionError(fmt::format(
          "{}: settings must close with '}}', e.g. ring{{channels=2,instances=2}}", where));
    }
    settings = name.substr(brace + 1, name.size() - brace - 2);
    name = trim(name.substr(0, brace));
  }
  choice.algorithm = resolveAlgorithmName(name, collective, where);
  const algorithms::AlgorithmInfo& info = algorithms::findAlgorithm(choice.algorithm);
  if (brace == std::string_view::npos) return choice;
  for (std::string_view setting : split(settings, ',')) {
    setting = trim(setting);
    if (setting.empty()) continue;
    const std::size_t equals = setting.find('=');
    if (equals == std::string_view::npos) {
      throw OptionError(fmt::format("{}: setting '{}' needs the form key=value, e.g. channels=2",
                                    where, setting));
    }
    applySetting(choice, info, trim(setting.substr(0, equals)), trim(setting.substr(equals + 1)),
                 where);
  }
  return choice;
}

std::string AlgorithmChoice::describe() const {
  std::vector<std::string> settings;
  const algorithms::AlgorithmInfo& info = algorithms::findAlgorithm(algorithm);
  std::map<std::string, std::string> sorted;
  for (const auto& [key, value] : params) {
    const auto declared =
        std::find_if(info.params.begin(), info.params.end(),
                     [&](const algorithms::ParamInfo& p) { return p.name == key; });
    if (declared == info.params.end() || declared->defaultValue != value)
      sorted[key] = std::to_string(value);
  }
  if (instances != 1) sorted["instances"] = std::to_string(instances);
  if (protocol != ir::Protocol::simple) sorted["protocol"] = lowercase(ir::protocolName(protocol));
  if (nodes != 0) sorted["nodes"] = std::to_string(nodes);
  for (const auto& [key, value] : sorted)
    settings.push_back(key + "=" + value);
  if (settings.empty()) return algorithm;
  return fmt::format("{}{{{}}}", algorithm, fmt::join(settings, ","));
}

algorithms::BuildRequest AlgorithmChoice::buildRequest(int nranks, int ranksPerNode) const {
  const algorithms::AlgorithmInfo& info = algorithms::findAlgorithm(algorithm);
  algorithms::BuildRequest request;
  request.algorithm = algorithm;
  request.params = params;
  request.instances = instances;
  request.protocol = protocol;
  if (info.shape == algorithms::Shape::ranks) {
    request.ranks = nranks;
    return request;
  }
  if (nodes != 0) {
    if (nranks % nodes != 0) {
      throw OptionError(fmt::format("{} with nodes={} needs a multiple of {} ranks, not {}",
                                    algorithm, nodes, nodes, nranks));
    }
    request.nodes = nodes;
    request.gpusPerNode = nranks / nodes;
    return request;
  }
  const int perNode = ranksPerNode == 0 ? nranks : ranksPerNode;
  if (nranks % perNode != 0) {
    throw OptionError(
        fmt::format("{} needs whole nodes, but {} ranks are not a multiple of {} ranks per node",
                    algorithm, nranks, perNode));
  }
  request.nodes = nranks / perNode;
  request.gpusPerNode = perNode;
  return request;
}

algorithms::BuildRequest AlgorithmChoice::probeRequest(int nranks, int ranksPerNode) const {
  algorithms::BuildRequest request = buildRequest(nranks, ranksPerNode);
  if (takesRoot(algorithms::findAlgorithm(algorithm))) request.params["root"] = 0;
  return request;
}

}  // namespace chorus::selection
