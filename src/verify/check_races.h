// Race check (verify stage): finds pairs of accesses to one canonical chunk of a rank, from
// different threadblocks and at least one a write, that no happens-before chain orders.
#pragma once

#include "verify/findings.h"
#include "verify/program_model.h"

namespace chorus::verify {

// Reports one `race` finding per unordered pair of steps (with the first chunk they share).
// Returns false, checking nothing, when the happens-before graph has a cycle (the program
// deadlocks whatever the FIFO size; the caller reports that).
bool checkRaces(const ProgramModel& model, FindingSink& sink);

}  // namespace chorus::verify
