// One rank of the device interpreter's host build (device layer): its blocks run as threads of
// this process; its mailbox (mailbox_layout.h) is heap memory when its peers are threads of the
// same process, or a /dev/shm segment when they are other processes, the host's stand-in for a
// GPU's CUDA IPC handle. Ranks find each other's mailboxes through a rendezvous store
// (transport/store.h), as the GPU ranks of separate processes will. docs/gpu.md "Ranks".
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "device/kernel_types.h"
#include "device/peer_exchange.h"
#include "ir/algorithm.h"
#include "runtime/collective_args.h"
#include "transport/store.h"

namespace chorus::device {

struct HostGroupOptions {
  std::size_t slotBytes = std::size_t{64} << 10;  // most payload of a Simple message
  std::uint32_t slots = 8;                        // per connection (NCCL_STEPS is 8)
};

// Where a rank's mailbox lives: `threads` for peers in this process, `processes` for peers that
// are other processes on this host.
enum class MailboxSharing { threads, processes };

class HostKernelRank {
 public:
  // Makes this rank's mailbox, swaps descriptors with every peer through `exchange` (one round;
  // a second, a barrier, with processes: a /dev/shm name is removed once every rank mapped it)
  // and maps every peer's. Throws PlanError for a plan the interpreter cannot run, OptionError
  // for zero slots or slot bytes, the exchange's TimeoutError when a peer does not show up,
  // CommError when /dev/shm has no room or the ranks disagree on `sharing`.
  HostKernelRank(const ir::Algorithm& algorithm, int rank, const PeerExchange& exchange,
                 MailboxSharing sharing, const HostGroupOptions& options = {});
  // The same through `store`, under `prefix` (storeExchange), waiting at most `setupTimeout`.
  HostKernelRank(const ir::Algorithm& algorithm, int rank, transport::Store& store,
                 const std::string& prefix, MailboxSharing sharing,
                 const HostGroupOptions& options = {},
                 std::chrono::milliseconds setupTimeout = std::chrono::milliseconds(60'000));
  ~HostKernelRank();
  HostKernelRank(const HostKernelRank&) = delete;
  HostKernelRank& operator=(const HostKernelRank&) = delete;

  // Runs this rank's part of one call (every rank must make the same call). Throws
  // TimeoutError when one of its waits passed `timeout`, CommError when it received a message
  // of the wrong size or the group was aborted (naming the rank that failed first); the rank is
  // then unusable. `groupFailure`, if given, is polled while the blocks run (every 50 us or
  // so): once it returns a reason, the group's abort word is raised and the call throws
  // CommError with it, as a GPU rank's host thread stops its kernel when the transport reports
  // a dead peer.
  void run(const runtime::CollectiveArgs& args, std::chrono::milliseconds timeout,
           const std::function<std::string()>& groupFailure = {});

  // Raises the group's abort word: every rank's blocks stop within a few microseconds.
  void abort();

  int rank() const;
  // How this rank's last call ended: none, aborted (it stopped for another rank or an abort()),
  // or its own failure (timedOut, sizeMismatch).
  KernelError lastError() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace chorus::device
