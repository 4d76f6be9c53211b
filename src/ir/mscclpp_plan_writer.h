// Writer of MSCCL++ execution plans (ir stage): any chorus plan as the JSON that MSCCL++'s
// executor loads (`chorus compile --format mscclpp-json`; schema as its parser reads it,
// src/core/executor/execution_plan.cc at mscclpp 1f5f065, docs/ir.md "Writing MSCCL++ plans").
#pragma once

#include <string>

#include "ir/algorithm.h"

namespace chorus::ir {

// The plan as MSCCL++ JSON. A two-sided plan is lowered first (ir/one_sided_lowering.h); a
// one-sided plan (one read from MSCCL++ JSON) is written step by step, one op per step (a
// reduce and the put of its result as one `res`). A threadblock of more than the executor's 64
// operations is cut into consecutive threadblocks chained by a semaphore. Throws
// FormatLimitError naming the threadblock when the plan exceeds what else MSCCL++'s executor
// holds (execution_common.hpp: 16 channels and 16 remote buffers per type per threadblock, 16
// barriers), and PlanError when the plan cannot be lowered.
std::string writeMscclppPlan(const Algorithm& algorithm);

}  // namespace chorus::ir
