// Calls `f.template operator()<T, Op>()` with the element type of `type` and the reduction
// `op` (device layer): how a launcher picks the interpreter instantiation of a call, on the host
// build and for the CUDA kernels alike. avg runs as sum (the output is divided afterwards).
#pragma once

#include <cstdint>

#include "chorus/types.h"
#include "device/element_ops.h"

namespace chorus::device {

template <typename T, class F>
decltype(auto) dispatchOp(ReduceOp op, F&& f) {
  switch (op) {
    case ReduceOp::prod:
      return f.template operator()<T, ReduceOp::prod>();
    case ReduceOp::min:
      return f.template operator()<T, ReduceOp::min>();
    case ReduceOp::max:
      return f.template operator()<T, ReduceOp::max>();
    case ReduceOp::sum:
    case ReduceOp::avg:
      break;
  }
  return f.template operator()<T, ReduceOp::sum>();
}

template <class F>
decltype(auto) dispatchType(DataType type, ReduceOp op, F&& f) {
  switch (type) {
    case DataType::int8:
      return dispatchOp<std::int8_t>(op, f);
    case DataType::uint8:
      return dispatchOp<std::uint8_t>(op, f);
    case DataType::int32:
      return dispatchOp<std::int32_t>(op, f);
    case DataType::uint32:
      return dispatchOp<std::uint32_t>(op, f);
    case DataType::int64:
      return dispatchOp<std::int64_t>(op, f);
    case DataType::uint64:
      return dispatchOp<std::uint64_t>(op, f);
    case DataType::float16:
      return dispatchOp<Half>(op, f);
    case DataType::bfloat16:
      return dispatchOp<BFloat16>(op, f);
    case DataType::float64:
      return dispatchOp<double>(op, f);
    case DataType::float32:
      break;
  }
  return dispatchOp<float>(op, f);
}

}  // namespace chorus::device
