// Copies for data that is not read again soon (a large call's output): non-temporal stores
// write whole cache lines straight to memory, so the destination is not first read into the
// cache (no read-for-ownership). On this machine a 256 KiB tile copied memory to memory runs at
// 8.2-8.7 GB/s this way against 5.4-5.9 GB/s with memcpy (docs/performance.md). For data that
// is read again soon (FIFO slots, scratch, small calls) memcpy stays the right copy.
#pragma once

#include <cstddef>

#include "runtime/datatype.h"

namespace chorus::runtime {

// Calls of at least this many bytes stream by default (ExecOptions::streamingCallBytes).
inline constexpr std::size_t kDefaultStreamingCallBytes = std::size_t{4} << 20;

// memcpy(dst, src, bytes) with non-temporal stores where the CPU has them (x86-64; AVX2 when
// present); the stores are fenced before it returns. The ranges must not overlap.
void streamCopy(void* dst, const void* src, std::size_t bytes);

// dst = a op b (reduceElements' contract, dst may be a or b), the result stored with
// non-temporal stores: it is computed in blocks that stay in L1 and streamed out.
void streamReduce(DataType type, ReduceOp op, void* dst, const void* a, const void* b,
                  std::size_t count);

}  // namespace chorus::runtime
