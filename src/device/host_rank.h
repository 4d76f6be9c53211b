// One rank of the device interpreter's host build (device layer): its blocks run as threads of
// this process; its mailbox (mailbox_layout.h) is heap memory when its peers are threads of the
// same process, or a /dev/shm segment when they are other processes, the host's stand-in for a
// GPU's CUDA IPC handle. Ranks find each other's mailboxes through a rendezvous store
// (transport/store.h), as the GPU ranks of separate processes will. docs/gpu.md "Ranks".
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "device/kernel_types.h"
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
  // Makes this rank's mailbox, publishes it under `prefix` in `store`, and maps every peer's
  // (waiting at most `setupTimeout`). Throws PlanError for a plan the interpreter cannot run,
  // OptionError for zero slots or slot bytes, TimeoutError when a peer does not show up,
  // CommError when /dev/shm has no room.
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
  // then unusable.
  void run(const runtime::CollectiveArgs& args, std::chrono::milliseconds timeout);

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
