#include "perf/bench_args.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "perf/record_json.h"
#include "perf/svg_plot.h"
#include "perf/sweep.h"
#include "perf/table.h"
#include "support/error.h"
#include "support/size.h"

namespace chorus::perf {

void addBenchArgs(CLI::App& app, BenchArgs& args) {
  app.add_option("collective", args.collective,
                 "allreduce, allgather, reducescatter, alltoall, broadcast or reduce")
      ->required();
  app.add_option("-b,--minbytes", args.minBytes, "Smallest size: 8, 64K, 1M (nccl-tests' size)")
      ->capture_default_str();
  app.add_option("-e,--maxbytes", args.maxBytes, "Largest size")->capture_default_str();
  app.add_option("-f,--stepfactor", args.factor, "Multiply the size by this each step")
      ->capture_default_str();
  app.add_option("--dtype", args.dtype, "Element type")->capture_default_str();
  app.add_option("--op", args.op, "Reduction: sum, prod, min, max, avg")->capture_default_str();
  app.add_option("--root", args.root, "Root rank of broadcast and reduce")->capture_default_str();
  app.add_flag("--check,!--no-check", args.check,
               "Re-run each size on fresh inputs and count wrong elements (default on)");
  app.add_flag("--inplace,!--no-inplace", args.inplace, "Also run in place (default on)");
  app.add_option("--iters", args.iterations,
                 "Timed operations per size (default: enough for --budget)");
  app.add_option("--warmup", args.warmupIterations,
                 "Warm-up operations per size (default: double until a batch takes 20 ms)");
  app.add_option("--budget", args.budgetSeconds, "Seconds of timed operations per size")
      ->capture_default_str();
  app.add_option("--batches", args.maxBatches, "Most batches per size (median over batches)")
      ->capture_default_str();
  app.add_option("--json", args.jsonPath, "Write the records as a JSON array to FILE");
  app.add_option("--plot", args.plotPath, "Write busbw vs size as an SVG chart to FILE");
}

SweepOptions makeSweepOptions(const BenchArgs& args, int nranks, std::size_t elementSize) {
  SweepOptions options;
  const auto collective = parseCollective(args.collective);
  if (!collective)
    throw OptionError(fmt::format(
        "unknown collective '{}'; use allreduce, allgather, reducescatter, alltoall, broadcast "
        "or reduce",
        args.collective));
  options.collective = *collective;
  const auto op = parseReduceOp(args.op);
  if (!op)
    throw OptionError(fmt::format("unknown --op '{}'; use sum, prod, min, max or avg", args.op));
  options.op = *op;
  if (hasRoot(*collective) && (args.root < 0 || args.root >= nranks))
    throw OptionError(fmt::format("--root {} is not a rank; use 0..{}", args.root, nranks - 1));
  options.root = args.root;
  options.sizes = sizeSweep(parseSize(args.minBytes), parseSize(args.maxBytes), args.factor);
  options.elementSize = elementSize;
  options.dtype = args.dtype;
  options.check = args.check;
  options.inplace = args.inplace;
  if (args.budgetSeconds <= 0)
    throw OptionError(
        fmt::format("--budget {} must be positive, e.g. --budget 0.05", args.budgetSeconds));
  if (args.maxBatches < 1) throw OptionError("--batches must be at least 1");
  if (args.iterations < 0) throw OptionError("--iters must be at least 1 (or 0 for --budget)");
  options.timing.budgetSeconds = args.budgetSeconds;
  options.timing.iterations = args.iterations;
  options.timing.warmupIterations = args.warmupIterations;
  options.timing.maxBatches = args.maxBatches;
  options.timing.stopAfterSeconds = std::max(1.0, 5 * args.budgetSeconds);
  return options;
}

std::string sweepTitle(std::string_view program, const SweepOptions& options, int nranks) {
  const std::string op = isReduction(options.collective)
                             ? fmt::format(" {}", reduceOpName(options.op))
                             : std::string();
  const std::string root =
      hasRoot(options.collective) ? fmt::format(", root {}", options.root) : std::string();
  const std::string timing = options.timing.iterations > 0
                                 ? fmt::format("{} ops", options.timing.iterations)
                                 : fmt::format("~{:g} s", options.timing.budgetSeconds);
  return fmt::format(
      "{} {}: {} ranks ({}), {}{}{}, {} to {} x{}; median of <= {} batches over {} per size, "
      "check {}",
      program, collectiveName(options.collective), nranks, options.transport, options.dtype, op,
      root, formatSize(options.sizes.front()), formatSize(options.sizes.back()),
      options.sizes.size() > 1 ? options.sizes[1] / options.sizes[0] : 1, options.timing.maxBatches,
      timing, options.check ? "on" : "off");
}

bool runAndReport(RankRunner& runner, const SweepOptions& options, const BenchArgs& args,
                  std::string_view title) {
  const bool leader = runner.rank() == 0;
  const bool print = leader && args.printTable;
  if (print) {
    fmt::print("{}", tableHeader(title));
    std::fflush(stdout);
  }
  const std::vector<BenchRecord> records =
      runSweep(runner, options, [print](const BenchRecord& outOfPlace, const BenchRecord& inPlace) {
        if (!print) return;
        fmt::print("{}", tableRow(outOfPlace, inPlace));
        std::fflush(stdout);
      });
  if (leader) {
    if (print) {
      fmt::print("{}", tableFooter(records));
      std::fflush(stdout);
    }
    if (!args.jsonPath.empty()) writeRecordsFile(args.jsonPath, records);
    if (!args.plotPath.empty()) {
      PlotOptions plot;
      plot.title =
          fmt::format("{} {}, {} ranks ({}): busbw", options.library,
                      collectiveName(options.collective), runner.nranks(), options.transport);
      writePlotFile(args.plotPath, records, plot);
    }
  }
  return totalWrong(records) == 0;
}

}  // namespace chorus::perf
