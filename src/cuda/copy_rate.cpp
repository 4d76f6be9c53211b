#include "cuda/copy_rate.h"

#include <cuda_runtime_api.h>

#include "cuda/cuda_memory.h"
#include "perf/batch_timing.h"

namespace chorus::cuda {

double deviceCopyRate(std::size_t bytes) {
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  DeviceBytes from, to;
  unsigned char* source = from.reserve(device, bytes);
  unsigned char* target = to.reserve(device, bytes);
  const double seconds = perf::secondsPerCall(
      [&] {
        check(cudaMemcpyAsync(target, source, bytes, cudaMemcpyDeviceToDevice, nullptr),
              "cudaMemcpyAsync");
      },
      [] { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); });
  return static_cast<double>(bytes) / seconds;
}

}  // namespace chorus::cuda
