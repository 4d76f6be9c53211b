// Ranks of one process on CUDA GPUs (cuda layer): runs calls of an ir::Algorithm with the
// device interpreter's kernels, several ranks per GPU or one per GPU (peers' memory reached
// through peer access). The ranks on one GPU run as one launch on that GPU's stream, so they
// start together and a call costs one launch per GPU. FIFOs live in the receiver's
// device memory; the abort flag and each rank's status in mapped host memory, so the host can
// stop the kernels and read how they ended. docs/gpu.md "Design".
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "ir/algorithm.h"
#include "runtime/collective_args.h"
#include "runtime/run_check.h"

namespace chorus::cuda {

// The number of CUDA devices this process sees; 0 when there is none or no driver.
int visibleDevices();

// "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)" for device `device`; "" if there is none.
std::string describeDevice(int device);

struct CudaGroupOptions {
  // The most payload of a Simple message (NCCL: a 4 MiB buffer of 8 steps, 512 KiB each).
  std::size_t slotBytes = std::size_t{512} << 10;
  std::uint32_t slots = 8;   // per connection (NCCL_STEPS)
  std::vector<int> devices;  // the GPU of each rank; empty: every rank on the current device
};

// One group running calls of one plan. Not thread-safe; one call at a time.
class CudaKernelGroup {
 public:
  // Throws CommError when no GPU is visible, a device is out of range or two GPUs cannot map
  // each other's memory; PlanError for a plan the interpreter cannot run.
  CudaKernelGroup(const ir::Algorithm& algorithm, const CudaGroupOptions& options = {});
  ~CudaKernelGroup();
  CudaKernelGroup(const CudaKernelGroup&) = delete;
  CudaKernelGroup& operator=(const CudaKernelGroup&) = delete;

  // Runs one call to completion: enqueue() then synchronize().
  void run(const std::vector<runtime::CollectiveArgs>& args, std::chrono::milliseconds timeout);

  // Enqueues one call on the group's streams and returns: args[r] are rank r's device (or
  // managed) buffers, any aliasing, all with one count, type and op. Calls run in order. With
  // `streams` (one per rank, as NCCL's calls take), the call starts after the work enqueued on
  // each rank's stream so far, and work enqueued on a rank's stream afterwards waits for the
  // call, as if it ran on that stream. Throws CommError when the ranks on one GPU need more
  // blocks at once than it holds (they wait for each other, so all must be resident).
  void enqueue(const std::vector<runtime::CollectiveArgs>& args, std::chrono::milliseconds timeout,
               const std::vector<cudaStream_t>* streams = nullptr);

  // Waits for every enqueued call. Throws TimeoutError when a wait passed its timeout (the
  // kernels end by themselves), CommError for a message of the wrong size, an abort() or a
  // CUDA error; the group is then unusable.
  void synchronize();

  // Raises the group's abort flag: running kernels end within a few microseconds and the call
  // throws CommError naming `reason`. Thread-safe.
  void abort(const std::string& reason);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The host group's exact run (device/host_group.h) on GPUs: buffers in device memory, filled
// from and checked against the same exact values.
runtime::RunReport runKernelsOnGpu(const ir::Algorithm& algorithm,
                                   const runtime::RunOptions& options,
                                   const CudaGroupOptions& group = {});

}  // namespace chorus::cuda
