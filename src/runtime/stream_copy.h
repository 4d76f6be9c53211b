// Copies for data that is not read again soon (a large call's output): non-temporal stores
// write whole cache lines straight to memory, so the destination is not first read into the
// cache (no read-for-ownership). They pay only once a call's data no longer fits the cache;
// where it fits, cached stores leave the output where the next reader finds it
// (docs/performance.md). For data that is read again soon (FIFO slots, scratch) memcpy stays
// the right copy.
#pragma once

#include <cstddef>

#include "runtime/datatype.h"

namespace chorus::runtime {

// A call streams once its working set reaches ExecOptions::streamingWorkingSetBytes: the bytes
// of its buffers on one rank (input + output, or the larger where they overlap) times its ranks.
std::size_t callWorkingSetBytes(std::size_t inBytes, std::size_t outBytes, bool overlapping,
                                int ranks);

// The default threshold: a third of this machine's last-level cache (sysconf), which leaves the
// rest to the slots, the peers' other data and the neighbours of a shared machine. Measured
// here (L3 300 MiB, 2 ranks): a 32 MiB AllGather in place (64 MiB working set) ran 1.3x faster
// with cached stores, a 48 MiB one out of place (144 MiB) 1.4-2x faster streamed
// (docs/performance.md). 12 MiB where the cache size is unknown.
std::size_t defaultStreamingWorkingSetBytes();

// Reductions keep the rule that measured best for them: they stream from a call (larger
// buffer) of kReducingStreamingCallBytes, or of `threshold` where that is smaller (so a tiny
// threshold still forces streaming in tests). At 4 ranks on 2 cores, a 4 MiB in-place
// AllReduce ran 1.2-1.6x slower with cached stores (docs/performance.md); at 2 ranks the two
// rules measured the same for reductions.
inline constexpr std::size_t kReducingStreamingCallBytes = std::size_t{4} << 20;

// Whether a call writes the caller's buffers with streaming stores: its working set reaches
// `threshold` (0: never), or, for a collective that reduces, as kReducingStreamingCallBytes
// says.
bool callStreams(std::size_t inBytes, std::size_t outBytes, bool overlapping, int ranks,
                 bool reduces, std::size_t threshold);

// memcpy(dst, src, bytes) with non-temporal stores where the CPU has them (x86-64; AVX2 when
// present); the stores are fenced before it returns. The ranges must not overlap.
void streamCopy(void* dst, const void* src, std::size_t bytes);

// dst = a op b (reduceElements' contract, dst may be a or b), the result stored with
// non-temporal stores: it is computed in blocks that stay in L1 and streamed out.
void streamReduce(DataType type, ReduceOp op, void* dst, const void* a, const void* b,
                  std::size_t count);

}  // namespace chorus::runtime
