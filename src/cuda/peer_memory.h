// Device memory for chorus::memAlloc on the GPU path (cuda layer), as NCCL's ncclMemAlloc:
// zero-filled cudaMalloc memory on the calling thread's current GPU, which peers map (CUDA IPC
// handles from other processes, peer access from other GPUs of this process). The pointers
// are remembered, so memFree can tell them from registered host memory.
#pragma once

#include <cstddef>

namespace chorus::cuda {

// `bytes` (> 0) of zeroed device memory; OptionError for 0 bytes, CommError when CUDA fails.
void* allocatePeerMemory(std::size_t bytes);
// Frees `pointer` if allocatePeerMemory returned it (true); false for any other pointer.
bool freePeerMemory(void* pointer);

}  // namespace chorus::cuda
