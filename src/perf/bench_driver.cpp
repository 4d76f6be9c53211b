#include "perf/bench_driver.h"

#include <fmt/format.h>

#include <array>
#include <exception>

#include "perf/progress.h"
#include "support/size.h"

namespace chorus::perf {

std::string RankRunner::unsupportedReason(const BenchCase& /*benchCase*/) const {
  return {};
}

namespace {

BenchRecord makeRecord(const SweepOptions& options, const BenchCase& benchCase, int nranks) {
  BenchRecord record;
  record.library = options.library;
  record.collective = std::string(collectiveName(options.collective));
  record.ranks = nranks;
  record.transport = options.transport;
  record.bytes = benchCase.data.shape.bytes;
  record.count = benchCase.data.shape.elements;
  record.dtype = options.dtype;
  record.op = isReduction(options.collective) ? std::string(reduceOpName(options.op)) : "none";
  record.root = hasRoot(options.collective) ? options.root : -1;
  record.inplace = benchCase.inplace;
  return record;
}

// Runs the first call of a variant; true when it worked on every rank. On failure `why` holds
// this rank's message, or a note that another rank failed.
bool probe(RankRunner& runner, const BenchCase& benchCase, std::string& why) {
  std::array<double, 1> failed = {0};
  try {
    runner.run(benchCase, 1);
  } catch (const std::exception& error) {
    failed[0] = 1;
    why = error.what();
  }
  runner.allReduceMax(failed);
  if (failed[0] > 0 && why.empty()) why = "the first call failed on another rank";
  return failed[0] == 0;
}

BenchRecord runVariant(RankRunner& runner, const SweepOptions& options,
                       const BenchCase& benchCase) {
  BenchRecord record = makeRecord(options, benchCase, runner.nranks());
  if (std::string why = runner.unsupportedReason(benchCase); !why.empty()) {
    record.supported = false;
    record.note = why;
    return record;
  }
  runner.prepare(benchCase, 1);
  std::string why;
  if (!probe(runner, benchCase, why)) {
    record.supported = false;
    record.note = why;
    return record;
  }
  record.algorithm = runner.algorithmName(benchCase);

  const TimingResult timing = measure(
      options.timing, [&](std::int64_t iterations) { runner.run(benchCase, iterations); },
      [&](std::span<double> values) { runner.allReduceMax(values); });
  record.timeUs = timing.medianUs;
  record.minUs = timing.minUs;
  record.iterations = timing.iterations;
  record.batches = timing.batches;
  setBandwidths(record, busBandwidthFactor(options.collective, runner.nranks()));

  if (options.check) {
    runner.prepare(benchCase, 2);
    runner.run(benchCase, 1);
    std::array<double, 1> wrong = {static_cast<double>(runner.countWrong(benchCase, 2))};
    runner.allReduceSum(wrong);
    record.wrong = static_cast<std::int64_t>(wrong[0]);
  }
  return record;
}

}  // namespace

std::vector<BenchRecord> runSweep(RankRunner& runner, const SweepOptions& options,
                                  const RowCallback& onRow) {
  const bool leader = runner.rank() == 0;
  Progress progress(options.progress && leader,
                    static_cast<int>(options.sizes.size()) * (options.inplace ? 2 : 1));
  std::vector<BenchRecord> records;
  int step = 0;
  for (const std::uint64_t size : options.sizes) {
    BenchCase benchCase;
    benchCase.data.collective = options.collective;
    benchCase.data.shape = shapeFor(options.collective, size, options.elementSize, runner.nranks());
    benchCase.data.nranks = runner.nranks();
    benchCase.data.root = options.root;
    benchCase.data.op = options.op;

    std::array<BenchRecord, 2> row;
    for (const bool inplace : {false, true}) {
      benchCase.inplace = inplace;
      if (inplace && !options.inplace) {
        row[1] = makeRecord(options, benchCase, runner.nranks());
        row[1].supported = false;
        row[1].note = "in-place not requested";
        continue;
      }
      progress.show(++step, fmt::format("{} {} {}", collectiveName(options.collective),
                                        formatSize(benchCase.data.shape.bytes),
                                        inplace ? "in-place" : "out-of-place"));
      row[inplace ? 1 : 0] = runVariant(runner, options, benchCase);
    }
    progress.clear();
    if (leader && onRow) onRow(row[0], row[1]);
    records.push_back(row[0]);
    if (options.inplace) records.push_back(row[1]);
  }
  return records;
}

}  // namespace chorus::perf
