// The command-line options every benchmark program shares (perf layer): `chorus bench`,
// bench_mpi and bench_gloo register the same flags, so one sweep means the same everywhere.
#pragma once

#include <string>

#include "perf/bench_driver.h"

namespace CLI {
class App;
}

namespace chorus::perf {

// The options as typed; makeSweepOptions checks and converts them.
struct BenchArgs {
  std::string collective;
  std::string minBytes = "8";
  std::string maxBytes = "64M";
  std::uint64_t factor = 4;
  std::string dtype = "float32";
  std::string op = "sum";
  int root = 0;
  bool check = true;
  bool inplace = true;
  std::int64_t iterations = 0;         // 0: from the time budget
  std::int64_t warmupIterations = -1;  // -1: calibrate (>= 20 ms batch)
  double budgetSeconds = 0.2;
  int maxBatches = 50;
  std::string jsonPath;
  std::string plotPath;
  bool printTable = true;  // false: rank 0 prints nothing (`chorus tune` reads --json instead)
};

// Adds COLL (positional), -b, -e, -f, --dtype, --op, --root, --check/--no-check,
// --inplace/--no-inplace, --iters, --warmup, --budget, --batches, --json and --plot.
void addBenchArgs(CLI::App& app, BenchArgs& args);

// Checks the options (OptionError naming the option and the accepted values) and builds the
// sweep. `elementSize` is the size of args.dtype; the caller fills library and transport.
SweepOptions makeSweepOptions(const BenchArgs& args, int nranks, std::size_t elementSize);

// One line describing the sweep for the table title: program, collective, ranks, sizes, timing.
std::string sweepTitle(std::string_view program, const SweepOptions& options, int nranks);

// Runs the sweep; rank 0 prints the table to stdout as rows finish and writes --json and --plot.
// Returns true on every rank when no element was wrong.
bool runAndReport(RankRunner& runner, const SweepOptions& options, const BenchArgs& args,
                  std::string_view title);

}  // namespace chorus::perf
