// Postcondition check (verify stage): compares the symbolic output chunks left by the
// simulation with the collective's expected values and explains each difference.
#pragma once

#include <string>
#include <vector>

#include "ir/collective.h"
#include "verify/findings.h"
#include "verify/program_model.h"

namespace chorus::verify {

// Reports a `postcondition` finding per wrong, missing or double-counted output chunk.
// `slots` holds the values after one full iteration (SimResult::slots).
void checkPostcondition(const ProgramModel& model, const std::vector<ir::ChunkValue>& slots,
                        FindingSink& sink);

// A short description of a value: "in(3,2)", "sum{in(0,2) in(1,2)}", or for large reductions
// a compressed form such as "sum{in(0..255,2)} (256 parts)". Exposed for tests.
std::string summarizeValue(const ir::ChunkValue& value);

}  // namespace chorus::verify
