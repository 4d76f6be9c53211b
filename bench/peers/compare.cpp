// bench_compare: reads the --json records of `chorus bench`, bench_mpi and bench_gloo and
// prints one table per collective: busbw per library (out-of-place and in-place) and the
// ratios chorus / each peer. Files named NAME.rN.json are round N of their library: the table
// shows medians over rounds and the median of the per-round ratios (compare.sh --rounds). With
// --ceiling (bench_membw --json files, one per round), chorus's columns also show each size's
// fraction of this machine's memory ceiling at that size's working set. Run:
//   ./bench_compare chorus.json mpi.json gloo.json [--plot compare.svg] [--ceiling membw.json]
//   ./bench_compare chorus.r1.json openmpi.r1.json chorus.r2.json openmpi.r2.json
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "perf/compare.h"
#include "perf/record_json.h"
#include "perf/svg_plot.h"
#include "perf/timing.h"
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
  std::vector<std::string> ceilingFiles;
  app.add_option("--ceiling", ceilingFiles,
                 "bench_membw --json files (one per round): show chorus's busbw as a fraction "
                 "of the memory ceiling, from the median rates of each probed working set");
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
  std::optional<chorus::perf::MemoryProfile> profile;
  if (!ceilingFiles.empty()) {
    std::vector<chorus::perf::MemoryProfile> profiles;
    for (const std::string& file : ceilingFiles)
      profiles.push_back(chorus::perf::readMemoryProfileFile(file));
    profile = chorus::perf::medianProfile(profiles);
  }
  fmt::print("{}", chorus::perf::comparisonTables(sets, profile));
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
