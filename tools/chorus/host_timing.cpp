#include "host_timing.h"

#include <span>

#include "algorithms/registry.h"
#include "bench_launch.h"
#include "perf/timing.h"
#include "runtime/datatype.h"
#include "runtime/executor.h"
#include "runtime/process_runner.h"
#include "runtime/run_check.h"

namespace chorus::cli {
namespace {

using namespace std::chrono_literals;

// Runs `algorithm` once on the executor's rank with call number `sequence` of `options`.
void callOnce(const ir::Algorithm& algorithm, const runtime::RunOptions& options, int sequence,
              const runtime::CollectiveArgs& args, runtime::Executor& executor) {
  const runtime::CallIdentity call = runtime::identifyCall(algorithm, options, sequence);
  executor.connections().publishCall(call.description);
  runtime::CallOptions exec;
  exec.timeout = options.timeout;
  exec.label = call.description.c_str();
  exec.callTag = call.tag;
  executor.run(algorithm, args, exec);
}

}  // namespace

HostTiming timeOnHost(const ir::Algorithm& algorithm, std::uint64_t bytes, double budgetSeconds) {
  runtime::RunOptions options;
  options.type = runtime::DataType::float32;
  options.count = runtime::countForBytes(algorithm, bytes, runtime::dataTypeSize(options.type));
  options.timeout = 60s;
  algorithms::BuildRequest request;
  request.algorithm = "allreduce.ring";
  request.ranks = algorithm.nranks;
  const ir::Algorithm exchange = algorithms::compileAlgorithm(request).algorithm;
  perf::TimingOptions timing;
  timing.budgetSeconds = budgetSeconds;
  timing.stopAfterSeconds = 5 * budgetSeconds;

  runtime::RankProcessOptions launch;
  launch.nranks = algorithm.nranks;
  launch.fifo = options.fifo;
  launch.waitLimit = 10min;
  const auto outcomes =
      runtime::runRankProcesses(launch, [&](int rank, transport::ConnectionSet& connections) {
        bindToCore(rank);
        runtime::RankBuffers buffers(algorithm, rank, options);
        buffers.reset();
        const std::unique_ptr<runtime::Executor> executor =
            runtime::makeExecutor(options.executor, rank, connections);
        const runtime::CollectiveArgs args{buffers.input(), buffers.output(), options.count,
                                           options.type, options.op};
        int calls = 0;
        int exchanges = 0;
        const auto runOps = [&](std::int64_t n) {
          for (std::int64_t i = 0; i < n; ++i)
            callOnce(algorithm, options, calls++, args, *executor);
        };
        const auto maxOverRanks = [&](std::span<double> values) {
          runtime::RunOptions max;
          max.count = values.size();
          max.type = runtime::DataType::float64;
          max.op = ReduceOp::max;
          max.timeout = options.timeout;
          callOnce(exchange, max, exchanges++,
                   {values.data(), values.data(), values.size(), max.type, max.op}, *executor);
        };
        const perf::TimingResult timed = perf::measure(timing, runOps, maxOverRanks);
        runtime::RunReport report;
        buffers.reset();
        runOps(1);
        runtime::checkRankOutput(algorithm, rank, options, buffers.output(), &report);
        runtime::checkRankInput(algorithm, rank, options, buffers.input(), &report);
        report.seconds = timed.medianUs * 1e-6;  // the same on every rank
        return report;
      });
  runtime::throwFirstFailure(outcomes);
  HostTiming result;
  result.seconds = outcomes.front().report.seconds;
  for (const auto& o : outcomes)
    if (!o.report.ok() && result.correct) {
      result.correct = false;
      result.firstWrong = o.report.firstWrong;
    }
  return result;
}

}  // namespace chorus::cli
