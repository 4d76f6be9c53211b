// Launches of the device interpreter's CUDA kernels (cuda layer), callable from host C++: one
// block per IR threadblock of a rank, on the caller's stream. Compiled by nvcc
// (kernel_launch.cu) for the architectures CMake names (CHORUS_CUDA_ARCHITECTURES).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "chorus/types.h"
#include "device/kernel_types.h"

namespace chorus::cuda {

// Threads per block of the interpreter kernel (a multiple of 32).
inline constexpr int kInterpreterThreads = 256;

// The ranks one launch runs: ranks[i]'s blocks are blocks blockStart[i] .. blockStart[i+1]-1
// of the grid. Passed by value as the kernel's parameter (at most 4 KB), so enqueueing a call
// copies nothing else to the GPU.
inline constexpr int kMaxRanksPerLaunch = 16;
struct GroupLaunch {
  device::KernelArgs ranks[kMaxRanksPerLaunch];
  std::int32_t blockStart[kMaxRanksPerLaunch + 1] = {};
  std::int32_t rankCount = 0;
};
static_assert(sizeof(GroupLaunch) <= 4000, "a kernel's parameters must fit in 4 KB");

// Enqueues the ranks' programs as one kernel of blockStart[rankCount] blocks. Every array the
// KernelArgs point to must be in memory the GPU reaches (device or mapped host memory). All
// ranks of a call must run at once (they wait for each other): one launch for the ranks on a
// GPU guarantees they start together. avg runs as sum: follow with launchDivide on outputs.
cudaError_t launchGroup(const GroupLaunch& launch, DataType type, ReduceOp op, cudaStream_t stream);

// How many interpreter blocks of `type` and `op` GPU `device` holds at once (blocks per
// multiprocessor at kInterpreterThreads threads, times its multiprocessors).
cudaError_t residentBlocks(DataType type, ReduceOp op, int device, int* blocks);

// Enqueues data[i] /= divisor for `count` elements of `type` (avg).
cudaError_t launchDivide(void* data, std::size_t count, DataType type, int divisor,
                         cudaStream_t stream);

}  // namespace chorus::cuda
