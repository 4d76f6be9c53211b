// The host build of the device interpreter as a group of ranks (device layer): every rank's
// blocks are threads of this process; FIFOs and buffers are host memory laid out as a GPU run
// lays them out in device memory (one slot array per connection in the receiver's memory,
// flags, acks, per-connection message counters that persist across calls). This is how CI
// exercises the interpreter's step logic and protocols without a GPU (docs/gpu.md "Testing
// without a GPU").
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "ir/algorithm.h"
#include "runtime/collective_args.h"
#include "runtime/run_check.h"

namespace chorus::device {

struct HostGroupOptions {
  std::size_t slotBytes = std::size_t{64} << 10;  // most payload of a Simple message
  std::uint32_t slots = 8;                        // per connection (NCCL_STEPS is 8)
};

// One group running calls of one plan. Not thread-safe; calls run one at a time.
class HostKernelGroup {
 public:
  // Throws PlanError for a plan the interpreter cannot run (a one-sided op, a step naming its
  // own peer, two blocks on one connection, a send no block receives), OptionError for zero
  // slots or slot bytes.
  HostKernelGroup(const ir::Algorithm& algorithm, const HostGroupOptions& options = {});
  ~HostKernelGroup();
  HostKernelGroup(const HostKernelGroup&) = delete;
  HostKernelGroup& operator=(const HostKernelGroup&) = delete;

  // Runs one call: args[r] are rank r's buffers (any aliasing the caller likes: in place, out
  // of place), all with the same count, type and op. Throws TimeoutError when a wait passed
  // `timeout` and CommError when a block received a message of the wrong size, naming rank,
  // threadblock, step and tile; the group is not usable after a failure.
  void run(const std::vector<runtime::CollectiveArgs>& args, std::chrono::milliseconds timeout);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// runOnThreads (runtime/thread_runner.h) on the host build: RankBuffers with exact inputs,
// options.iterations calls of one group, every output (and out-of-place input) checked. Uses
// options' count, type, op, timeout, iterations and givenInputs/relativeTolerance.
runtime::RunReport runKernelsOnHost(const ir::Algorithm& algorithm,
                                    const runtime::RunOptions& options,
                                    const HostGroupOptions& group = {});

}  // namespace chorus::device
