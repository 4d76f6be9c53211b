// `chorus algorithms [--long | --json | --markdown | --names]`: lists the algorithm library
// (name, collective, shape, parameters with defaults, description; with --long, --json and
// --markdown also steps, bytes sent per rank, α-β-γ cost, when it wins and the source).
// docs/algorithms.md's table is the --markdown output (scripts/update_algorithms_doc.sh).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/registry.h"
#include "cli.h"

namespace chorus::cli {
namespace {

std::string shapeOption(const algorithms::AlgorithmInfo& info) {
  if (info.shape == algorithms::Shape::nodes) return "--nodes --gpus-per-node";
  return info.alsoByNodes ? "--ranks | --nodes --gpus-per-node" : "--ranks";
}

std::string paramsSummary(const algorithms::AlgorithmInfo& info) {
  if (info.params.empty()) return "-";
  std::string text;
  for (const algorithms::ParamInfo& param : info.params) {
    if (!text.empty()) text += ",";
    text += fmt::format("{}={}", param.name, param.spell(param.defaultValue));
  }
  return text;
}

void printJson() {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const algorithms::AlgorithmInfo& info : algorithms::listAlgorithms()) {
    nlohmann::ordered_json params = nlohmann::ordered_json::array();
    for (const algorithms::ParamInfo& param : info.params) {
      nlohmann::ordered_json entry = {{"name", param.name},
                                      {"default", param.defaultValue},
                                      {"min", param.minValue},
                                      {"max", param.maxValue},
                                      {"description", param.description}};
      if (!param.valueNames.empty()) entry["values"] = param.valueNames;
      params.push_back(std::move(entry));
    }
    list.push_back({{"name", info.name},
                    {"collective", info.collective},
                    {"shape", info.shape == algorithms::Shape::ranks ? "ranks" : "nodes"},
                    {"min_ranks", info.minRanks},
                    {"parameters", params},
                    {"description", info.description},
                    {"steps", info.steps},
                    {"bytes_sent", info.bytesSent},
                    {"cost", info.cost},
                    {"wins_when", info.winsWhen},
                    {"citation", info.citation}});
  }
  fmt::print("{}\n", list.dump(2));
}

void printTable() {
  const std::vector<std::string> headers = {"NAME", "COLLECTIVE", "SHAPE", "PARAMETERS",
                                            "DESCRIPTION"};
  std::vector<std::vector<std::string>> rows;
  for (const algorithms::AlgorithmInfo& info : algorithms::listAlgorithms()) {
    rows.push_back(
        {info.name, info.collective, shapeOption(info), paramsSummary(info), info.description});
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
      "\nParameters are set with --set NAME=VALUE; 'chorus algorithms --long' shows each "
      "algorithm's steps, bytes, α-β-γ cost, when it wins and its source.\n");
}

// One block per algorithm with every documented field.
void printLong() {
  for (const algorithms::AlgorithmInfo& info : algorithms::listAlgorithms()) {
    fmt::print("{}  ({}, {})\n", info.name, info.collective, shapeOption(info));
    fmt::print("  {}\n", info.description);
    fmt::print("  parameters:  {}\n", paramsSummary(info));
    fmt::print("  steps:       {}\n", info.steps);
    fmt::print("  bytes sent:  {} per rank\n", info.bytesSent);
    fmt::print("  time:        {}\n", info.cost);
    fmt::print("  wins when:   {}\n", info.winsWhen);
    fmt::print("  source:      {}\n\n", info.citation);
  }
}

std::string markdownCell(std::string text) {
  std::string escaped;
  for (char c : text) {
    if (c == '|') escaped += '\\';
    escaped += c;
  }
  return escaped;
}

// The table of docs/algorithms.md.
void printMarkdown() {
  fmt::print(
      "| algorithm | collective | shape | parameters | steps | bytes sent per rank | α-β-γ time "
      "| wins when | source |\n|---|---|---|---|---|---|---|---|---|\n");
  for (const algorithms::AlgorithmInfo& info : algorithms::listAlgorithms()) {
    fmt::print("| `{}` | {} | {} | {} | {} | {} | {} | {} | {} |\n", info.name, info.collective,
               info.shape == algorithms::Shape::nodes ? "N nodes × G"
               : info.alsoByNodes                     ? "p ranks or N nodes × G"
                                                      : "p ranks",
               markdownCell(paramsSummary(info)), markdownCell(info.steps),
               markdownCell(info.bytesSent), markdownCell(info.cost), markdownCell(info.winsWhen),
               markdownCell(info.citation));
  }
}

// "NAME SHAPE MINRANKS" per line, for scripts.
void printNames() {
  for (const algorithms::AlgorithmInfo& info : algorithms::listAlgorithms())
    fmt::print("{} {} {}\n", info.name, info.shape == algorithms::Shape::ranks ? "ranks" : "nodes",
               info.minRanks);
}

}  // namespace

Command addAlgorithmsCommand(CLI::App& app) {
  CLI::App* command =
      app.add_subcommand("algorithms", "List the algorithm library: collectives and parameters");
  auto format = std::make_shared<std::string>("table");
  command->add_flag_callback(
      "--json", [format] { *format = "json"; }, "Print a JSON array (every field)");
  command->add_flag_callback(
      "-l,--long", [format] { *format = "long"; },
      "One block per algorithm: steps, bytes, α-β-γ cost, when it wins");
  command->add_flag_callback(
      "--markdown", [format] { *format = "markdown"; }, "The table of docs/algorithms.md");
  command->add_flag_callback(
      "--names", [format] { *format = "names"; }, "NAME SHAPE MIN_RANKS per line (for scripts)");
  return [format]() {
    if (*format == "json") {
      printJson();
    } else if (*format == "long") {
      printLong();
    } else if (*format == "markdown") {
      printMarkdown();
    } else if (*format == "names") {
      printNames();
    } else {
      printTable();
    }
    return ExitCode::ok;
  };
}

}  // namespace chorus::cli
