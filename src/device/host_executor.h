// The device interpreter's host build as an executor (device layer): a communicator, a runner
// or the CLI runs its calls through the same kernels, FIFOs, protocols and mailboxes as a GPU
// rank, with blocks as threads and mailboxes in heap memory (ranks that are threads) or
// /dev/shm (ranks that are processes). Ranks swap mailbox descriptors over the communicator's
// connections (peer_exchange.h), as GPU ranks swap CUDA IPC handles. It is how CI runs the
// GPU runtime's whole call path, failures included, without a GPU (docs/gpu.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "device/host_rank.h"
#include "device/plan_cache.h"
#include "runtime/executor.h"

namespace chorus::device {

class HostDeviceExecutor final : public runtime::Executor {
 public:
  static constexpr std::string_view kName = "device";
  // The most plans whose mailboxes a rank keeps at once; the least recently used goes first.
  static constexpr std::size_t kMaxPlans = PlanCache<HostKernelRank>::kMaxPlans;

  // Throws OptionError when the ranks span several hosts (mailboxes need shared memory).
  HostDeviceExecutor(int rank, transport::ConnectionSet& connections,
                     const runtime::ExecutorConfig& config);
  ~HostDeviceExecutor() override;

  std::string_view name() const override { return kName; }
  // The first call of a plan sets up its mailboxes with every peer (a barrier of the group);
  // later calls reuse them. While the blocks run, a failure the connections report (a peer
  // that died or aborted) stops them; a failure here aborts the connections, so every rank's
  // calls end with an error.
  void run(const ir::Algorithm& algorithm, const runtime::CollectiveArgs& args,
           const runtime::CallOptions& options) override;

  // Plans whose mailboxes this rank holds now (tests).
  std::size_t plansHeld() const { return plans_.size(); }

 private:
  MailboxSharing sharing_;
  PlanCache<HostKernelRank> plans_;
};

// Adds "device" to the executor table (runtime/executor.h) unless it is there. Thread-safe;
// the communicator factory and the CLI call it before they look executors up.
void registerDeviceExecutors();

}  // namespace chorus::device
