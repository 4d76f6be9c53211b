// How a torch tensor and a c10d reduce operator map onto chorus's element types and operators
// (torch backend, python/). Pure functions; every unsupported case throws c10::Error with a
// message that names the dtype or operator and what to use instead.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include "chorus/types.h"

namespace chorus::torch_backend {

// A reduction of a tensor, as chorus runs it: `count` elements of `type` per tensor element
// times `elementsPerItem` (complex numbers reduce as pairs of reals), computed on a staging
// tensor of `stagingDtype` when the tensor's own dtype has no chorus type (int16 widens to
// int32; the result is narrowed back, which wraps exactly as torch's own int16 arithmetic).
struct ReductionType {
  DataType type;
  ReduceOp op;
  int elementsPerItem = 1;
  std::optional<at::ScalarType> stagingDtype;
};

// Throws c10::Error for a dtype/operator pair chorus cannot reduce (bitwise operators on
// integers, PREMUL_SUM, PRODUCT/MIN/MAX of complex numbers, ...). `call` names the collective.
ReductionType reductionTypeOf(at::ScalarType dtype, const c10d::ReduceOp& op,
                              std::string_view call);

// Checks what every collective needs of a tensor: on the CPU, dense (strided). Throws c10::Error
// naming `call`, the argument and the tensor's device or layout. Non-contiguous tensors pass;
// the caller stages them.
void checkCpuDense(const at::Tensor& tensor, std::string_view call, std::string_view argument);

}  // namespace chorus::torch_backend
