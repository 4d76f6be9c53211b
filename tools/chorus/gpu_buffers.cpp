#include "gpu_buffers.h"

#include <fmt/format.h>

#include "support/error.h"

#ifdef CHORUS_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "cuda/copy_rate.h"
#include "cuda/cuda_memory.h"
#endif

namespace chorus::cli {

#ifdef CHORUS_HAVE_CUDA

void requireGpuBench() {}

GpuMirror::GpuMirror(std::size_t bytes) : memory_(std::make_unique<cuda::DeviceBytes>()) {
  int device = 0;
  cuda::check(cudaGetDevice(&device), "cudaGetDevice");
  device_ = reinterpret_cast<std::byte*>(memory_->reserve(device, bytes));
}

GpuMirror::~GpuMirror() = default;

void GpuMirror::upload(const std::byte* host, std::size_t bytes) {
  cuda::check(cudaMemcpy(device_, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to the GPU");
}

void GpuMirror::download(std::byte* host, std::size_t bytes) const {
  cuda::check(cudaMemcpy(host, device_, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy from the GPU");
}

GpuStream::GpuStream() {
  cudaStream_t stream = nullptr;
  cuda::check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  stream_ = stream;
}

GpuStream::~GpuStream() {
  cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

void GpuStream::synchronize() const {
  cuda::check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "cudaStreamSynchronize");
}

double deviceCopyRate(std::size_t bytes) {
  return cuda::deviceCopyRate(bytes) / 1e9;
}

#else

}  // namespace chorus::cli

namespace chorus::cuda {
class DeviceBytes {};  // without CUDA no GpuMirror is ever made
}  // namespace chorus::cuda

namespace chorus::cli {

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
