#include "runtime/thread_runner.h"

#include <exception>
#include <memory>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "ir/step_endpoints.h"
#include "runtime/executor.h"
#include "runtime/one_sided_runner.h"
#include "support/error.h"
#include "transport/registry.h"

namespace chorus::runtime {

ThreadRunReport runOnThreads(const ir::Algorithm& algorithm, const ThreadRunOptions& options,
                             std::vector<std::vector<std::uint8_t>>* outputs) {
  // One-sided plans (MSCCL++) have their own runner: a thread per threadblock, no transport.
  if (ir::hasOneSidedOps(algorithm)) return runOneSidedOnThreads(algorithm, options, outputs);
  ir::requireStepEndpoints(algorithm, "run");  // plans arrive here unverified (chorus run FILE)
  const int n = algorithm.nranks;
  if (!options.givenInputs.empty() && static_cast<int>(options.givenInputs.size()) != n)
    throw OptionError(fmt::format("'{}' runs on {} ranks but {} input buffers were given",
                                  algorithm.name, n, options.givenInputs.size()));
  const transport::TransportEntry& transportEntry =
      options.transport.empty()
          ? transport::defaultTransport(transport::TransportReach::oneProcess)
          : transport::requireTransport(options.transport, "RunOptions.transport");
  if (!transportEntry.makeGroup)
    throw OptionError(fmt::format(
        "runOnThreads runs ranks that are threads of one group made in this process; transport "
        "'{}' ({}) connects each rank on its own: use runOnProcesses",
        transportEntry.name, transportEntry.description));
  const ExecutorEntry& executor = requireExecutor(options.executor, "RunOptions.executor");
  ExecutorConfig executorConfig;
  executorConfig.streamingWorkingSetBytes = options.streamingWorkingSetBytes;
  executorConfig.alwaysByReference = options.alwaysByReference;
  executorConfig.ranksAreThreads = true;
  transport::TransportOptions transportOptions;
  transportOptions.fifo = options.fifo;
  transportOptions.timeout = options.timeout;
  std::vector<std::unique_ptr<RankBuffers>> buffers;
  for (int r = 0; r < n; ++r)
    buffers.push_back(std::make_unique<RankBuffers>(algorithm, r, options));

  ThreadRunReport report;
  for (int iteration = 0; iteration < std::max(1, options.iterations); ++iteration) {
    for (auto& b : buffers)
      b->reset();
    const std::vector<std::shared_ptr<transport::ConnectionSet>> group =
        transportEntry.makeGroup(n, transportOptions);
    std::vector<std::exception_ptr> errors(n);
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r)
      threads.emplace_back([&, r] {
        try {
          CollectiveArgs args{buffers[r]->input(), buffers[r]->output(), options.count,
                              options.type, options.op};
          CallOptions call;
          call.timeout = options.timeout;
          executor.make(r, *group[r], executorConfig)->run(algorithm, args, call);
        } catch (...) {
          errors[r] = std::current_exception();
          group[r]->abort(fmt::format("rank {} failed", r));
        }
      });
    for (auto& t : threads)
      t.join();
    report.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // Report the root cause: a rank's own error before the ones it caused elsewhere.
    rethrowRootCause(errors);
  }
  checkThreadRanks(algorithm, options, buffers, &report, outputs);
  return report;
}

}  // namespace chorus::runtime
