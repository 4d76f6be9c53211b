// The executor interface (runtime layer): what runs one rank's part of a finished ir::Algorithm
// over that rank's connections. The communicator, the thread and process runners and the CLI's
// host timing call through it; executors are made by name from a small table (executor.cpp):
// "cpu" (cpu_executor.h, the interpreter) is the default; the device layer adds "device" (the
// device interpreter's host build, device/host_executor.h) through registerExecutor().
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/algorithm.h"
#include "runtime/collective_args.h"
#include "runtime/stream_copy.h"
#include "transport/connections.h"

namespace chorus::runtime {

// The executor a rank runs on when none is named.
inline constexpr std::string_view kDefaultExecutor = "cpu";

// What one call passes besides its buffers. Plain data: filled on the stack per call.
struct CallOptions {
  std::chrono::milliseconds timeout{300'000};  // per call; CHORUS_TIMEOUT in the API
  // For error messages: e.g. "allreduce #12", or "allreduce" with labelSequence 12.
  const char* label = nullptr;
  bool hasLabelSequence = false;
  std::uint64_t labelSequence = 0;
  // Sent with every message and checked on receipt, so a peer running another call is
  // reported instead of misread (ExecOptions::callTag); 0: none.
  std::uint64_t callTag = 0;
  // Non-zero: names this plan for the executor's whole life, so what it derives from the plan
  // is kept between calls. 0: derive it every call.
  std::uint64_t planKey = 0;
  // The caller's stream (a cudaStream_t) for an executor that takesStreams(): the call is
  // queued on it and run() returns once it is. Null: run() returns when the call has finished.
  void* stream = nullptr;
};

// How an executor is made. The knobs are the CPU interpreter's (ExecOptions); another executor
// ignores what it has no use for.
struct ExecutorConfig {
  int threads = 1;  // threads driving one rank's threadblocks on large calls
  // Calls whose working set has at least this many bytes write with non-temporal stores
  // (stream_copy.h's callStreams, which has reductions' rule).
  std::size_t streamingWorkingSetBytes = defaultStreamingWorkingSetBytes();
  bool alwaysByReference = false;  // tests: every message by reference where the FIFO accepts it
  // Every rank of the group is a thread of this process, so an executor may share plain memory
  // with its peers (the device executors' mailboxes); false: assume separate processes.
  bool ranksAreThreads = false;
};

// Runs one rank's calls. Bound at creation to its rank and connections (which must outlive it);
// one thread at a time calls it.
class Executor {
 public:
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;
  virtual ~Executor() = default;

  // The name it was made by ("cpu").
  virtual std::string_view name() const = 0;
  // Runs this rank's program of `algorithm` on `args` to completion. Throws OptionError for a
  // rank the plan does not have, TimeoutError when a wait passes options.timeout and CommError
  // when another rank failed or the peers disagree; either way the group is aborted, so no rank
  // hangs.
  virtual void run(const ir::Algorithm& algorithm, const CollectiveArgs& args,
                   const CallOptions& options) = 0;

  // At least `bytes` of memory this executor's calls take as a buffer, for the buffers NCCL
  // lets a caller omit (Broadcast's input and Reduce's output off the root), which a plan may
  // still use as staging space. Valid until the next spare() call. The default is host memory;
  // an executor whose buffers live elsewhere (a GPU's) overrides it.
  virtual void* spare(std::size_t bytes);

  // Whether run() takes CallOptions::stream. The default executors finish every call before
  // returning and take none.
  virtual bool takesStreams() const { return false; }
  // Waits until the calls this executor queued and the work queued on `stream` (null: none)
  // have finished, before the host touches the buffers (point-to-point calls). Throws CommError
  // if a queued call failed. The default has nothing queued.
  virtual void waitForStream(void* stream);
  // Copies `bytes` between buffers the executor's calls take and host memory, either way, for
  // point-to-point calls; the ranges may overlap. The default is memmove.
  virtual void copyBytes(void* dst, const void* src, std::size_t bytes);
  // The failure of a call queued on a stream that nobody waited for; "" while there is none.
  virtual std::string asyncError() const { return {}; }

  int rank() const { return rank_; }
  transport::ConnectionSet& connections() const { return connections_; }

 protected:
  Executor(int rank, transport::ConnectionSet& connections)
      : rank_(rank), connections_(connections) {}

 private:
  const int rank_;
  transport::ConnectionSet& connections_;
  std::vector<std::uint8_t> spare_;
};

using ExecutorFactory = std::function<std::unique_ptr<Executor>(
    int rank, transport::ConnectionSet& connections, const ExecutorConfig& config)>;

// One entry of the executor table.
struct ExecutorEntry {
  std::string name;         // "cpu"
  std::string description;  // one line
  ExecutorFactory make;
};

// Every executor: the built-in ones ("cpu"), then those registerExecutor() added, in order.
// The entries live as long as the process. Thread-safe.
std::vector<const ExecutorEntry*> listExecutors();

// The executor named `name`; else OptionError naming `what` and listing every executor with its
// description. Thread-safe.
const ExecutorEntry& requireExecutor(std::string_view name, std::string_view what = "executor");

// requireExecutor(name).make(rank, connections, config).
std::unique_ptr<Executor> makeExecutor(std::string_view name, int rank,
                                       transport::ConnectionSet& connections,
                                       const ExecutorConfig& config = {});

// Adds an executor (tests, plug-ins). OptionError if the name is empty or taken or it has no
// factory. Thread-safe; entries are never removed.
void registerExecutor(ExecutorEntry entry);
// registerExecutor() unless an executor has the name already (a layer adding its own executors
// whenever a communicator is made); true if it was added.
bool registerExecutorIfAbsent(ExecutorEntry entry);

}  // namespace chorus::runtime
