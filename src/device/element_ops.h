// The element types and reduction operators of the device interpreter (device layer), one
// source for the host build and nvcc: float16 and bfloat16 held as bits and computed in float,
// integers wrapping on overflow, floating min/max propagating NaN. Every result equals the CPU
// reduction kernels' (runtime/reduce_kernels.h, whose contracts these follow), bit for bit;
// tests/device/element_ops_test.cpp checks that over every float16/bfloat16 pattern.
#pragma once

#include <cstdint>

#include "chorus/types.h"
#include "support/host_device.h"

namespace chorus::device {

struct Half {
  std::uint16_t bits;
};
struct BFloat16 {
  std::uint16_t bits;
};

CHORUS_HD inline std::uint32_t floatBits(float value) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(value);
#else
  std::uint32_t bits;
  __builtin_memcpy(&bits, &value, sizeof bits);
  return bits;
#endif
}
CHORUS_HD inline float floatOfBits(std::uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float value;
  __builtin_memcpy(&value, &bits, sizeof value);
  return value;
#endif
}

// IEEE binary16 -> binary32, exact; NaN stays NaN with its sign and payload (quieted).
CHORUS_HD inline float halfToFloat(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t magnitude = h & 0x7fffu;
  if (magnitude >= 0x7c00u) {  // Inf, NaN
    const std::uint32_t payload = (magnitude & 0x3ffu) << 13;
    return floatOfBits(sign | 0x7f800000u | payload | (payload ? 0x400000u : 0u));
  }
  if (magnitude >= 0x0400u) return floatOfBits(sign | ((magnitude << 13) + 0x38000000u));
  // Zero and subnormals: magnitude * 2^-24, exact in float.
  return floatOfBits(sign | floatBits(static_cast<float>(magnitude) * 5.9604644775390625e-8f));
}

// binary32 -> binary16, rounded to nearest even; overflow gives Inf; NaN stays NaN (quieted,
// sign and top payload bits kept). Assumes round-to-nearest floating point (the default).
CHORUS_HD inline std::uint16_t floatToHalf(float value) {
  const std::uint32_t bits = floatBits(value);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u)
    return static_cast<std::uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  if (magnitude >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520
  if (magnitude >= 0x38800000u) {  // a normal half: rebias the exponent, round 13 bits off
    const std::uint32_t rebiased = magnitude - 0x38000000u;
    return static_cast<std::uint16_t>(sign |
                                      ((rebiased + 0x0fffu + ((rebiased >> 13) & 1u)) >> 13));
  }
  // Below 2^-14: adding 0.5 (ulp 2^-24) rounds |value| to a multiple of 2^-24, which the low
  // mantissa bits then hold (a carry into the exponent gives the smallest normal, 0x0400).
  const float rounded = floatOfBits(magnitude) + 0.5f;
  return static_cast<std::uint16_t>(sign | (floatBits(rounded) - 0x3f000000u));
}

CHORUS_HD inline float bfloat16ToFloat(std::uint16_t b) {
  return floatOfBits(static_cast<std::uint32_t>(b) << 16);
}

// binary32 -> bfloat16, rounded to nearest even; NaN stays NaN (quieted).
CHORUS_HD inline std::uint16_t floatToBfloat16(float value) {
  const std::uint32_t bits = floatBits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  return static_cast<std::uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

// How an element type computes: float16/bfloat16 widen to float and round once per operation;
// integers wrap (two's complement) through their unsigned type.
template <typename T>
struct ElementTraits {
  using Compute = T;
  CHORUS_HD static Compute load(T v) { return v; }
  CHORUS_HD static T store(Compute v) { return v; }
};
template <>
struct ElementTraits<Half> {
  using Compute = float;
  CHORUS_HD static float load(Half v) { return halfToFloat(v.bits); }
  CHORUS_HD static Half store(float v) { return Half{floatToHalf(v)}; }
};
template <>
struct ElementTraits<BFloat16> {
  using Compute = float;
  CHORUS_HD static float load(BFloat16 v) { return bfloat16ToFloat(v.bits); }
  CHORUS_HD static BFloat16 store(float v) { return BFloat16{floatToBfloat16(v)}; }
};

template <typename T>
inline constexpr bool kIsFloating = false;
template <>
inline constexpr bool kIsFloating<float> = true;
template <>
inline constexpr bool kIsFloating<double> = true;

template <typename T>
struct UnsignedOf {
  using type = T;
};
template <>
struct UnsignedOf<std::int8_t> {
  using type = std::uint8_t;
};
template <>
struct UnsignedOf<std::int32_t> {
  using type = std::uint32_t;
};
template <>
struct UnsignedOf<std::int64_t> {
  using type = std::uint64_t;
};

// a op b in the compute type. avg combines as sum (the output is divided once at the end).
// Floating min/max: NaN wins (b's NaN when b is NaN, else a's); otherwise std::min/std::max,
// which return a on ties (-0 vs +0).
template <ReduceOp Op, typename C>
CHORUS_HD inline C combineValues(C a, C b) {
  if constexpr (Op == ReduceOp::sum || Op == ReduceOp::avg || Op == ReduceOp::prod) {
    if constexpr (kIsFloating<C>) {
      return Op == ReduceOp::prod ? a * b : a + b;
    } else {
      using U = typename UnsignedOf<C>::type;
      const U ua = static_cast<U>(a), ub = static_cast<U>(b);
      return static_cast<C>(Op == ReduceOp::prod ? static_cast<U>(ua * ub)
                                                 : static_cast<U>(ua + ub));
    }
  } else {
    if constexpr (kIsFloating<C>) {
      if (b != b) return b;
      if (a != a) return a;
    }
    if constexpr (Op == ReduceOp::min)
      return b < a ? b : a;
    else
      return a < b ? b : a;
  }
}

// The functor applyStep takes: a ⊕ b on stored elements.
template <typename T, ReduceOp Op>
struct Combine {
  CHORUS_HD T operator()(T a, T b) const {
    using E = ElementTraits<T>;
    return E::store(combineValues<Op>(E::load(a), E::load(b)));
  }
};

// v / divisor: integers truncate toward zero (NCCL's ncclAvg), floats divide once, correctly
// rounded; float16/bfloat16 divide in float and round to nearest even. A divisor of 1 leaves
// the bits alone (a signalling NaN stays as it is).
template <typename T>
CHORUS_HD inline T divideValue(T v, int divisor) {
  if (divisor == 1) return v;
  using E = ElementTraits<T>;
  using C = typename E::Compute;
  return E::store(static_cast<C>(E::load(v) / static_cast<C>(divisor)));
}

}  // namespace chorus::device
