#include "device/host_executor.h"

#include <algorithm>
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

HostKernelRank& HostDeviceExecutor::rankFor(const ir::Algorithm& algorithm,
                                            const runtime::CallOptions& options) {
  // A plan without a key is never run again under the same key: it gets one of its own.
  const std::uint64_t key =
      options.planKey != 0 ? options.planKey : (std::uint64_t{1} << 63) | ++unnamedPlans_;
  ++uses_;
  for (PlanRank& held : plans_)
    if (held.key == key) {
      held.lastUse = uses_;
      return *held.rank;
    }
  // Every rank makes the same calls, so every rank sets this plan up now: the exchange is a
  // barrier, after which no peer still runs an older call and the least recently used plans'
  // mailboxes can go (every rank drops the same ones, having seen the same calls).
  PlanRank made{
      key, uses_,
      std::make_unique<HostKernelRank>(
          algorithm, rank(),
          connectionExchange(connections(), fmt::format("executor '{}'", kName), options.timeout),
          sharing_)};
  plans_.push_back(std::move(made));
  while (plans_.size() > kMaxPlans)
    plans_.erase(std::min_element(
        plans_.begin(), plans_.end(),
        [](const PlanRank& a, const PlanRank& b) { return a.lastUse < b.lastUse; }));
  return *plans_.back().rank;
}

void HostDeviceExecutor::run(const ir::Algorithm& algorithm, const runtime::CollectiveArgs& args,
                             const runtime::CallOptions& options) {
  if (algorithm.nranks != connections().nranks())
    throw OptionError(fmt::format("plan '{}' is for {} ranks but the group has {}", algorithm.name,
                                  algorithm.nranks, connections().nranks()));
  try {
    rankFor(algorithm, options).run(args, options.timeout, [this] {
      return connections().abortReason();
    });
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
