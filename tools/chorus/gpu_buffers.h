// GPU memory for `chorus bench --device cuda` (CLI tool): a device copy of a host buffer, a
// stream, and the GPU's device-to-device copy rate (the ceiling docs/gpu.md "Benchmark"
// compares against). Where chorus is built without CUDA every entry point throws OptionError.
#pragma once

#include <cstddef>
#include <memory>

namespace chorus::cuda {
class DeviceBytes;
}

namespace chorus::cli {

// Throws OptionError unless chorus was built with CUDA.
void requireGpuBench();

// `bytes` of device memory of the current GPU (cuda::DeviceBytes), filled from and read back to
// host memory.
class GpuMirror {
 public:
  explicit GpuMirror(std::size_t bytes);
  ~GpuMirror();
  GpuMirror(const GpuMirror&) = delete;
  GpuMirror& operator=(const GpuMirror&) = delete;
  std::byte* device() const { return device_; }
  void upload(const std::byte* host, std::size_t bytes);
  void download(std::byte* host, std::size_t bytes) const;

 private:
  std::unique_ptr<cuda::DeviceBytes> memory_;
  std::byte* device_ = nullptr;
};

// A CUDA stream of the current GPU (a cudaStream_t), destroyed with its owner.
class GpuStream {
 public:
  GpuStream();
  ~GpuStream();
  GpuStream(const GpuStream&) = delete;
  GpuStream& operator=(const GpuStream&) = delete;
  void* get() const { return stream_; }
  void synchronize() const;

 private:
  void* stream_ = nullptr;
};

// GB/s (1e9 bytes) of a `bytes`-byte device-to-device cudaMemcpy on the current GPU
// (cuda::deviceCopyRate, as bench_gpu measures it).
double deviceCopyRate(std::size_t bytes);

}  // namespace chorus::cli
