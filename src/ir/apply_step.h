// The reference meaning of one IR step on plain buffers (ir stage), read off the op table
// (ir/step_semantics.h). The verifier computes it on symbolic chunk values; the executors'
// tests check each executor's results against it, element by element. Host/device shareable.
#pragma once

#include <cstddef>

#include "ir/step_semantics.h"
#include "support/host_device.h"

namespace chorus::ir {

// The operands of one piece of a step, `n` elements each; null where the op does not use one.
template <typename T>
struct StepOperands {
  const T* src = nullptr;       // the step's source (opReadsSrc)
  T* dst = nullptr;             // its destination (opWritesDst; also read when opReadsDst)
  const T* received = nullptr;  // the message received (opReceives)
  T* sent = nullptr;            // the message to send (opSends)
};

// Applies `op` to `n` elements: value = src | received | received ⊕ src | dst ⊕ src (the row's
// StepValue), then dst = value where the row stores and sent = value where it sends.
// `combine(a, b)` computes a ⊕ b with the received or dst operand first and src second.
// Element i is read before it is written, so src may be dst (a reduce, a copy onto itself).
// Precondition: every operand the op uses is non-null.
CHORUS_HD_TEMPLATE
template <typename T, typename Combine>
CHORUS_HD constexpr void applyStep(OpKind op, const StepOperands<T>& io, std::size_t n,
                                   Combine combine) {
  const OpSemantics& row = opSemantics(op);
  if (row.value == StepValue::none) return;
  for (std::size_t i = 0; i < n; ++i) {
    T value{};
    switch (row.value) {
      case StepValue::src:
        value = io.src[i];
        break;
      case StepValue::received:
        value = io.received[i];
        break;
      case StepValue::receivedOpSrc:
        value = combine(io.received[i], io.src[i]);
        break;
      case StepValue::dstOpSrc:
        value = combine(io.dst[i], io.src[i]);
        break;
      case StepValue::none:
        return;
    }
    if (row.storesDst) io.dst[i] = value;
    if (row.sends) io.sent[i] = value;
  }
}

}  // namespace chorus::ir
