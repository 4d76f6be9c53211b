// Read-only input check (verify stage): an out-of-place collective takes the caller's send
// buffer as `const void*` and must leave it unchanged, so no step may write its input buffer.
#pragma once

#include "ir/algorithm.h"
#include "ir/collective.h"
#include "verify/findings.h"

namespace chorus::verify {

// Reports one `writesInput` finding per step that writes (or updates) the input buffer when
// `collective` is out-of-place; reports nothing for in-place collectives, whose input is the
// output. Precondition: checkStructure() returned true (every written range is in bounds).
void checkWritesInput(const ir::Algorithm& algorithm, const ir::Collective& collective,
                      FindingSink& sink);

}  // namespace chorus::verify
