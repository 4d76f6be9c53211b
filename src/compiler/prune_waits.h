// Pass "prune-waits": drops cross-threadblock dependencies already implied by other waits.
// A threadblock's progress is monotonic, so a wait on (tb, k) is redundant once this step is
// known to start after (tb, k') with k' >= k, through program order or earlier kept waits.
#pragma once

#include "compiler/instr_graph.h"
#include "ir/algorithm.h"

namespace chorus::compiler {

// Algorithm (per rank, vector clocks over the rank's threadblocks):
//  1. Visit steps in a topological order of program order + dependencies (Kahn).
//  2. known(t, s) = known(t, s-1) joined with after(dependee) of every kept dependency, where
//     after(u, k) = known(u, k) with entry u raised to k.
//  3. Dependencies are tried latest-first (largest dependee clock); one whose dependee is
//     already covered by `known` is dropped, since waiting on it cannot delay the step.
// Only same-rank knowledge is used (messages from other ranks are ignored), which keeps the pass
// sound and linear in steps × threadblocks of a rank.
ir::Algorithm pruneWaits(ir::Algorithm algorithm, const PassContext& context);

}  // namespace chorus::compiler
