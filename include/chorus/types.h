// chorus public types shared by the C++ API and the runtime: element data types and reduction
// operators. The C ABI (chorus_c.h) has its own NCCL-numbered enums.
#pragma once

#include <cstdint>

namespace chorus {

enum class DataType : std::uint8_t {
  int8,
  uint8,
  int32,
  uint32,
  int64,
  uint64,
  float16,
  bfloat16,
  float32,
  float64
};

// avg is the sum divided by the number of ranks (integers truncate, as in NCCL).
enum class ReduceOp : std::uint8_t { sum, prod, min, max, avg };

}  // namespace chorus
