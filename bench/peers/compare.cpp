// bench_compare: reads the --json records of `chorus bench`, bench_mpi and bench_gloo and
// prints one table per collective: busbw per library (out-of-place and in-place) and the
// ratios chorus / each peer. Run:
//   ./bench_compare chorus.json mpi.json gloo.json [--plot compare.svg]
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "perf/compare.h"
#include "perf/record_json.h"
#include "perf/svg_plot.h"
#include "support/error.h"

namespace {

int runCompare(int argc, char** argv) {
  CLI::App app{"bench_compare: side-by-side busbw of benchmark JSON files", "bench_compare"};
  std::vector<std::string> files;
  std::string plotPath;
  app.add_option("files", files, "JSON files from chorus bench / bench_mpi / bench_gloo --json")
      ->required();
  app.add_option("--plot", plotPath, "Also write every series to one SVG chart");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  }

  std::vector<chorus::perf::RecordSet> sets;
  std::vector<chorus::perf::BenchRecord> all;
  for (const std::string& file : files) {
    chorus::perf::RecordSet set;
    set.records = chorus::perf::readRecordsFile(file);
    if (set.records.empty()) {
      fmt::print(stderr, "bench_compare: {} has no records; skipped\n", file);
      continue;
    }
    set.label = set.records.front().library;
    for (const auto& other : sets)
      if (other.label == set.label) set.label += ":" + std::filesystem::path(file).stem().string();
    for (auto& record : set.records) {
      record.library = set.label;
      all.push_back(record);
    }
    sets.push_back(std::move(set));
  }
  fmt::print("{}", chorus::perf::comparisonTables(sets));
  if (!plotPath.empty()) {
    chorus::perf::PlotOptions plot;
    plot.title = "busbw by library";
    chorus::perf::writePlotFile(plotPath, all, plot);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return runCompare(argc, argv);
  } catch (const chorus::UserError& error) {
    fmt::print(stderr, "bench_compare: error: {}\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    fmt::print(stderr, "bench_compare: internal error: {}\n", error.what());
    return 3;
  }
}
