// chorus::memAlloc / memFree (chorus.h): registered host memory from the shm transport's
// registry, or, where chorus is built with CUDA and CHORUS_EXECUTOR is "cuda", device memory
// of the current GPU that peers map (cuda/peer_memory.h), as NCCL's ncclMemAlloc.
#include "chorus/chorus.h"
#include "support/env.h"
#include "transport/shm/registered_memory.h"
#ifdef CHORUS_HAVE_CUDA
#include "cuda/cuda_executor.h"
#include "cuda/peer_memory.h"
#endif

namespace chorus {

void* memAlloc(std::size_t bytes) {
#ifdef CHORUS_HAVE_CUDA
  if (envString("CHORUS_EXECUTOR").value_or("") == cuda::CudaExecutor::kName)
    return cuda::allocatePeerMemory(bytes);
#endif
  return transport::allocateRegistered(bytes);
}

void memFree(void* ptr) {
#ifdef CHORUS_HAVE_CUDA
  if (cuda::freePeerMemory(ptr)) return;
#endif
  transport::freeRegistered(ptr);
}

}  // namespace chorus
