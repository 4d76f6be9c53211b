// Pass "lower": chunk DAG -> instruction DAG (GC3 §4.2). A local copy/reduce becomes one
// copy/reduce instruction; a remote copy becomes send + recv, a remote reduce send +
// recvReduceCopy. Buffers are canonicalized (in-place aliasing) and same-rank processing edges
// are derived per chunk location: read-after-write, write-after-read, write-after-write.
#pragma once

#include "compiler/instr_graph.h"
#include "ir/dag.h"

namespace chorus::compiler {

InstrGraph lowerDag(const ir::Dag& dag, const PassContext& context);

}  // namespace chorus::compiler
