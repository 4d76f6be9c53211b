// Element data types and reduction operators of the runtime, their names, and the
// float16/bfloat16 <-> float conversions the reduction kernels use (runtime layer).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "chorus/types.h"

namespace chorus::runtime {

using ::chorus::DataType;  // include/chorus/types.h
using ::chorus::ReduceOp;  // avg reduces as sum; the caller divides once (see divideElements)

// Size of one element in bytes (1, 4, 8, or 2 for float16/bfloat16).
std::size_t dataTypeSize(DataType type);

// Canonical name: "int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "bfloat16",
// "float32", "float64".
std::string_view dataTypeName(DataType type);

// Accepts the canonical names and the nccl-tests/short spellings (i8 u8 char int8_t i32 int u32
// uint i64 long u64 ulong f16 half fp16 bf16 f32 float fp32 f64 double fp64, ...), case-sensitive.
// Returns nullopt for anything else; callers turn that into an OptionError naming the choices.
std::optional<DataType> parseDataType(std::string_view name);

// "sum", "prod", "min", "max", "avg".
std::string_view reduceOpName(ReduceOp op);

// Accepts the canonical names (and "product", "mean"); nullopt otherwise.
std::optional<ReduceOp> parseReduceOp(std::string_view name);

// Every value of the enum, in declaration order (for test sweeps and help texts).
const std::vector<DataType>& allDataTypes();
inline constexpr std::size_t kDataTypeCount = 10;  // allDataTypes().size()
const std::vector<ReduceOp>& allReduceOps();

// IEEE 754 binary16 and bfloat16 <-> binary32. Float-to-narrow rounds to nearest, ties to even;
// overflow gives +-Inf; Inf is preserved; NaN stays NaN (quieted, sign and top payload bits
// kept). Every non-NaN binary16/bfloat16 value converts to float and back bit-exactly.
// Thread-safe, no state. Assumes the default floating-point rounding mode.
float halfToFloat(std::uint16_t bits);
std::uint16_t floatToHalf(float value);
float bfloat16ToFloat(std::uint16_t bits);
std::uint16_t floatToBfloat16(float value);

namespace detail {

// The vector instantiations are always inlined into the kernels, so the note that 32-byte
// vector arguments change the ABI without AVX does not apply to them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

// Reinterprets the bits of `from` (scalars and GCC vectors). memcpy rather than std::bit_cast:
// GCC 12's UBSan reports a false null load for bit_cast on vector types in target("avx2") code.
template <typename To, typename From>
[[gnu::always_inline]] inline To bitsAs(const From& from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  __builtin_memcpy(&to, &from, sizeof(To));
  return to;
}

// Branch-free conversion bodies shared by the scalar functions above and the vectorized kernels
// in reduce_kernels.cpp. U is std::uint32_t or a GCC vector of std::uint32_t holding one 16- or
// 32-bit pattern per lane; S and F are the signed-integer and float types of the same shape.
// Every select is written as `mask ? x : y` so the same text compiles for scalars and vectors.
template <class U>
[[gnu::always_inline]] inline U splatBits(std::uint32_t value) {
  return U{} + value;
}

// Algorithm (binary16 -> binary32), per lane, with e = the 15 magnitude bits:
//   1. normal (0x0400 <= e < 0x7c00): shift up by 13 and rebias the exponent by 127 - 15;
//   2. zero/subnormal (e < 0x0400): build 2^-14 * (1 + e/1024) and subtract 2^-14 (exact,
//      Sterbenz), which leaves e * 2^-24;
//   3. Inf/NaN (e >= 0x7c00): shift up by 13, set the exponent to all ones, quiet a NaN;
//   4. OR in the sign.
template <class U, class S, class F>
[[gnu::always_inline]] inline U halfBitsToFloatBits(const U& h) {
  const U e = h & 0x7fffu;
  const S se = bitsAs<S>(e);
  const U shifted = e << 13;
  const U normal = shifted + ((127u - 15u) << 23);
  const U special = shifted | (se > 0x7c00 ? splatBits<U>(0x7fc00000u) : splatBits<U>(0x7f800000u));
  const U subnormal = bitsAs<U>(bitsAs<F>(shifted | 0x38800000u) - 0x1p-14f);
  U bits = se < 0x0400 ? subnormal : normal;
  bits = se >= 0x7c00 ? special : bits;
  return bits | ((h & 0x8000u) << 16);
}

// Algorithm (binary32 -> binary16, round to nearest even), per lane, with a = |x| bits:
//   1. normal result (a >= 2^-14): rebias the exponent, add 0xfff plus the lowest kept bit
//      (ties to even), shift down by 13; a mantissa carry correctly bumps the exponent;
//   2. subnormal result (a < 2^-14): add 0.5f in float, so the float unit rounds the value to a
//      multiple of 2^-24 (ties to even); the low mantissa bits are then the binary16 pattern
//      (0x0400 when it rounds up to the smallest normal);
//   3. a >= 65520 (the midpoint above 65504, which ties up): Inf; NaN: quiet NaN with the top
//      payload bits; 4. OR in the sign.
template <class U, class S, class F>
[[gnu::always_inline]] inline U floatBitsToHalfBits(const U& x) {
  const U a = x & 0x7fffffffu;
  const S sa = bitsAs<S>(a);
  const U normal = (a - ((127u - 15u) << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;
  const U subnormal = bitsAs<U>(bitsAs<F>(a) + 0.5f) - 0x3f000000u;
  U bits = sa < 0x38800000 ? subnormal : normal;
  bits = sa >= 0x477ff000 ? splatBits<U>(0x7c00u) : bits;
  bits = sa > 0x7f800000 ? (((a >> 13) & 0x3ffu) | 0x7e00u) : bits;
  return bits | ((x >> 16) & 0x8000u);
}

// bfloat16 is the top half of a binary32: widening is a shift.
template <class U>
[[gnu::always_inline]] inline U bfloat16BitsToFloatBits(const U& h) {
  return h << 16;
}

// Round to nearest even by adding 0x7fff plus the lowest kept bit; NaN keeps its top bits and is
// quieted (so a NaN whose payload sits only in the dropped bits does not turn into Inf).
template <class U, class S>
[[gnu::always_inline]] inline U floatBitsToBfloat16Bits(const U& x) {
  const S sa = bitsAs<S>(x & 0x7fffffffu);
  const U rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  return sa > 0x7f800000 ? ((x >> 16) | 0x40u) : rounded;
}

#pragma GCC diagnostic pop

}  // namespace detail

}  // namespace chorus::runtime
