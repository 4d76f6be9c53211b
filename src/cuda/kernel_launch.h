// Launches of the device interpreter's CUDA kernels (cuda layer), callable from host C++: one
// block per IR threadblock of a rank, on the caller's stream. Compiled by nvcc
// (kernel_launch.cu) for the architectures CMake names (CHORUS_CUDA_ARCHITECTURES).
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "chorus/types.h"
#include "device/kernel_types.h"

namespace chorus::cuda {

// Threads per block of the interpreter kernel (a multiple of 32).
inline constexpr int kInterpreterThreads = 256;

// Enqueues rank `args.rank`'s program: args.blockCount blocks. `args` and every array it
// points to must be in memory the GPU reaches (device or mapped host memory). avg runs as sum:
// follow with launchDivide on the output.
cudaError_t launchInterpreter(const device::KernelArgs& args, DataType type, ReduceOp op,
                              cudaStream_t stream);

// Enqueues data[i] /= divisor for `count` elements of `type` (avg).
cudaError_t launchDivide(void* data, std::size_t count, DataType type, int divisor,
                         cudaStream_t stream);

}  // namespace chorus::cuda
