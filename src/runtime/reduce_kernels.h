// Element-wise reduction kernels of the runtime (the hot loop of reduce/allreduce steps):
// dst = a op b, multi-source reduce, and the final division of ReduceOp::avg.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/datatype.h"

namespace chorus::runtime {

// dst[i] = a[i] op b[i] for i < count, with `count` elements of `type`.
// Aliasing: dst may be exactly a or b (same pointer); any other overlap is undefined.
// Pointers need only the natural alignment of bytes (unaligned is fine); count may be 0.
// Semantics: integers wrap on overflow (two's complement) for sum and prod; min/max compare as
// signed/unsigned per type. avg reduces as sum (divide once at the end with divideElements).
// float16/bfloat16 compute in float and round once per operation to nearest even, so the result
// is the correctly rounded a op b. Floating min/max equal std::min/std::max on non-NaN inputs
// (for -0 vs +0 they return a); if either input is NaN the result is NaN (the NaN of b when b is
// NaN, otherwise the NaN of a), so the result does not depend on operand order.
// Thread-safe (no state); vectorized (AVX2 when the CPU has it, SSE2 otherwise).
void reduceElements(DataType type, ReduceOp op, void* dst, const void* a, const void* b,
                    std::size_t count);

// data[i] /= divisor for i < count. Integers: truncating division toward zero (as NCCL's ncclAvg
// on integers); floats: one correctly rounded division per element (not multiply by 1/divisor);
// float16/bfloat16 divide in float and round to nearest even. Precondition: divisor >= 1
// (the caller passes a rank count). Thread-safe.
void divideElements(DataType type, void* data, std::size_t count, int divisor);

// dst = srcs[0] op srcs[1] op ... op srcs[nsrc-1], folded left to right, element-wise: the result
// is bit-identical to chaining reduceElements (float16/bfloat16 round after every step), so fused
// and unfused schedules agree exactly. Precondition: nsrc >= 1 (nsrc == 1 copies). dst may be
// exactly any of the sources; other overlap is undefined. avg reduces as sum. Thread-safe.
void reduceMany(DataType type, ReduceOp op, void* dst, const void* const* srcs, int nsrc,
                std::size_t count);

namespace detail {

// Which vector code the kernels run: baseline x86-64 (SSE2, 16-byte vectors) or AVX2 (32-byte),
// chosen once from the CPU. Exposed so tests cover both paths on AVX2 hosts.
enum class KernelIsa : std::uint8_t { baseline, avx2 };
KernelIsa activeKernelIsa();
// Switches the kernels to `isa` for every thread; returns false (and changes nothing) when the
// CPU lacks it. Tests only: call while no kernel runs.
bool forceKernelIsaForTesting(KernelIsa isa);

}  // namespace detail

}  // namespace chorus::runtime
