// Micro-benchmark of the runtime reduction kernels: GB/s of reduceElements (dst == a, as in an
// in-place AllReduce step) and reduceMany over 64 MiB buffers. Run: ./bench_reduce_kernels [MiB]
// Prints one row per case and instruction set; "buffer GB/s" counts one buffer's bytes, "memory
// GB/s" all traffic.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/datatype.h"
#include "runtime/reduce_kernels.h"

namespace {

using chorus::runtime::DataType;
using chorus::runtime::ReduceOp;

constexpr int kWarmups = 2;
constexpr int kIterations = 10;

struct Case {
  DataType type;
  ReduceOp op;
  int nsrc;  // 2: reduceElements; more: reduceMany
};

// Fills with small values of the type, so sums stay finite for the floating types.
void fillBuffer(DataType type, std::vector<std::uint8_t>& bytes, int seed) {
  const std::size_t size = chorus::runtime::dataTypeSize(type);
  const std::size_t count = bytes.size() / size;
  for (std::size_t i = 0; i < count; ++i) {
    const float value = static_cast<float>((i * 7 + static_cast<std::size_t>(seed)) % 13) * 0.25f;
    std::uint8_t* p = bytes.data() + i * size;
    switch (type) {
      case DataType::float16: {
        const std::uint16_t h = chorus::runtime::floatToHalf(value);
        std::memcpy(p, &h, 2);
        break;
      }
      case DataType::bfloat16: {
        const std::uint16_t h = chorus::runtime::floatToBfloat16(value);
        std::memcpy(p, &h, 2);
        break;
      }
      case DataType::float32:
        std::memcpy(p, &value, 4);
        break;
      case DataType::float64: {
        const double d = value;
        std::memcpy(p, &d, 8);
        break;
      }
      default: {
        const auto v = static_cast<std::uint64_t>(value * 4);
        std::memcpy(p, &v, size);
      }
    }
  }
}

void runCase(const Case& c, std::size_t bytes, const char* isa) {
  const std::size_t size = chorus::runtime::dataTypeSize(c.type);
  const std::size_t count = bytes / size;
  std::vector<std::vector<std::uint8_t>> buffers(static_cast<std::size_t>(c.nsrc));
  std::vector<const void*> srcs;
  for (int k = 0; k < c.nsrc; ++k) {
    buffers[static_cast<std::size_t>(k)].resize(count * size);
    fillBuffer(c.type, buffers[static_cast<std::size_t>(k)], k);
    srcs.push_back(buffers[static_cast<std::size_t>(k)].data());
  }
  std::vector<std::uint8_t> out(count * size);
  std::vector<double> seconds;
  for (int i = 0; i < kWarmups + kIterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    if (c.nsrc == 2) {
      // In place, like an AllReduce step: acc = acc op incoming.
      chorus::runtime::reduceElements(c.type, c.op, out.data(), out.data(), srcs[1], count);
    } else {
      chorus::runtime::reduceMany(c.type, c.op, out.data(), srcs.data(), c.nsrc, count);
    }
    const auto stop = std::chrono::steady_clock::now();
    if (i >= kWarmups) seconds.push_back(std::chrono::duration<double>(stop - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  const double traffic = static_cast<double>(count * size) * (c.nsrc + 1);  // reads + write
  const std::string what = std::string(chorus::runtime::reduceOpName(c.op)) +
                           (c.nsrc == 2 ? "" : " x" + std::to_string(c.nsrc));
  std::printf("%-8s %-9s %-8s %10zu %10.3f %12.2f %12.2f\n", isa,
              std::string(chorus::runtime::dataTypeName(c.type)).c_str(), what.c_str(), bytes >> 20,
              median * 1e3, static_cast<double>(count * size) / median / 1e9,
              traffic / median / 1e9);
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 64;
  const std::size_t bytes = mib << 20;
  std::printf("%-8s %-9s %-8s %10s %10s %12s %12s\n", "isa", "type", "op", "MiB", "ms",
              "buffer GB/s", "memory GB/s");
  const Case cases[] = {
      {DataType::float32, ReduceOp::sum, 2}, {DataType::bfloat16, ReduceOp::sum, 2},
      {DataType::float16, ReduceOp::sum, 2}, {DataType::int32, ReduceOp::max, 2},
      {DataType::float32, ReduceOp::sum, 4}, {DataType::bfloat16, ReduceOp::sum, 4},
  };
  // The kernels pick AVX2 when the CPU has it; the baseline (SSE2) row is shown for comparison.
  using chorus::runtime::detail::KernelIsa;
  for (const Case& c : cases) {
    for (KernelIsa isa : {KernelIsa::baseline, KernelIsa::avx2}) {
      if (!chorus::runtime::detail::forceKernelIsaForTesting(isa)) continue;
      runCase(c, bytes, isa == KernelIsa::avx2 ? "avx2" : "sse2");
    }
  }
  return 0;
}
