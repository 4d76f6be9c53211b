#include "cuda/cuda_memory.h"

#include "support/error.h"

namespace chorus::cuda {

void check(cudaError_t error, std::string_view what) {
  if (error != cudaSuccess)
    throw CommError(fmt::format("CUDA {} failed: {} ({})", what, cudaGetErrorString(error),
                                cudaGetErrorName(error)));
}

}  // namespace chorus::cuda
