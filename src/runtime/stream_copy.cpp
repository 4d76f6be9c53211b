#include "runtime/stream_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include <unistd.h>

#include "runtime/reduce_kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CHORUS_STREAM_X86 1
#else
#define CHORUS_STREAM_X86 0
#endif

namespace chorus::runtime {

namespace {

#if CHORUS_STREAM_X86
// Whole 64-byte lines from a 64-byte aligned dst; returns the bytes copied.
[[gnu::target("avx2")]] std::size_t streamLinesAvx2(std::uint8_t* dst, const std::uint8_t* src,
                                                    std::size_t bytes) {
  const std::size_t lines = bytes / 64;
  for (std::size_t i = 0; i < lines; ++i) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 64 * i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 64 * i + 32));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + 64 * i), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + 64 * i + 32), b);
  }
  return lines * 64;
}

std::size_t streamLinesSse2(std::uint8_t* dst, const std::uint8_t* src, std::size_t bytes) {
  const std::size_t lines = bytes / 64;
  for (std::size_t i = 0; i < lines; ++i)
    for (std::size_t k = 0; k < 64; k += 16)
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 64 * i + k),
                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 64 * i + k)));
  return lines * 64;
}

bool cpuSupportsAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}

const bool kHasAvx2 = cpuSupportsAvx2();
#endif

// Below this a copy is too short for streaming to pay (and its lines are likely cached).
constexpr std::size_t kMinStreamBytes = 4096;
// streamReduce's block: computed into L1, then streamed.
constexpr std::size_t kReduceBlockBytes = 8192;

// streamCopy without the closing fence; true if it streamed.
bool streamCopyUnfenced(void* dst, const void* src, std::size_t bytes) {
#if CHORUS_STREAM_X86
  if (bytes >= kMinStreamBytes) {
    auto* d = static_cast<std::uint8_t*>(dst);
    const auto* s = static_cast<const std::uint8_t*>(src);
    const std::size_t head = (64 - reinterpret_cast<std::uintptr_t>(d) % 64) % 64;
    std::memcpy(d, s, head);
    const std::size_t body = kHasAvx2 ? streamLinesAvx2(d + head, s + head, bytes - head)
                                      : streamLinesSse2(d + head, s + head, bytes - head);
    std::memcpy(d + head + body, s + head + body, bytes - head - body);
    return true;
  }
#endif
  std::memcpy(dst, src, bytes);
  return false;
}

void fence() {
#if CHORUS_STREAM_X86
  _mm_sfence();
#endif
}

}  // namespace

std::size_t callWorkingSetBytes(std::size_t inBytes, std::size_t outBytes, bool overlapping,
                                int ranks) {
  const std::size_t perRank = overlapping ? std::max(inBytes, outBytes) : inBytes + outBytes;
  return perRank * static_cast<std::size_t>(std::max(ranks, 1));
}

std::size_t defaultStreamingWorkingSetBytes() {
  static const std::size_t threshold = [] {
    long cache = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (cache <= 0) cache = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return cache > 0 ? static_cast<std::size_t>(cache) / 3 : std::size_t{12} << 20;
  }();
  return threshold;
}

bool callStreams(std::size_t inBytes, std::size_t outBytes, bool overlapping, int ranks,
                 bool reduces, std::size_t threshold) {
  if (threshold == 0) return false;
  if (reduces)
    return std::max(inBytes, outBytes) >= std::min(threshold, kReducingStreamingCallBytes);
  return callWorkingSetBytes(inBytes, outBytes, overlapping, ranks) >= threshold;
}

void streamCopy(void* dst, const void* src, std::size_t bytes) {
  if (streamCopyUnfenced(dst, src, bytes)) fence();
}

void streamReduce(DataType type, ReduceOp op, void* dst, const void* a, const void* b,
                  std::size_t count) {
  const std::size_t size = dataTypeSize(type);
  if (count * size < kMinStreamBytes) return reduceElements(type, op, dst, a, b, count);
  alignas(64) std::uint8_t block[kReduceBlockBytes];
  const std::size_t perBlock = kReduceBlockBytes / size;
  for (std::size_t done = 0; done < count; done += perBlock) {
    const std::size_t n = std::min(perBlock, count - done);
    const std::size_t at = done * size;
    reduceElements(type, op, block, static_cast<const std::uint8_t*>(a) + at,
                   static_cast<const std::uint8_t*>(b) + at, n);
    streamCopyUnfenced(static_cast<std::uint8_t*>(dst) + at, block, n * size);
  }
  fence();
}

}  // namespace chorus::runtime
