#include "verify/step_access.h"

namespace chorus::verify {

StepAccesses localAccesses(const ir::Step& step) {
  StepAccesses out;
  if (ir::opReadsSrc(step.op))
    out.items[out.size++] =
        StepAccess{step.srcBuffer, step.srcIndex, step.count, true, false, true};
  if (ir::opWritesDst(step.op))
    out.items[out.size++] =
        StepAccess{step.dstBuffer, step.dstIndex, step.count, ir::opReadsDst(step.op), true, false};
  return out;
}

}  // namespace chorus::verify
