// Memory the CUDA executors use (cuda layer): CUDA errors as CommError, device memory that
// grows on demand, mapped pinned host memory, a call's staging buffers on a stream, uploads of
// host arrays, and a guard of the calling thread's current device.
#pragma once

#include <cstddef>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "device/call_layout.h"

namespace chorus::cuda {

// Throws CommError "CUDA <what> failed: <error>" unless `error` is cudaSuccess.
void check(cudaError_t error, std::string_view what);

// Device memory on one GPU that grows on demand (its contents are not kept when it grows).
class DeviceBytes {
 public:
  DeviceBytes() = default;
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  DeviceBytes(DeviceBytes&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  ~DeviceBytes() {
    if (data_) cudaFree(data_);
  }
  bool fits(std::size_t bytes) const { return data_ != nullptr && bytes <= size_; }
  unsigned char* reserve(int device, std::size_t bytes) {
    if (bytes <= size_ && data_) return data_;
    if (data_) cudaFree(data_);
    data_ = nullptr;
    size_ = 0;
    check(cudaSetDevice(device), "cudaSetDevice");
    void* p = nullptr;
    check(cudaMalloc(&p, bytes < 256 ? 256 : bytes),
          fmt::format("cudaMalloc of {} bytes on GPU {}", bytes, device));
    data_ = static_cast<unsigned char*>(p);
    size_ = bytes < 256 ? 256 : bytes;
    return data_;
  }
  unsigned char* data() const { return data_; }

 private:
  unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
};

// Pinned host memory the GPUs map (the abort flag, the ranks' statuses), zeroed.
template <typename T>
class MappedHost {
 public:
  explicit MappedHost(std::size_t count) {
    void* p = nullptr;
    check(cudaHostAlloc(&p, count * sizeof(T), cudaHostAllocMapped | cudaHostAllocPortable),
          "cudaHostAlloc");
    std::memset(p, 0, count * sizeof(T));
    host_ = static_cast<T*>(p);
    void* d = nullptr;
    check(cudaHostGetDevicePointer(&d, p, 0), "cudaHostGetDevicePointer");
    device_ = static_cast<T*>(d);
  }
  MappedHost(const MappedHost&) = delete;
  MappedHost& operator=(const MappedHost&) = delete;
  ~MappedHost() { cudaFreeHost(host_); }
  T* host() const { return host_; }
  T* device() const { return device_; }

 private:
  T* host_ = nullptr;
  T* device_ = nullptr;
};

// A call's staged and scratch buffers in the rank's device memory, filled on its stream.
class CudaCallMemory final : public device::CallMemory {
 public:
  int device = 0;
  cudaStream_t stream = nullptr;

  unsigned char* zeroed(ir::BufferKind kind, std::size_t bytes) override {
    DeviceBytes& buffer = buffers_[static_cast<int>(kind)];
    // Growing frees the old buffer, which calls queued earlier may still use.
    if (!buffer.fits(bytes)) check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    unsigned char* p = buffer.reserve(device, bytes);
    check(cudaMemsetAsync(p, 0, bytes, stream), "cudaMemsetAsync");
    return p;
  }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream), "cudaMemcpyAsync");
  }

 private:
  DeviceBytes buffers_[3];
};

// Copies `values` into `bytes` (grown on `device` as needed); the device address.
template <typename T>
T* upload(DeviceBytes& bytes, int device, const std::vector<T>& values) {
  unsigned char* p = bytes.reserve(device, values.size() * sizeof(T));
  if (!values.empty())
    check(cudaMemcpy(p, values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice),
          "cudaMemcpy");
  return reinterpret_cast<T*>(p);
}

// Restores the calling thread's current device on scope exit (the group sets each rank's).
class CurrentDeviceGuard {
 public:
  CurrentDeviceGuard() { check(cudaGetDevice(&device_), "cudaGetDevice"); }
  ~CurrentDeviceGuard() { cudaSetDevice(device_); }
  CurrentDeviceGuard(const CurrentDeviceGuard&) = delete;
  CurrentDeviceGuard& operator=(const CurrentDeviceGuard&) = delete;
  int device() const { return device_; }

 private:
  int device_ = 0;
};

}  // namespace chorus::cuda
