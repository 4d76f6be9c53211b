#include "cuda/kernel_launch.h"

#include "cuda/cuda_platform.cuh"
#include "device/block_interpreter.h"
#include "device/type_dispatch.h"

namespace chorus::cuda {

namespace {

template <typename T, ReduceOp Op>
__global__ void __launch_bounds__(kInterpreterThreads) interpretRanks(const GroupLaunch launch) {
  const int block = static_cast<int>(blockIdx.x);
  int r = 0;
  while (r + 1 < launch.rankCount && block >= launch.blockStart[r + 1])
    ++r;
  device::interpretBlock<CudaPlatform, T, Op>(launch.ranks[r], block - launch.blockStart[r]);
}

template <typename T>
__global__ void divideOutput(T* data, std::size_t count, int divisor) {
  const std::size_t per = (count + gridDim.x - 1) / gridDim.x;
  const std::size_t first = per * blockIdx.x;
  if (first >= count) return;
  device::divideRange<CudaPlatform>(data + first, per < count - first ? per : count - first,
                                    divisor);
}

}  // namespace

cudaError_t launchGroup(const GroupLaunch& launch, DataType type, ReduceOp op,
                        cudaStream_t stream) {
  const std::int32_t blocks = launch.rankCount > 0 ? launch.blockStart[launch.rankCount] : 0;
  if (blocks <= 0) return cudaSuccess;
  return device::dispatchType(type, op, [&]<typename T, ReduceOp Op>() {
    interpretRanks<T, Op>
        <<<static_cast<unsigned>(blocks), kInterpreterThreads, 0, stream>>>(launch);
    return cudaGetLastError();
  });
}

cudaError_t residentBlocks(DataType type, ReduceOp op, int device, int* blocks) {
  int multiprocessors = 0;
  cudaError_t e = cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device);
  if (e != cudaSuccess) return e;
  int perMultiprocessor = 0;
  e = device::dispatchType(type, op, [&]<typename T, ReduceOp Op>() {
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perMultiprocessor, interpretRanks<T, Op>,
                                                         kInterpreterThreads, 0);
  });
  *blocks = perMultiprocessor * multiprocessors;
  return e;
}

cudaError_t launchDivide(void* data, std::size_t count, DataType type, int divisor,
                         cudaStream_t stream) {
  if (count == 0 || divisor == 1) return cudaSuccess;
  return device::dispatchType(type, ReduceOp::sum, [&]<typename T, ReduceOp>() {
    const std::size_t blocks = (count + 4095) / 4096;
    divideOutput<T><<<static_cast<unsigned>(blocks < 1024 ? blocks : 1024), 256, 0, stream>>>(
        static_cast<T*>(data), count, divisor);
    return cudaGetLastError();
  });
}

}  // namespace chorus::cuda
