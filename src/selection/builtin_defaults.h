// The built-in default plan (selection layer): a library algorithm for every built-in
// collective, rank count >= 1 and size, used when no CHORUS_ALGO entry or CHORUS_ALGO_DIR plan
// applies.
#pragma once

#include <cstdint>

#include "compiler/pipeline.h"
#include "runtime/plan_provider.h"

namespace chorus::selection {

// Provisional (issue 4 tunes it): AllReduce up to this size on up to kOneShotMaxRanks ranks uses
// allreduce.oneshot (1 step: the least latency, R-1 times the bytes).
inline constexpr std::uint64_t kAllReduceOneShotBytes = 16 * 1024;
inline constexpr int kOneShotMaxRanks = 8;
// Provisional (issue 4 tunes it): AllReduce below this size uses allreduce.allpairs (2 steps),
// at or above it allreduce.ring (bandwidth-optimal).
inline constexpr std::uint64_t kAllReduceRingBytes = 256 * 1024;
// allreduce.allpairs has R*R chunks and R*(R-1) messages per phase; above this many ranks the
// ring is used at every size.
inline constexpr int kAllPairsMaxRanks = 16;

// The default for `request` (a built-in collective, 1 <= nranks <= 256, 0 <= root < nranks):
//   1 rank: "<collective>.self" (a local copy, or nothing in place);
//   allreduce: allreduce.oneshot up to kAllReduceOneShotBytes (up to kOneShotMaxRanks ranks),
//     allreduce.allpairs below kAllReduceRingBytes (up to kAllPairsMaxRanks ranks),
//     else allreduce.ring; allgather.ring; reducescatter.ring; alltoall.direct;
//   broadcast.binomial and reduce.binomial rooted at request.root.
// Compiled on first use for FIFOs of `fifoSlots` slots and cached process-wide (plan_cache.h).
// Plan::source says why, e.g. "built-in default: >= 256 KiB". Throws OptionError for a custom
// collective.
runtime::Plan defaultPlan(const runtime::PlanRequest& request,
                          int fifoSlots = compiler::kDefaultFifoSlots);

}  // namespace chorus::selection
