#include "gpu_buffers.h"

#include <fmt/format.h>

#include <algorithm>

#include "support/error.h"

#ifdef CHORUS_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <chrono>
#endif

namespace chorus::cli {

#ifdef CHORUS_HAVE_CUDA

namespace {

void checkBenchCuda(cudaError_t error, const char* what) {
  if (error != cudaSuccess)
    throw CommError(fmt::format("chorus bench --device cuda: CUDA {} failed: {} ({})", what,
                                cudaGetErrorString(error), cudaGetErrorName(error)));
}

}  // namespace

void requireGpuBench() {}

GpuMirror::GpuMirror(std::size_t bytes) {
  void* p = nullptr;
  checkBenchCuda(cudaMalloc(&p, std::max<std::size_t>(bytes, 1)), "cudaMalloc");
  device_ = static_cast<std::byte*>(p);
}

GpuMirror::~GpuMirror() {
  cudaFree(device_);
}

void GpuMirror::upload(const std::byte* host, std::size_t bytes) {
  checkBenchCuda(cudaMemcpy(device_, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to the GPU");
}

void GpuMirror::download(std::byte* host, std::size_t bytes) const {
  checkBenchCuda(cudaMemcpy(host, device_, bytes, cudaMemcpyDeviceToHost),
                 "cudaMemcpy from the GPU");
}

GpuStream::GpuStream() {
  cudaStream_t stream = nullptr;
  checkBenchCuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  stream_ = stream;
}

GpuStream::~GpuStream() {
  cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

void GpuStream::synchronize() const {
  checkBenchCuda(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)),
                 "cudaStreamSynchronize");
}

double deviceCopyRate(std::size_t bytes) {
  GpuMirror from(bytes), to(bytes);
  double best = 0;
  for (int i = 0; i < 6; ++i) {
    const auto start = std::chrono::steady_clock::now();
    checkBenchCuda(cudaMemcpy(to.device(), from.device(), bytes, cudaMemcpyDeviceToDevice),
                   "cudaMemcpy");
    checkBenchCuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i > 0) best = std::max(best, static_cast<double>(bytes) / seconds / 1e9);  // 0: warm-up
  }
  return best;
}

#else

namespace {

[[noreturn]] void gpuBenchUnavailable() {
  throw OptionError(
      "--device cuda needs chorus built with CUDA (configure with nvcc on the PATH, "
      "CHORUS_CUDA=AUTO or ON); this build has no GPU executor");
}

}  // namespace

void requireGpuBench() {
  gpuBenchUnavailable();
}
GpuMirror::GpuMirror(std::size_t /*bytes*/) {
  gpuBenchUnavailable();
}
GpuMirror::~GpuMirror() = default;
void GpuMirror::upload(const std::byte* /*host*/, std::size_t /*bytes*/) {
  gpuBenchUnavailable();
}
void GpuMirror::download(std::byte* /*host*/, std::size_t /*bytes*/) const {
  gpuBenchUnavailable();
}
GpuStream::GpuStream() {
  gpuBenchUnavailable();
}
GpuStream::~GpuStream() = default;
void GpuStream::synchronize() const {
  gpuBenchUnavailable();
}
double deviceCopyRate(std::size_t /*bytes*/) {
  gpuBenchUnavailable();
}

#endif

}  // namespace chorus::cli
