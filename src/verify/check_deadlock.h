// Deadlock explanation (verify stage): turns the stuck state of a simulation into findings
// that name the cycle of waiting threadblocks, or each threadblock that waits in vain.
#pragma once

#include "verify/findings.h"
#include "verify/program_model.h"
#include "verify/simulate.h"

namespace chorus::verify {

// Precondition: !result.finished. Reports one `deadlock` finding per wait cycle and one per
// threadblock that waits on a finished threadblock.
void reportDeadlock(const ProgramModel& model, const SimResult& result, const SimOptions& options,
                    FindingSink& sink);

}  // namespace chorus::verify
