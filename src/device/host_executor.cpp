#include "device/host_executor.h"

#include <fmt/format.h>

#include "device/abort_on_failure.h"
#include "support/error.h"

namespace chorus::device {

HostDeviceExecutor::HostDeviceExecutor(int rank, transport::ConnectionSet& connections,
                                       const runtime::ExecutorConfig& config)
    : Executor(rank, connections),
      sharing_(config.ranksAreThreads ? MailboxSharing::threads : MailboxSharing::processes) {
  if (connections.ranksOnThisHost() < connections.nranks())
    throw OptionError(fmt::format(
        "executor '{}' needs every rank on one host (its mailboxes are shared memory), but only "
        "{} of the {} ranks run on rank {}'s; use the cpu executor across hosts",
        kName, connections.ranksOnThisHost(), connections.nranks(), rank));
}

HostDeviceExecutor::~HostDeviceExecutor() = default;

void HostDeviceExecutor::run(const ir::Algorithm& algorithm, const runtime::CollectiveArgs& args,
                             const runtime::CallOptions& options) {
  if (algorithm.nranks != connections().nranks())
    throw OptionError(fmt::format("plan '{}' is for {} ranks but the group has {}", algorithm.name,
                                  algorithm.nranks, connections().nranks()));
  abortGroupOnFailure(connections(), rank(), [&] {
    HostKernelRank& held = plans_.get(algorithm, [&] {
      return std::make_unique<HostKernelRank>(
          algorithm, rank(),
          connectionExchange(connections(), fmt::format("executor '{}'", kName), options.timeout),
          sharing_);
    });
    held.run(args, options.timeout, [this] { return connections().abortReason(); });
  });
}

void registerDeviceExecutors() {
  runtime::registerExecutorIfAbsent(
      {std::string(HostDeviceExecutor::kName),
       "the device interpreter's host build: the GPU runtime's kernels, FIFOs and protocols "
       "with blocks as threads (ranks on one host)",
       [](int rank, transport::ConnectionSet& connections,
          const runtime::ExecutorConfig& config) -> std::unique_ptr<runtime::Executor> {
         return std::make_unique<HostDeviceExecutor>(rank, connections, config);
       }});
}

}  // namespace chorus::device
