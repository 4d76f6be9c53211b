// One rank on a CUDA GPU as an executor (cuda layer): executor "cuda", the GPU form of the
// host build's "device" executor (device/host_executor.h). The rank runs on the GPU current on
// the thread that made it; several ranks may share a GPU. Its mailbox is device memory; peers
// that are threads of this process use its address, peers in other processes open its CUDA IPC
// handle; descriptors go over the communicator's connections (device/peer_exchange.h). Each
// call is one kernel launch on the rank's stream; the calling thread waits for it while
// watching the connections, and raises the group's abort word when they report a failure.
// Buffers must be memory the GPU reaches (cudaMalloc, managed or mapped pinned memory).
// docs/gpu.md "The CUDA executor".
#pragma once

#include <memory>
#include <string_view>

#include <cuda_runtime_api.h>

#include "device/plan_cache.h"
#include "runtime/executor.h"

namespace chorus::cuda {

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

  int device() const { return device_; }

 private:
  struct PlanRank;
  std::unique_ptr<PlanRank> setUp(const ir::Algorithm& algorithm,
                                  std::chrono::milliseconds timeout);
  void checkBuffer(const void* buffer, const char* which) const;

  int device_ = 0;
  bool ranksAreThreads_ = false;
  cudaStream_t stream_ = nullptr;  // the calls' kernels and copies
  cudaStream_t watch_ = nullptr;   // the host's abort of a running kernel
  device::PlanCache<PlanRank> plans_;
  std::unique_ptr<DeviceBytes> spare_;  // spare()'s
};

// Adds "cuda" to the executor table unless it is there. Thread-safe.
void registerCudaExecutors();

}  // namespace chorus::cuda
