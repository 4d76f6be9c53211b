#include "device/host_executor.h"

#include <exception>
#include <mutex>

#include <fmt/format.h>

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
  try {
    HostKernelRank& held = plans_.get(algorithm, [&] {
      return std::make_unique<HostKernelRank>(
          algorithm, rank(),
          connectionExchange(connections(), fmt::format("executor '{}'", kName), options.timeout),
          sharing_);
    });
    held.run(args, options.timeout, [this] { return connections().abortReason(); });
  } catch (const PlanError&) {
    throw;  // every rank refuses the same plan before touching a peer
  } catch (const std::exception& error) {
    connections().abort(fmt::format("rank {} failed: {}", rank(), error.what()));
    throw;
  }
}

void registerDeviceExecutors() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const runtime::ExecutorEntry* entry : runtime::listExecutors())
      if (entry->name == HostDeviceExecutor::kName) return;
    runtime::registerExecutor(
        {std::string(HostDeviceExecutor::kName),
         "the device interpreter's host build: the GPU runtime's kernels, FIFOs and protocols "
         "with blocks as threads (ranks on one host)",
         [](int rank, transport::ConnectionSet& connections,
            const runtime::ExecutorConfig& config) -> std::unique_ptr<runtime::Executor> {
           return std::make_unique<HostDeviceExecutor>(rank, connections, config);
         }});
  });
}

}  // namespace chorus::device
