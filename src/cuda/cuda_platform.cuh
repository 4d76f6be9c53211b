// The GPU build of the device interpreter (cuda layer): a block is a CUDA block (a multiple of
// 32 threads), an LL128 line is written by 16 lanes of a warp, flags are PTX acquire/release
// accesses at system scope (peers may be other GPUs or the host), waits back off with
// __nanosleep, and the clock is the GPU's global timer. block_interpreter.h runs on it; its
// host twin is device/host_platform.h.
#pragma once

#include <cstdint>

namespace chorus::cuda {

struct CudaPlatform {
  static constexpr int kLineLanes = 16;

  __device__ static int thread() { return static_cast<int>(threadIdx.x); }
  __device__ static int threads() { return static_cast<int>(blockDim.x); }
  __device__ static void syncBlock() { __syncthreads(); }
  __device__ static bool syncBlockOr(bool value) { return __syncthreads_or(value ? 1 : 0) != 0; }
  __device__ static void syncWarp() { __syncwarp(); }
  // Simple: every thread's payload stores, then (after the block barrier) thread 0's fence,
  // then its release store of the flag.
  __device__ static void fenceSystem() { __threadfence_system(); }

  __device__ static std::uint64_t loadAcquire(const std::uint64_t* p) {
    std::uint64_t v;
    asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
  }
  __device__ static std::uint64_t loadRelaxed(const std::uint64_t* p) {
    std::uint64_t v;
    asm volatile("ld.relaxed.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
  }
  __device__ static void storeRelease(std::uint64_t* p, std::uint64_t value) {
    asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(p), "l"(value) : "memory");
  }
  __device__ static void storeRelaxed(std::uint64_t* p, std::uint64_t value) {
    asm volatile("st.relaxed.sys.u64 [%0], %1;" ::"l"(p), "l"(value) : "memory");
  }
  __device__ static std::uint32_t loadFlag(const std::uint32_t* p) {
    std::uint32_t v;
    asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
  }
  __device__ static void raiseFlag(std::uint32_t* p) {
    asm volatile("st.release.sys.u32 [%0], %1;" ::"l"(p), "r"(1u) : "memory");
  }
  __device__ static bool claim(std::uint32_t* p, std::uint32_t value = 1) {
    return atomicCAS_system(reinterpret_cast<unsigned int*>(p), 0u, value) == 0u;
  }
  __device__ static void load16(void* out, const void* p) {
    *static_cast<uint4*>(out) = *static_cast<const uint4*>(p);
  }
  __device__ static void store16(void* p, const void* in) {
    *static_cast<uint4*>(p) = *static_cast<const uint4*>(in);
  }
  __device__ static std::uint64_t nowNs() {
    std::uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
  }
  __device__ static void pause() { __nanosleep(64); }
};

}  // namespace chorus::cuda
