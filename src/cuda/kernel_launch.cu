#include "cuda/kernel_launch.h"

#include "cuda/cuda_platform.cuh"
#include "device/block_interpreter.h"
#include "device/type_dispatch.h"

namespace chorus::cuda {

namespace {

template <typename T, ReduceOp Op>
__global__ void __launch_bounds__(kInterpreterThreads) interpretRank(device::KernelArgs args) {
  device::interpretBlock<CudaPlatform, T, Op>(args, static_cast<int>(blockIdx.x));
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

cudaError_t launchInterpreter(const device::KernelArgs& args, DataType type, ReduceOp op,
                              cudaStream_t stream) {
  if (args.blockCount <= 0) return cudaSuccess;
  return device::dispatchType(type, op, [&]<typename T, ReduceOp Op>() {
    interpretRank<T, Op>
        <<<static_cast<unsigned>(args.blockCount), kInterpreterThreads, 0, stream>>>(args);
    return cudaGetLastError();
  });
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
