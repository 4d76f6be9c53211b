// One rank on a CUDA GPU as an executor (cuda layer): executor "cuda", the GPU form of the
// host build's "device" executor (device/host_executor.h). The rank runs on the GPU current on
// the thread that made it; several ranks may share a GPU. Its mailbox is device memory; peers
// that are threads of this process use its address, peers in other processes open its CUDA IPC
// handle; descriptors go over the communicator's connections (device/peer_exchange.h). Each
// call is one kernel launch on the rank's own stream. A call given the caller's stream (a
// cudaStream_t) is ordered after that stream's earlier work and before its later work, and
// returns once launched; a call without one returns when it has finished. Either way the calls
// are watched (cuda/call_watcher.h): a failure the connections report stops the running
// kernels, and a queued call's failure becomes the asynchronous error. Buffers must be memory
// the GPU reaches (cudaMalloc, managed or mapped pinned memory). docs/gpu.md "The CUDA
// executor" and "Streams".
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <string_view>

#include <cuda_runtime_api.h>

#include "device/plan_cache.h"
#include "runtime/executor.h"

namespace chorus::cuda {

class CallWatcher;
class DeviceBytes;

class CudaExecutor final : public runtime::Executor {
 public:
  static constexpr std::string_view kName = "cuda";

  // Throws CommError when no GPU is visible, OptionError when the ranks span several hosts.
  CudaExecutor(int rank, transport::ConnectionSet& connections,
               const runtime::ExecutorConfig& config);
  ~CudaExecutor() override;

  std::string_view name() const override { return kName; }
  // Throws OptionError for a buffer the GPU cannot reach (host memory from malloc, another
  // GPU's memory), CommError when the rank's blocks cannot all be resident at once, and the
  // device interpreter's errors (TimeoutError, CommError) as the host executor does.
  void run(const ir::Algorithm& algorithm, const runtime::CollectiveArgs& args,
           const runtime::CallOptions& options) override;

  // GPU memory of this rank's device.
  void* spare(std::size_t bytes) override;
  bool takesStreams() const override { return true; }
  // Waits for this rank's calls and then for `stream`'s work; CommError if a queued call failed.
  void waitForStream(void* stream) override;
  // cudaMemcpy between host and device memory, either way (overlapping ranges via the host).
  void copyBytes(void* dst, const void* src, std::size_t bytes) override;
  std::string asyncError() const override;

  int device() const { return device_; }

 private:
  struct PlanRank;
  std::unique_ptr<PlanRank> setUp(const ir::Algorithm& algorithm,
                                  std::chrono::milliseconds timeout);
  void checkBuffer(const void* buffer, const char* which) const;
  // Enqueues one call of `p` on stream_: staging, the kernel, the copy back and avg's division.
  void launch(PlanRank& p, const runtime::CollectiveArgs& args,
              const runtime::CallOptions& options);
  // A finished call's failure from the plan's status (null if none); the watcher calls it.
  std::exception_ptr callFailure(PlanRank& p, std::chrono::milliseconds timeout,
                                 std::string_view stopReason);
  void requireNoAsyncError() const;

  int device_ = 0;
  bool ranksAreThreads_ = false;
  cudaStream_t stream_ = nullptr;  // the calls' kernels and copies
  cudaStream_t watch_ = nullptr;   // reads of a failed call's words
  cudaEvent_t ready_ = nullptr;    // the caller's stream's work before a call
  device::PlanCache<PlanRank> plans_;
  std::unique_ptr<DeviceBytes> spare_;    // spare()'s
  std::unique_ptr<CallWatcher> watcher_;  // last: its calls refer to plans_
};

// Adds "cuda" to the executor table unless it is there. Thread-safe.
void registerCudaExecutors();

}  // namespace chorus::cuda
