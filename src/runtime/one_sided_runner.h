// Runs a one-sided plan (MSCCL++ execution plans: puts, gets, signals, waits, barriers,
// semaphores; ir::hasOneSidedOps) on N ranks that are threads of this process, one thread per
// threadblock, with exact integer-valued inputs, and checks the results as runOnThreads does
// (run_check.h). A memory or port channel is the peer's buffer itself: a put or get is a copy
// between the two ranks' memory, a signal a release increment of the paired channel's token
// count and a wait an acquire spin until its token arrived; a flush has nothing left to wait
// for. runOnThreads hands such plans here.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/algorithm.h"
#include "runtime/run_check.h"

namespace chorus::runtime {

// Throws PlanError for a plan whose structure cannot run (a step naming a missing channel,
// semaphore or peer; 'chorus verify' explains), OptionError for ReduceOp::avg or given inputs
// (not supported here yet), and TimeoutError naming the step when a wait, semaphore or barrier
// waits longer than options.timeout (the plan deadlocks: 'chorus verify' says why).
RunReport runOneSidedOnThreads(const ir::Algorithm& algorithm, const RunOptions& options,
                               std::vector<std::vector<std::uint8_t>>* outputs = nullptr);

}  // namespace chorus::runtime
