// Tensor dtypes and c10d reduce operators to chorus DataType/ReduceOp.
#include "torch/tensor_types.h"

#include <c10/util/Exception.h>

namespace chorus::torch_backend {

namespace {

// The chorus type of a dtype that chorus reduces natively; nullopt otherwise.
std::optional<DataType> nativeType(at::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat:
      return DataType::float32;
    case at::kDouble:
      return DataType::float64;
    case at::kHalf:
      return DataType::float16;
    case at::kBFloat16:
      return DataType::bfloat16;
    case at::kChar:
      return DataType::int8;
    case at::kByte:
      return DataType::uint8;
    case at::kInt:
      return DataType::int32;
    case at::kLong:
      return DataType::int64;
    default:
      return std::nullopt;
  }
}

std::string_view opName(c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case c10d::ReduceOp::SUM:
      return "SUM";
    case c10d::ReduceOp::AVG:
      return "AVG";
    case c10d::ReduceOp::PRODUCT:
      return "PRODUCT";
    case c10d::ReduceOp::MIN:
      return "MIN";
    case c10d::ReduceOp::MAX:
      return "MAX";
    case c10d::ReduceOp::BAND:
      return "BAND";
    case c10d::ReduceOp::BOR:
      return "BOR";
    case c10d::ReduceOp::BXOR:
      return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM:
      return "PREMUL_SUM";
    default:
      return "UNUSED";
  }
}

}  // namespace

ReductionType reductionTypeOf(at::ScalarType dtype, const c10d::ReduceOp& reduceOp,
                              std::string_view call) {
  const auto op = reduceOp.op_;
  const std::string dtypeName = c10::toString(dtype);
  // Bool: logical reductions on 0/1 bytes (SUM and BOR are "any", PRODUCT and BAND are "all").
  if (dtype == at::kBool) {
    switch (op) {
      case c10d::ReduceOp::SUM:
      case c10d::ReduceOp::MAX:
      case c10d::ReduceOp::BOR:
        return {DataType::uint8, ReduceOp::max, 1, std::nullopt};
      case c10d::ReduceOp::PRODUCT:
      case c10d::ReduceOp::MIN:
      case c10d::ReduceOp::BAND:
        return {DataType::uint8, ReduceOp::min, 1, std::nullopt};
      default:
        TORCH_CHECK(false, "chorus: ", call, " cannot reduce torch.bool tensors with ReduceOp.",
                    opName(op),
                    "; use SUM or BOR (logical or), PRODUCT or BAND (logical and), MIN or MAX");
    }
  }
  ReduceOp chorusOp = ReduceOp::sum;
  switch (op) {
    case c10d::ReduceOp::SUM:
      chorusOp = ReduceOp::sum;
      break;
    case c10d::ReduceOp::AVG:
      chorusOp = ReduceOp::avg;
      break;
    case c10d::ReduceOp::PRODUCT:
      chorusOp = ReduceOp::prod;
      break;
    case c10d::ReduceOp::MIN:
      chorusOp = ReduceOp::min;
      break;
    case c10d::ReduceOp::MAX:
      chorusOp = ReduceOp::max;
      break;
    case c10d::ReduceOp::BAND:
    case c10d::ReduceOp::BOR:
    case c10d::ReduceOp::BXOR:
      TORCH_CHECK(false, "chorus: ", call, " got ReduceOp.", opName(op), " on ", dtypeName,
                  "; chorus has no bitwise reductions (it has SUM, AVG, PRODUCT, MIN and MAX, and "
                  "BAND/BOR on torch.bool): reduce with the gloo backend for bitwise operators");
    default:
      TORCH_CHECK(false, "chorus: ", call, " got ReduceOp.", opName(op),
                  ", which chorus does not support; use SUM, AVG, PRODUCT, MIN or MAX (scale "
                  "before a SUM for PREMUL_SUM)");
  }
  if (auto type = nativeType(dtype)) return {*type, chorusOp, 1, std::nullopt};
  if (dtype == at::kShort) return {DataType::int32, chorusOp, 1, at::kInt};
  if (dtype == at::kComplexFloat || dtype == at::kComplexDouble) {
    TORCH_CHECK(chorusOp == ReduceOp::sum || chorusOp == ReduceOp::avg, "chorus: ", call,
                " got ReduceOp.", opName(op), " on ", dtypeName,
                "; complex tensors reduce with SUM or AVG only");
    return {dtype == at::kComplexFloat ? DataType::float32 : DataType::float64, chorusOp, 2,
            std::nullopt};
  }
  TORCH_CHECK(false, "chorus: ", call, " cannot reduce ", dtypeName,
              " tensors; chorus reduces float32, float64, float16, bfloat16, int8, uint8, int16, "
              "int32, int64, bool and complex (SUM/AVG) tensors");
}

void checkCpuDense(const at::Tensor& tensor, std::string_view call, std::string_view argument) {
  TORCH_CHECK(tensor.defined(), "chorus: ", call, ": ", argument, " is an undefined tensor");
  TORCH_CHECK(tensor.device().is_cpu(), "chorus: ", call, ": ", argument, " is on ",
              tensor.device().str(),
              "; the chorus backend runs on CPU tensors only. Move it with .cpu(), or use the "
              "nccl backend for CUDA tensors");
  TORCH_CHECK(tensor.layout() == at::kStrided, "chorus: ", call, ": ", argument, " has layout ",
              tensor.layout(), "; chorus takes dense (strided) tensors only: call .to_dense()");
}

}  // namespace chorus::torch_backend
