// Pass "insert-dependencies": turns the scheduled instruction graph into an ir::Algorithm and
// preserves every processing edge that crosses threadblocks as a dependency (GC3 §5.2
// synchronization insertion). Keeps only the latest wait per dependee threadblock.
#pragma once

#include "compiler/instr_graph.h"
#include "ir/algorithm.h"

namespace chorus::compiler {

ir::Algorithm insertDependencies(const InstrGraph& graph, const PassContext& context);

// Sets Step::hasDependents exactly on the steps some other step depends on.
void markDependents(ir::Algorithm& algorithm);

}  // namespace chorus::compiler
