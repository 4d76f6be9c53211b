// Structural checks of an ir::Algorithm before it is simulated (verify stage): rank and
// threadblock numbering, peers, op/peer agreement, steps' own peer and channel
// (ir/step_endpoints.h), counts, buffer bounds, dependencies.
#pragma once

#include "ir/algorithm.h"
#include "ir/collective.h"
#include "verify/findings.h"

namespace chorus::verify {

// Reports `malformed` findings. Returns false when the structure is too broken for the
// simulation-based checks (they would index out of range or mean nothing).
bool checkStructure(const ir::Algorithm& algorithm, const ir::Collective& collective,
                    FindingSink& sink);

}  // namespace chorus::verify
