// The host build of the device interpreter (device layer): a block is one CPU thread, a warp
// is that thread, flags are std::atomic_ref accesses with the CPU's memory model and waits
// yield the core. block_interpreter.h runs on it in CI, where no GPU is present
// (docs/gpu.md "Testing without a GPU"); cuda/cuda_platform.cuh is the GPU's.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>

namespace chorus::device {

struct HostPlatform {
  static constexpr int kLineLanes = 1;  // threads writing one LL128 line together

  static int thread() { return 0; }
  static int threads() { return 1; }
  static void syncBlock() {}
  static bool syncBlockOr(bool value) { return value; }
  static void syncWarp() {}
  // Simple: the payload was written by this thread; the release store of the flag orders it.
  static void fenceSystem() {}

  static std::uint64_t loadAcquire(const std::uint64_t* p) {
    return std::atomic_ref<std::uint64_t>(*const_cast<std::uint64_t*>(p))
        .load(std::memory_order_acquire);
  }
  static std::uint64_t loadRelaxed(const std::uint64_t* p) {
    return std::atomic_ref<std::uint64_t>(*const_cast<std::uint64_t*>(p))
        .load(std::memory_order_relaxed);
  }
  static void storeRelease(std::uint64_t* p, std::uint64_t value) {
    std::atomic_ref<std::uint64_t>(*p).store(value, std::memory_order_release);
  }
  static void storeRelaxed(std::uint64_t* p, std::uint64_t value) {
    std::atomic_ref<std::uint64_t>(*p).store(value, std::memory_order_relaxed);
  }
  static std::uint32_t loadFlag(const std::uint32_t* p) {
    return std::atomic_ref<std::uint32_t>(*const_cast<std::uint32_t*>(p))
        .load(std::memory_order_acquire);
  }
  static void raiseFlag(std::uint32_t* p) {
    std::atomic_ref<std::uint32_t>(*p).store(1, std::memory_order_release);
  }
  // Stores `value` if *p is 0; true for that first caller only (KernelArgs::statusClaimed,
  // failedRank).
  static bool claim(std::uint32_t* p, std::uint32_t value = 1) {
    std::uint32_t expected = 0;
    return std::atomic_ref<std::uint32_t>(*p).compare_exchange_strong(expected, value,
                                                                      std::memory_order_acq_rel);
  }
  static void load16(void* out, const void* p) { std::memcpy(out, p, 16); }
  static void store16(void* p, const void* in) { std::memcpy(p, in, 16); }

  static std::uint64_t nowNs() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
  }
  static void pause() { std::this_thread::yield(); }
};

}  // namespace chorus::device
