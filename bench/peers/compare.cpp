// bench_compare: reads the --json records of `chorus bench`, bench_mpi and bench_gloo and
// prints one table per collective: busbw per library (out-of-place and in-place) and the
// ratios chorus / each peer. Files named NAME.rN.json are round N of their library: the table
// shows medians over rounds and the median of the per-round ratios (compare.sh --rounds). Run:
//   ./bench_compare chorus.json mpi.json gloo.json [--plot compare.svg]
//   ./bench_compare chorus.r1.json openmpi.r1.json chorus.r2.json openmpi.r2.json
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <exception>
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
  app.add_option("files", files,
                 "JSON files from chorus bench / bench_mpi / bench_gloo --json; NAME.rN.json is "
                 "round N of its library")
      ->required();
  app.add_option("--plot", plotPath, "Also write every series to one SVG chart");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  }

  std::vector<chorus::perf::RecordFile> read;
  for (const std::string& file : files) {
    read.push_back({file, chorus::perf::readRecordsFile(file)});
    if (read.back().records.empty())
      fmt::print(stderr, "bench_compare: {} has no records; skipped\n", file);
  }
  const std::vector<chorus::perf::RecordSet> sets = chorus::perf::groupRecordFiles(read);
  std::vector<chorus::perf::BenchRecord> all;  // the medians, as the tables show them
  for (const auto& set : sets)
    for (auto& record : chorus::perf::medianRecords(set)) {
      record.library = set.label;
      all.push_back(std::move(record));
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
