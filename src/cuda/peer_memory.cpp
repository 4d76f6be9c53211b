#include "cuda/peer_memory.h"

#include <mutex>
#include <set>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "cuda/cuda_memory.h"
#include "support/error.h"

namespace chorus::cuda {

namespace {

struct Allocations {
  std::mutex mutex;
  std::set<void*> pointers;
};

Allocations& allocations() {
  static Allocations a;
  return a;
}

}  // namespace

void* allocatePeerMemory(std::size_t bytes) {
  if (bytes == 0) throw OptionError("chorus::memAlloc: 0 bytes asked for; ask for at least 1 byte");
  int device = 0;
  check(cudaGetDevice(&device), "chorus::memAlloc: cudaGetDevice");
  void* pointer = nullptr;
  check(cudaMalloc(&pointer, bytes),
        fmt::format("chorus::memAlloc: cudaMalloc of {} bytes on GPU {}", bytes, device));
  const cudaError_t zeroed = cudaMemset(pointer, 0, bytes);
  if (zeroed != cudaSuccess) cudaFree(pointer);
  check(zeroed, "chorus::memAlloc: cudaMemset");
  std::lock_guard lock(allocations().mutex);
  allocations().pointers.insert(pointer);
  return pointer;
}

bool freePeerMemory(void* pointer) {
  {
    std::lock_guard lock(allocations().mutex);
    if (allocations().pointers.erase(pointer) == 0) return false;
  }
  check(cudaFree(pointer), "chorus::memFree: cudaFree");
  return true;
}

}  // namespace chorus::cuda
