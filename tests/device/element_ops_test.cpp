// The device interpreter's element operations (src/device/element_ops.h) against the CPU
// reduction kernels (runtime/reduce_kernels.h), which define the results: every float16 and
// bfloat16 bit pattern converted both ways, a sweep of float values narrowed, and every type
// and operator combined and averaged on values that include wrap-around, NaN and signed zeros.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "device/element_ops.h"
#include "device/type_dispatch.h"
#include "runtime/datatype.h"
#include "runtime/reduce_kernels.h"

namespace chorus {
namespace {

using runtime::DataType;

std::uint32_t bitsOf(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

TEST(DeviceElementOps, HalfAndBfloat16WidenAsTheCpuDoesForEveryPattern) {
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    ASSERT_EQ(bitsOf(device::halfToFloat(bits)), bitsOf(runtime::halfToFloat(bits))) << h;
    ASSERT_EQ(bitsOf(device::bfloat16ToFloat(bits)), bitsOf(runtime::bfloat16ToFloat(bits))) << h;
  }
}

TEST(DeviceElementOps, FloatNarrowsAsTheCpuDoes) {
  std::vector<float> values = {0.0f,
                               -0.0f,
                               65504.0f,
                               65519.99f,
                               65520.0f,
                               1e-8f,
                               -1e-8f,
                               5.96e-8f,
                               2.98e-8f,
                               6.1e-5f,
                               6.097e-5f,
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::quiet_NaN(),
                               std::numeric_limits<float>::max(),
                               std::numeric_limits<float>::denorm_min()};
  // Every 97th float bit pattern: all exponents, many mantissas, both signs.
  for (std::uint64_t b = 0; b <= 0xffffffffull; b += 97 * 65537ull) {
    float f;
    const auto bits = static_cast<std::uint32_t>(b);
    std::memcpy(&f, &bits, 4);
    values.push_back(f);
  }
  for (float f : values) {
    ASSERT_EQ(device::floatToHalf(f), runtime::floatToHalf(f)) << std::hex << bitsOf(f);
    ASSERT_EQ(device::floatToBfloat16(f), runtime::floatToBfloat16(f)) << std::hex << bitsOf(f);
  }
}

// Bytes of `n` values of every type, including extremes: the same bytes feed both sides.
std::vector<unsigned char> operandBytes(DataType type, std::size_t n, int seed) {
  const std::size_t size = runtime::dataTypeSize(type);
  std::vector<unsigned char> bytes(n * size);
  std::uint64_t x = 0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(seed + 1);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    bytes[i] = static_cast<unsigned char>(x);
  }
  if (type == DataType::float32) {  // NaN, signed zeros, Inf among the values
    const float specials[] = {std::numeric_limits<float>::quiet_NaN(), -0.0f, 0.0f,
                              std::numeric_limits<float>::infinity(),  1.5f,  -2.25f};
    for (std::size_t i = 0; i < 6 && i < n; ++i)
      std::memcpy(bytes.data() + (i * 5 % n) * size,
                  &specials[(i + static_cast<std::size_t>(seed)) % 6], size);
  }
  return bytes;
}

TEST(DeviceElementOps, CombineMatchesTheCpuKernelsForEveryTypeAndOperator) {
  constexpr std::size_t n = 257;
  for (DataType type : runtime::allDataTypes()) {
    for (ReduceOp op : runtime::allReduceOps()) {
      const std::vector<unsigned char> a = operandBytes(type, n, 1), b = operandBytes(type, n, 2);
      std::vector<unsigned char> cpu(a.size()), dev(a.size());
      runtime::reduceElements(type, op, cpu.data(), a.data(), b.data(), n);
      device::dispatchType(type, op, [&]<typename T, ReduceOp Op>() {
        for (std::size_t i = 0; i < n; ++i) {
          T x, y;
          std::memcpy(&x, a.data() + i * sizeof(T), sizeof(T));
          std::memcpy(&y, b.data() + i * sizeof(T), sizeof(T));
          const T z = device::Combine<T, Op>{}(x, y);
          std::memcpy(dev.data() + i * sizeof(T), &z, sizeof(T));
        }
      });
      EXPECT_EQ(dev, cpu) << runtime::dataTypeName(type) << " " << runtime::reduceOpName(op);
    }
  }
}

TEST(DeviceElementOps, DivideMatchesTheCpuKernelsForEveryType) {
  constexpr std::size_t n = 257;
  for (DataType type : runtime::allDataTypes()) {
    for (int divisor : {1, 3, 8}) {
      std::vector<unsigned char> cpu = operandBytes(type, n, 3), dev = cpu;
      runtime::divideElements(type, cpu.data(), n, divisor);
      device::dispatchType(type, ReduceOp::sum, [&]<typename T, ReduceOp>() {
        for (std::size_t i = 0; i < n; ++i) {
          T x;
          std::memcpy(&x, dev.data() + i * sizeof(T), sizeof(T));
          x = device::divideValue(x, divisor);
          std::memcpy(dev.data() + i * sizeof(T), &x, sizeof(T));
        }
      });
      EXPECT_EQ(dev, cpu) << runtime::dataTypeName(type) << " / " << divisor;
    }
  }
}

}  // namespace
}  // namespace chorus
