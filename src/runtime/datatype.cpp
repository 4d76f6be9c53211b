// Names, sizes and scalar float16/bfloat16 conversions of the runtime data types.
#include "runtime/datatype.h"

#include <array>
#include <bit>
#include <utility>

#include "support/error.h"

namespace chorus::runtime {

namespace {

struct TypeInfo {
  DataType type;
  std::size_t size;
  std::string_view name;
};

constexpr std::array<TypeInfo, kDataTypeCount> kTypeInfos{{
    {DataType::int8, 1, "int8"},
    {DataType::uint8, 1, "uint8"},
    {DataType::int32, 4, "int32"},
    {DataType::uint32, 4, "uint32"},
    {DataType::int64, 8, "int64"},
    {DataType::uint64, 8, "uint64"},
    {DataType::float16, 2, "float16"},
    {DataType::bfloat16, 2, "bfloat16"},
    {DataType::float32, 4, "float32"},
    {DataType::float64, 8, "float64"},
}};

// Extra spellings: nccl-tests (`-d
// int8|uint8|int32|uint32|int64|uint64|half|float|double|bfloat16`), NCCL enum suffixes, and the
// usual short forms.
constexpr std::array<std::pair<std::string_view, DataType>, 30> kTypeAliases{{
    {"i8", DataType::int8},         {"char", DataType::int8},       {"int8_t", DataType::int8},
    {"u8", DataType::uint8},        {"uint8_t", DataType::uint8},   {"i32", DataType::int32},
    {"int", DataType::int32},       {"int32_t", DataType::int32},   {"u32", DataType::uint32},
    {"uint", DataType::uint32},     {"uint32_t", DataType::uint32}, {"i64", DataType::int64},
    {"long", DataType::int64},      {"int64_t", DataType::int64},   {"u64", DataType::uint64},
    {"ulong", DataType::uint64},    {"uint64_t", DataType::uint64}, {"f16", DataType::float16},
    {"half", DataType::float16},    {"fp16", DataType::float16},    {"bf16", DataType::bfloat16},
    {"bfloat", DataType::bfloat16}, {"f32", DataType::float32},     {"float", DataType::float32},
    {"fp32", DataType::float32},    {"f64", DataType::float64},     {"double", DataType::float64},
    {"fp64", DataType::float64},    {"float_t", DataType::float32}, {"double_t", DataType::float64},
}};

constexpr std::array<std::string_view, 5> kOpNames{"sum", "prod", "min", "max", "avg"};

const TypeInfo& infoOf(DataType type) {
  const auto index = static_cast<std::size_t>(type);
  CHORUS_INTERNAL_ASSERT(index < kTypeInfos.size(), "DataType value out of range");
  return kTypeInfos[index];
}

}  // namespace

std::size_t dataTypeSize(DataType type) {
  return infoOf(type).size;
}

std::string_view dataTypeName(DataType type) {
  return infoOf(type).name;
}

std::optional<DataType> parseDataType(std::string_view name) {
  for (const TypeInfo& info : kTypeInfos) {
    if (info.name == name) return info.type;
  }
  for (const auto& [alias, type] : kTypeAliases) {
    if (alias == name) return type;
  }
  return std::nullopt;
}

std::string_view reduceOpName(ReduceOp op) {
  const auto index = static_cast<std::size_t>(op);
  CHORUS_INTERNAL_ASSERT(index < kOpNames.size(), "ReduceOp value out of range");
  return kOpNames[index];
}

std::optional<ReduceOp> parseReduceOp(std::string_view name) {
  for (std::size_t i = 0; i < kOpNames.size(); ++i) {
    if (kOpNames[i] == name) return static_cast<ReduceOp>(i);
  }
  if (name == "product") return ReduceOp::prod;
  if (name == "mean") return ReduceOp::avg;
  return std::nullopt;
}

const std::vector<DataType>& allDataTypes() {
  static const std::vector<DataType> types = [] {
    std::vector<DataType> result;
    for (const TypeInfo& info : kTypeInfos)
      result.push_back(info.type);
    return result;
  }();
  return types;
}

const std::vector<ReduceOp>& allReduceOps() {
  static const std::vector<ReduceOp> ops{ReduceOp::sum, ReduceOp::prod, ReduceOp::min,
                                         ReduceOp::max, ReduceOp::avg};
  return ops;
}

float halfToFloat(std::uint16_t bits) {
  return std::bit_cast<float>(
      detail::halfBitsToFloatBits<std::uint32_t, std::int32_t, float>(std::uint32_t{bits}));
}

std::uint16_t floatToHalf(float value) {
  return static_cast<std::uint16_t>(detail::floatBitsToHalfBits<std::uint32_t, std::int32_t, float>(
      std::bit_cast<std::uint32_t>(value)));
}

float bfloat16ToFloat(std::uint16_t bits) {
  return std::bit_cast<float>(detail::bfloat16BitsToFloatBits(std::uint32_t{bits}));
}

std::uint16_t floatToBfloat16(float value) {
  return static_cast<std::uint16_t>(detail::floatBitsToBfloat16Bits<std::uint32_t, std::int32_t>(
      std::bit_cast<std::uint32_t>(value)));
}

}  // namespace chorus::runtime
