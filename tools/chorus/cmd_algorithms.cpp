// `chorus algorithms [--json]`: lists the algorithm library (name, collective, shape,
// parameters with defaults, description).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "cli.h"

namespace chorus::cli {
namespace {

std::string shapeOption(algorithms::Shape shape) {
  return shape == algorithms::Shape::ranks ? "--ranks" : "--nodes --gpus-per-node";
}

std::string paramsSummary(const algorithms::AlgorithmInfo& info) {
  if (info.params.empty()) return "-";
  std::string text;
  for (const algorithms::ParamInfo& param : info.params) {
    if (!text.empty()) text += ",";
    text += fmt::format("{}={}", param.name, param.defaultValue);
  }
  return text;
}

void printJson() {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const algorithms::AlgorithmInfo& info : algorithms::listAlgorithms()) {
    nlohmann::ordered_json params = nlohmann::ordered_json::array();
    for (const algorithms::ParamInfo& param : info.params) {
      params.push_back({{"name", param.name},
                        {"default", param.defaultValue},
                        {"min", param.minValue},
                        {"max", param.maxValue},
                        {"description", param.description}});
    }
    list.push_back({{"name", info.name},
                    {"collective", info.collective},
                    {"shape", info.shape == algorithms::Shape::ranks ? "ranks" : "nodes"},
                    {"min_ranks", info.minRanks},
                    {"parameters", params},
                    {"description", info.description},
                    {"citation", info.citation}});
  }
  fmt::print("{}\n", list.dump(2));
}

void printTable() {
  const std::vector<std::string> headers = {"NAME", "COLLECTIVE", "SHAPE", "PARAMETERS",
                                            "DESCRIPTION"};
  std::vector<std::vector<std::string>> rows;
  for (const algorithms::AlgorithmInfo& info : algorithms::listAlgorithms()) {
    rows.push_back({info.name, info.collective, shapeOption(info.shape), paramsSummary(info),
                    info.description});
  }
  std::vector<std::size_t> widths(headers.size());
  for (std::size_t c = 0; c < headers.size(); ++c) {
    widths[c] = headers[c].size();
    for (const auto& row : rows)
      widths[c] = std::max(widths[c], row[c].size());
  }
  auto printRow = [&](const std::vector<std::string>& row) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += c + 1 == row.size() ? row[c] : fmt::format("{:<{}}  ", row[c], widths[c]);
    }
    fmt::print("{}\n", line);
  };
  printRow(headers);
  for (const auto& row : rows)
    printRow(row);
  fmt::print(
      "\nParameters are set with --set NAME=VALUE; 'chorus algorithms --json' shows "
      "their ranges and citations.\n");
}

}  // namespace

Command addAlgorithmsCommand(CLI::App& app) {
  CLI::App* command =
      app.add_subcommand("algorithms", "List the algorithm library: collectives and parameters");
  auto json = std::make_shared<bool>(false);
  command->add_flag("--json", *json, "Print a JSON array instead of a table");
  return [json]() {
    if (*json) {
      printJson();
    } else {
      printTable();
    }
    return ExitCode::ok;
  };
}

}  // namespace chorus::cli
