// Tests of runtime data types and reduction kernels against scalar references: every
// (type, op) pair, odd lengths, aliasing, wraparound, float16/bfloat16 conversions.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "runtime/datatype.h"
#include "runtime/reduce_kernels.h"
#include "test_seed.h"

namespace chorus::runtime {
namespace {

constexpr std::size_t kLengths[] = {0, 1, 7, 63, 1000, 4097};

bool isHalfNan(std::uint16_t h) {
  return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
}
bool isBfloat16Nan(std::uint16_t h) {
  return (h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0;
}

// Independent binary16 decoder (ldexp on the fields).
double decodeHalf(std::uint16_t h) {
  const int sign = h >> 15;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  double magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(mantissa, -24);
  } else if (exponent == 31) {
    magnitude = mantissa == 0 ? INFINITY : NAN;
  } else {
    magnitude = std::ldexp(1024 + mantissa, exponent - 25);
  }
  return sign ? -magnitude : magnitude;
}

// Independent round-to-nearest-even of a finite double to a binary format with `precision`
// significand bits, smallest normal exponent `minExponent` and largest finite `maxFinite`.
double roundToFormat(double x, int precision, int minExponent, double maxFinite) {
  const double magnitude = std::fabs(x);
  if (magnitude == 0) return x;
  const int exponent = std::max(std::ilogb(magnitude), minExponent);
  const double ulp = std::ldexp(1.0, exponent - (precision - 1));
  double rounded = std::nearbyint(magnitude / ulp) * ulp;
  // Overflow: anything at or above max + ulp/2 (the tie goes to the even "next" power) is Inf.
  const double maxUlp = std::ldexp(1.0, std::ilogb(maxFinite) - (precision - 1));
  if (magnitude >= maxFinite + maxUlp / 2) rounded = INFINITY;
  return std::signbit(x) ? -rounded : rounded;
}

double roundToHalf(float x) {
  return roundToFormat(x, 11, -14, 65504.0);
}
double roundToBfloat16(float x) {
  return roundToFormat(x, 8, -126, std::ldexp(2.0 - 0x1p-7, 127));
}

TEST(DataTypeTest, NamesSizesAndParsingRoundTrip) {
  EXPECT_EQ(allDataTypes().size(), 10u);
  EXPECT_EQ(allReduceOps().size(), 5u);
  for (DataType type : allDataTypes()) {
    const auto parsed = parseDataType(dataTypeName(type));
    ASSERT_TRUE(parsed.has_value()) << dataTypeName(type);
    EXPECT_EQ(*parsed, type);
  }
  for (ReduceOp op : allReduceOps()) {
    const auto parsed = parseReduceOp(reduceOpName(op));
    ASSERT_TRUE(parsed.has_value()) << reduceOpName(op);
    EXPECT_EQ(*parsed, op);
  }
  EXPECT_EQ(dataTypeName(DataType::bfloat16), "bfloat16");
  EXPECT_EQ(dataTypeSize(DataType::int8), 1u);
  EXPECT_EQ(dataTypeSize(DataType::float16), 2u);
  EXPECT_EQ(dataTypeSize(DataType::bfloat16), 2u);
  EXPECT_EQ(dataTypeSize(DataType::uint32), 4u);
  EXPECT_EQ(dataTypeSize(DataType::float64), 8u);
  EXPECT_EQ(parseDataType("half"), DataType::float16);
  EXPECT_EQ(parseDataType("f16"), DataType::float16);
  EXPECT_EQ(parseDataType("bf16"), DataType::bfloat16);
  EXPECT_EQ(parseDataType("float"), DataType::float32);
  EXPECT_EQ(parseDataType("f32"), DataType::float32);
  EXPECT_EQ(parseDataType("double"), DataType::float64);
  EXPECT_EQ(parseDataType("int"), DataType::int32);
  EXPECT_EQ(parseDataType("i8"), DataType::int8);
  EXPECT_EQ(parseDataType("u64"), DataType::uint64);
  EXPECT_EQ(parseDataType("uint8"), DataType::uint8);
  EXPECT_EQ(parseDataType("float128"), std::nullopt);
  EXPECT_EQ(parseDataType(""), std::nullopt);
  EXPECT_EQ(parseReduceOp("mean"), ReduceOp::avg);
  EXPECT_EQ(parseReduceOp("xor"), std::nullopt);
}

TEST(DataTypeTest, EveryHalfConvertsToFloatAndBackExactly) {
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float f = halfToFloat(bits);
    const double expected = decodeHalf(bits);
    if (isHalfNan(bits)) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << h;
      EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << h;
      EXPECT_TRUE(isHalfNan(floatToHalf(f))) << std::hex << h;
      EXPECT_EQ(floatToHalf(f) & 0x8000, h & 0x8000) << std::hex << h;
      continue;
    }
    EXPECT_EQ(static_cast<double>(f), expected) << std::hex << h;
    EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << h;
    EXPECT_EQ(floatToHalf(f), bits) << std::hex << h;
  }
}

TEST(DataTypeTest, EveryBfloat16ConvertsToFloatAndBackExactly) {
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float f = bfloat16ToFloat(bits);
    EXPECT_EQ(std::bit_cast<std::uint32_t>(f), h << 16) << std::hex << h;
    if (isBfloat16Nan(bits)) {
      EXPECT_TRUE(isBfloat16Nan(floatToBfloat16(f))) << std::hex << h;
    } else {
      EXPECT_EQ(floatToBfloat16(f), bits) << std::hex << h;
    }
  }
}

TEST(DataTypeTest, HalfRoundingMatchesReference) {
  // Midpoints between neighbouring halves and one float ulp either side, plus random floats.
  std::vector<float> inputs{0.0f,
                            -0.0f,
                            65504.0f,
                            65519.99f,
                            65520.0f,
                            65536.0f,
                            1e-8f,
                            2.98023224e-8f /* 2^-25: tie to 0 */,
                            2.98023253e-8f,
                            6.0975552e-5f,
                            std::numeric_limits<float>::denorm_min(),
                            1e30f,
                            -1e30f};
  for (std::uint32_t h = 0; h < 0x7c00; ++h) {
    const double lo = decodeHalf(static_cast<std::uint16_t>(h));
    const double hi = h + 1 == 0x7c00 ? 65536.0 : decodeHalf(static_cast<std::uint16_t>(h + 1));
    const auto mid = static_cast<float>((lo + hi) / 2);  // exact: halves have 11 bits
    inputs.push_back(mid);
    inputs.push_back(std::nextafter(mid, 0.0f));
    inputs.push_back(std::nextafter(mid, INFINITY));
    inputs.push_back(-mid);
  }
  std::mt19937 rng(testing_support::testSeed());
  for (int i = 0; i < 200000; ++i) {
    const auto bits = static_cast<std::uint32_t>(rng());
    const float f = std::bit_cast<float>(bits);
    if (!std::isnan(f)) inputs.push_back(f);
  }
  for (float f : inputs) {
    const std::uint16_t h = floatToHalf(f);
    const double expected = roundToHalf(f);
    EXPECT_EQ(decodeHalf(h), expected) << f;
    EXPECT_EQ((h & 0x8000) != 0, std::signbit(f)) << f;
  }
  EXPECT_EQ(floatToHalf(INFINITY), 0x7c00);
  EXPECT_EQ(floatToHalf(-INFINITY), 0xfc00);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);
  EXPECT_EQ(floatToHalf(65519.996f), 0x7bff);
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f), 0x3c00);                         // tie to even (down)
  EXPECT_EQ(floatToHalf(1.0f + 3 * 0x1p-11f), 0x3c02);                     // tie to even (up)
  EXPECT_TRUE(isHalfNan(floatToHalf(std::bit_cast<float>(0x7f800001u))));  // payload in low bits
  EXPECT_TRUE(isHalfNan(floatToHalf(std::numeric_limits<float>::quiet_NaN())));
}

TEST(DataTypeTest, Bfloat16RoundingMatchesReference) {
  std::vector<float> inputs{0.0f,
                            -0.0f,
                            std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::denorm_min(),
                            1.0f + 0x1p-8f,
                            1.0f + 3 * 0x1p-8f,
                            1.0f + 0x1p-8f + 0x1p-23f};
  std::mt19937 rng(testing_support::testSeed());
  for (int i = 0; i < 200000; ++i) {
    const float f = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    if (!std::isnan(f) && !std::isinf(f)) inputs.push_back(f);
  }
  for (float f : inputs) {
    const double got = bfloat16ToFloat(floatToBfloat16(f));
    EXPECT_EQ(got, roundToBfloat16(f)) << f;
  }
  EXPECT_EQ(floatToBfloat16(1.0f + 0x1p-8f), 0x3f80);
  EXPECT_EQ(floatToBfloat16(1.0f + 3 * 0x1p-8f), 0x3f82);
  EXPECT_EQ(floatToBfloat16(std::numeric_limits<float>::max()), 0x7f80);  // rounds to Inf
  EXPECT_EQ(floatToBfloat16(-INFINITY), 0xff80);
  EXPECT_TRUE(isBfloat16Nan(floatToBfloat16(std::bit_cast<float>(0x7f800001u))));
}

// ---- Kernel references -------------------------------------------------------------------

template <class T>
T referenceOp(ReduceOp op, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::avg:
        return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
      case ReduceOp::prod:
        // Promote to at least unsigned int so uint8/uint16 products cannot overflow int.
        return static_cast<T>(static_cast<U>(static_cast<std::uint64_t>(static_cast<U>(a)) *
                                             static_cast<std::uint64_t>(static_cast<U>(b))));
      case ReduceOp::min:
        return std::min(a, b);
      case ReduceOp::max:
        return std::max(a, b);
    }
  } else {
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::avg:
        return a + b;
      case ReduceOp::prod:
        return a * b;
      case ReduceOp::min:
        if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
        return std::min(a, b);
      case ReduceOp::max:
        if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
        return std::max(a, b);
    }
  }
  return T{};
}

// Scalar reference of one element, on raw bytes.
void referenceElement(DataType type, ReduceOp op, void* dst, const void* a, const void* b) {
  const auto apply = [&]<class T>() {
    T x, y;
    std::memcpy(&x, a, sizeof(T));
    std::memcpy(&y, b, sizeof(T));
    const T r = referenceOp(op, x, y);
    std::memcpy(dst, &r, sizeof(T));
  };
  const auto applyNarrow = [&](float (*widen)(std::uint16_t), std::uint16_t (*narrow)(float)) {
    std::uint16_t x, y;
    std::memcpy(&x, a, 2);
    std::memcpy(&y, b, 2);
    const std::uint16_t r = narrow(referenceOp(op, widen(x), widen(y)));
    std::memcpy(dst, &r, 2);
  };
  switch (type) {
    case DataType::int8:
      return apply.operator()<std::int8_t>();
    case DataType::uint8:
      return apply.operator()<std::uint8_t>();
    case DataType::int32:
      return apply.operator()<std::int32_t>();
    case DataType::uint32:
      return apply.operator()<std::uint32_t>();
    case DataType::int64:
      return apply.operator()<std::int64_t>();
    case DataType::uint64:
      return apply.operator()<std::uint64_t>();
    case DataType::float16:
      return applyNarrow(halfToFloat, floatToHalf);
    case DataType::bfloat16:
      return applyNarrow(bfloat16ToFloat, floatToBfloat16);
    case DataType::float32:
      return apply.operator()<float>();
    case DataType::float64:
      return apply.operator()<double>();
  }
}

bool isFloating(DataType type) {
  return type == DataType::float16 || type == DataType::bfloat16 || type == DataType::float32 ||
         type == DataType::float64;
}

bool isNanElement(DataType type, const std::uint8_t* p) {
  switch (type) {
    case DataType::float16: {
      std::uint16_t h;
      std::memcpy(&h, p, 2);
      return isHalfNan(h);
    }
    case DataType::bfloat16: {
      std::uint16_t h;
      std::memcpy(&h, p, 2);
      return isBfloat16Nan(h);
    }
    case DataType::float32: {
      float f;
      std::memcpy(&f, p, 4);
      return std::isnan(f);
    }
    case DataType::float64: {
      double d;
      std::memcpy(&d, p, 8);
      return std::isnan(d);
    }
    default:
      return false;
  }
}

// Random elements: integers use all bits (exercising wraparound); floats are moderate values
// (so products stay finite), with the occasional NaN/Inf/-0 when `specials`.
std::vector<std::uint8_t> randomElements(DataType type, std::size_t count, std::mt19937& rng,
                                         bool specials = false) {
  const std::size_t size = dataTypeSize(type);
  std::vector<std::uint8_t> bytes(count * size);
  std::uniform_real_distribution<float> values(-4.0f, 4.0f);
  for (std::size_t i = 0; i < count; ++i) {
    std::uint8_t* p = bytes.data() + i * size;
    float value = values(rng);
    if (specials && rng() % 8 == 0) {
      const float kSpecial[] = {NAN, -NAN, INFINITY, -INFINITY, -0.0f, 0.0f};
      value = kSpecial[rng() % 6];
    }
    switch (type) {
      case DataType::float16: {
        const std::uint16_t h = floatToHalf(value);
        std::memcpy(p, &h, 2);
        break;
      }
      case DataType::bfloat16: {
        const std::uint16_t h = floatToBfloat16(value);
        std::memcpy(p, &h, 2);
        break;
      }
      case DataType::float32:
        std::memcpy(p, &value, 4);
        break;
      case DataType::float64: {
        const double d =
            static_cast<double>(value) * (1.0 + 1e-9 * static_cast<double>(rng() % 1000));
        std::memcpy(p, &d, 8);
        break;
      }
      default:
        for (std::size_t b = 0; b < size; ++b)
          p[b] = static_cast<std::uint8_t>(rng());
    }
  }
  return bytes;
}

// Compares `got` with the scalar reference of a op b element by element (NaN matches any NaN).
void expectMatchesReference(DataType type, ReduceOp op, const std::uint8_t* got,
                            const std::uint8_t* a, const std::uint8_t* b, std::size_t count,
                            const std::string& what) {
  const std::size_t size = dataTypeSize(type);
  std::uint8_t expected[8];
  for (std::size_t i = 0; i < count; ++i) {
    referenceElement(type, op, expected, a + i * size, b + i * size);
    if (isFloating(type) && isNanElement(type, expected)) {
      ASSERT_TRUE(isNanElement(type, got + i * size)) << what << " element " << i;
      continue;
    }
    ASSERT_EQ(std::memcmp(expected, got + i * size, size), 0)
        << what << " element " << i << " of " << count;
  }
}

std::string describe(DataType type, ReduceOp op, std::size_t count) {
  return std::string(dataTypeName(type)) + " " + std::string(reduceOpName(op)) +
         " n=" + std::to_string(count);
}

// Runs each kernel test on the baseline (SSE2) path and, where the CPU has it, the AVX2 path.
class ReduceKernelsTest : public ::testing::TestWithParam<detail::KernelIsa> {
 protected:
  void SetUp() override {
    saved_ = detail::activeKernelIsa();
    if (!detail::forceKernelIsaForTesting(GetParam())) GTEST_SKIP() << "CPU lacks this ISA";
  }
  void TearDown() override { detail::forceKernelIsaForTesting(saved_); }

 private:
  detail::KernelIsa saved_ = detail::KernelIsa::baseline;
};

INSTANTIATE_TEST_SUITE_P(Isa, ReduceKernelsTest,
                         ::testing::Values(detail::KernelIsa::baseline, detail::KernelIsa::avx2),
                         [](const auto& info) {
                           return info.param == detail::KernelIsa::avx2 ? "avx2" : "baseline";
                         });

TEST_P(ReduceKernelsTest, EveryTypeAndOpMatchesScalarReference) {
  std::mt19937 rng(testing_support::testSeed());
  for (DataType type : allDataTypes()) {
    const std::size_t size = dataTypeSize(type);
    for (ReduceOp op : allReduceOps()) {
      for (std::size_t count : kLengths) {
        for (bool specials : {false, true}) {
          const std::string what = describe(type, op, count) + (specials ? " specials" : "");
          const auto a = randomElements(type, count, rng, specials);
          const auto b = randomElements(type, count, rng, specials);
          // Separate dst, offset by one byte (unaligned) with canaries on both sides.
          std::vector<std::uint8_t> storage(count * size + 2 + size, 0xa5);
          std::uint8_t* dst = storage.data() + 1;
          reduceElements(type, op, dst, a.data(), b.data(), count);
          expectMatchesReference(type, op, dst, a.data(), b.data(), count, what);
          EXPECT_EQ(storage[0], 0xa5) << what;
          for (std::size_t i = 1 + count * size; i < storage.size(); ++i) {
            ASSERT_EQ(storage[i], 0xa5) << what << " wrote past the end";
          }
          // dst == a.
          auto inA = a;
          reduceElements(type, op, inA.data(), inA.data(), b.data(), count);
          expectMatchesReference(type, op, inA.data(), a.data(), b.data(), count, what + " dst==a");
          // dst == b.
          auto inB = b;
          reduceElements(type, op, inB.data(), a.data(), inB.data(), count);
          expectMatchesReference(type, op, inB.data(), a.data(), b.data(), count, what + " dst==b");
        }
      }
    }
  }
}

template <class T>
T reduceOne(DataType type, ReduceOp op, T a, T b) {
  T r;
  reduceElements(type, op, &r, &a, &b, 1);
  return r;
}

TEST_P(ReduceKernelsTest, IntegersWrapAround) {
  EXPECT_EQ(reduceOne<std::int8_t>(DataType::int8, ReduceOp::sum, 127, 1), -128);
  EXPECT_EQ(reduceOne<std::uint8_t>(DataType::uint8, ReduceOp::sum, 255, 1), 0);
  EXPECT_EQ(reduceOne<std::int8_t>(DataType::int8, ReduceOp::prod, -128, -1), -128);
  EXPECT_EQ(reduceOne<std::uint8_t>(DataType::uint8, ReduceOp::prod, 16, 17), 16);
  EXPECT_EQ(reduceOne<std::int32_t>(DataType::int32, ReduceOp::sum,
                                    std::numeric_limits<std::int32_t>::max(), 1),
            std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(reduceOne<std::int32_t>(DataType::int32, ReduceOp::prod, 65536, 65536), 0);
  EXPECT_EQ(reduceOne<std::uint32_t>(DataType::uint32, ReduceOp::sum, 0xffffffffu, 2u), 1u);
  EXPECT_EQ(reduceOne<std::int64_t>(DataType::int64, ReduceOp::prod,
                                    std::numeric_limits<std::int64_t>::min(), -1),
            std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(reduceOne<std::uint64_t>(DataType::uint64, ReduceOp::prod, 1ull << 63, 2), 0u);
  EXPECT_EQ(reduceOne<std::int64_t>(DataType::int64, ReduceOp::min, -1, 1), -1);
  EXPECT_EQ(reduceOne<std::uint64_t>(DataType::uint64, ReduceOp::max, ~0ull, 1), ~0ull);
  EXPECT_EQ(reduceOne<std::uint8_t>(DataType::uint8, ReduceOp::min, 200, 100), 100);
  EXPECT_EQ(reduceOne<std::int8_t>(DataType::int8, ReduceOp::max, -100, 100), 100);
}

TEST_P(ReduceKernelsTest, FloatMinMaxFollowStdMinAndPropagateNan) {
  EXPECT_EQ(reduceOne(DataType::float32, ReduceOp::min, 1.0f, -2.0f), -2.0f);
  EXPECT_EQ(reduceOne(DataType::float64, ReduceOp::max, 1.0, -2.0), 1.0);
  EXPECT_TRUE(std::isnan(reduceOne(DataType::float32, ReduceOp::min, NAN, 1.0f)));
  EXPECT_TRUE(std::isnan(reduceOne(DataType::float32, ReduceOp::min, 1.0f, NAN)));
  EXPECT_TRUE(std::isnan(reduceOne(DataType::float64, ReduceOp::max, 1.0, double{NAN})));
  EXPECT_TRUE(std::isnan(reduceOne(DataType::float64, ReduceOp::max, double{NAN}, 1.0)));
  // -0 vs +0 compare equal: like std::min/std::max, the first operand wins.
  EXPECT_TRUE(std::signbit(reduceOne(DataType::float32, ReduceOp::min, -0.0f, 0.0f)));
  EXPECT_FALSE(std::signbit(reduceOne(DataType::float32, ReduceOp::max, 0.0f, -0.0f)));
  EXPECT_EQ(reduceOne(DataType::float32, ReduceOp::max, -INFINITY, 3.0f), 3.0f);
}

TEST_P(ReduceKernelsTest, HalfSumRoundsOnce) {
  // 2048 + 1 is a tie in binary16 (ulp 2 there): rounds to even 2048; 2050 + 1 rounds to 2052.
  const auto h = [](float f) { return floatToHalf(f); };
  EXPECT_EQ(reduceOne(DataType::float16, ReduceOp::sum, h(2048), h(1)), h(2048));
  EXPECT_EQ(reduceOne(DataType::float16, ReduceOp::sum, h(2050), h(1)), h(2052));
  EXPECT_EQ(reduceOne(DataType::float16, ReduceOp::sum, h(65504), h(16)), 0x7c00);  // overflow
  EXPECT_EQ(reduceOne(DataType::float16, ReduceOp::prod, std::uint16_t{0x0001}, h(0.5f)), 0);
  const auto bf = [](float f) { return floatToBfloat16(f); };
  EXPECT_EQ(reduceOne(DataType::bfloat16, ReduceOp::sum, bf(256), bf(1)), bf(256));
  EXPECT_EQ(reduceOne(DataType::bfloat16, ReduceOp::sum, bf(258), bf(1)), bf(260));
}

TEST_P(ReduceKernelsTest, DivideElements) {
  std::vector<std::int32_t> ints{-7, 7, 8, -8, 0, 1, std::numeric_limits<std::int32_t>::min()};
  divideElements(DataType::int32, ints.data(), ints.size(), 2);
  EXPECT_EQ(ints, (std::vector<std::int32_t>{-3, 3, 4, -4, 0, 0, -1073741824}));
  std::vector<std::uint8_t> bytes{255, 3, 9};
  divideElements(DataType::uint8, bytes.data(), bytes.size(), 4);
  EXPECT_EQ(bytes, (std::vector<std::uint8_t>{63, 0, 2}));
  std::vector<std::int8_t> small{-128, 127, -1};
  divideElements(DataType::int8, small.data(), small.size(), 3);
  EXPECT_EQ(small, (std::vector<std::int8_t>{-42, 42, 0}));

  std::mt19937 rng(testing_support::testSeed());
  for (DataType type : allDataTypes()) {
    for (std::size_t count : kLengths) {
      for (int divisor : {1, 3, 7, 8}) {
        const auto original = randomElements(type, count, rng);
        auto data = original;
        divideElements(type, data.data(), count, divisor);
        const std::size_t size = dataTypeSize(type);
        for (std::size_t i = 0; i < count; ++i) {
          const std::uint8_t* in = original.data() + i * size;
          std::uint8_t expected[8];
          const auto divide = [&]<class T>() {
            T x;
            std::memcpy(&x, in, sizeof(T));
            const T r = static_cast<T>(x / static_cast<T>(divisor));
            std::memcpy(expected, &r, sizeof(T));
          };
          const auto divideNarrow = [&](float (*widen)(std::uint16_t),
                                        std::uint16_t (*narrow)(float)) {
            std::uint16_t x;
            std::memcpy(&x, in, 2);
            const std::uint16_t r = narrow(widen(x) / static_cast<float>(divisor));
            std::memcpy(expected, &r, 2);
          };
          switch (type) {
            case DataType::int8:
              divide.operator()<std::int8_t>();
              break;
            case DataType::uint8:
              divide.operator()<std::uint8_t>();
              break;
            case DataType::int32:
              divide.operator()<std::int32_t>();
              break;
            case DataType::uint32:
              divide.operator()<std::uint32_t>();
              break;
            case DataType::int64:
              divide.operator()<std::int64_t>();
              break;
            case DataType::uint64:
              divide.operator()<std::uint64_t>();
              break;
            case DataType::float16:
              divideNarrow(halfToFloat, floatToHalf);
              break;
            case DataType::bfloat16:
              divideNarrow(bfloat16ToFloat, floatToBfloat16);
              break;
            case DataType::float32:
              divide.operator()<float>();
              break;
            case DataType::float64:
              divide.operator()<double>();
              break;
          }
          ASSERT_EQ(std::memcmp(expected, data.data() + i * size, size), 0)
              << dataTypeName(type) << " n=" << count << " / " << divisor << " element " << i;
        }
      }
    }
  }
  // Floats divide exactly rather than multiply by a reciprocal.
  float third = 1.0f;
  divideElements(DataType::float32, &third, 1, 3);
  EXPECT_EQ(third, 1.0f / 3.0f);
}

TEST_P(ReduceKernelsTest, ReduceManyMatchesChainedReduceElements) {
  std::mt19937 rng(testing_support::testSeed());
  for (DataType type : allDataTypes()) {
    const std::size_t size = dataTypeSize(type);
    for (ReduceOp op : allReduceOps()) {
      for (std::size_t count :
           {std::size_t{0}, std::size_t{7}, std::size_t{1000}, std::size_t{4097}}) {
        for (int nsrc = 1; nsrc <= 16; ++nsrc) {
          const std::string what = describe(type, op, count) + " nsrc=" + std::to_string(nsrc);
          std::vector<std::vector<std::uint8_t>> sources;
          std::vector<const void*> srcs;
          for (int k = 0; k < nsrc; ++k) {
            sources.push_back(randomElements(type, count, rng, nsrc % 5 == 0));
          }
          for (const auto& s : sources)
            srcs.push_back(s.data());
          // Expected: left fold with reduceElements (already checked against the reference).
          std::vector<std::uint8_t> expected = sources[0];
          for (int k = 1; k < nsrc; ++k) {
            reduceElements(type, op, expected.data(), expected.data(), sources[k].data(), count);
          }
          std::vector<std::uint8_t> got(count * size + 1, 0x5a);
          reduceMany(type, op, got.data(), srcs.data(), nsrc, count);
          ASSERT_EQ(got.back(), 0x5a) << what << " wrote past the end";
          for (std::size_t i = 0; i < count; ++i) {
            if (isNanElement(type, expected.data() + i * size)) {
              ASSERT_TRUE(isNanElement(type, got.data() + i * size)) << what << " element " << i;
            } else {
              ASSERT_EQ(std::memcmp(expected.data() + i * size, got.data() + i * size, size), 0)
                  << what << " element " << i;
            }
          }
          // dst aliasing the first and the last source.
          for (int alias : {0, nsrc - 1}) {
            auto sourcesCopy = sources;
            std::vector<const void*> aliased;
            for (const auto& s : sourcesCopy)
              aliased.push_back(s.data());
            void* dst = sourcesCopy[alias].data();
            reduceMany(type, op, dst, aliased.data(), nsrc, count);
            for (std::size_t i = 0; i < count * size; ++i) {
              if (got[i] != sourcesCopy[alias][i]) {
                ASSERT_TRUE(isNanElement(type, expected.data() + (i / size) * size))
                    << what << " dst==srcs[" << alias << "] byte " << i;
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace chorus::runtime
