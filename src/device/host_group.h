// The host build of the device interpreter as a group of ranks in this process (device layer):
// one HostKernelRank per rank (host_rank.h), their mailboxes heap memory found through an
// in-memory store, every rank's blocks threads of this process. This is how CI exercises the
// interpreter's step logic and protocols without a GPU (docs/gpu.md "Testing without a GPU").
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "device/host_rank.h"
#include "ir/algorithm.h"
#include "runtime/collective_args.h"
#include "runtime/run_check.h"

namespace chorus::device {

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
  // of place), all with the same count, type and op. Throws the first failing rank's error
  // (TimeoutError when a wait passed `timeout`, CommError when a block received a message of
  // the wrong size, naming rank, threadblock, step and tile); the group is not usable after a
  // failure.
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
