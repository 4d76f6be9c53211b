// Pass "replicate-instances": applies program-wide instances and parallelize(n) scopes by
// cutting every chunk into sub-chunks and replicating the affected operations, one replica per
// sub-chunk range, each on its own channels (GC3 §5.1 chunk parallelization).
#pragma once

#include "compiler/instr_graph.h"
#include "ir/dag.h"

namespace chorus::compiler {

// Returns a Dag over the refined collective (chunk factor × F, where F = instances × lcm of
// the parallel factors). Input/output chunk j becomes j*F .. j*F+F-1; scratch chunk j of a rank
// with S scratch chunks becomes s*S + j for sub-part s (whole-block replication, which keeps
// aggregated scratch transfers contiguous). An op replicated p times handles F/p sub-parts per
// replica; pieces that are not contiguous on both sides become separate ops; a manual
// threadblock t becomes t*p + q in replica q (msccl-tools' numbering). The returned ops carry
// no dependencies: lowering recomputes them per instruction.
ir::Dag replicateInstances(const ir::Dag& dag, const PassContext& context);

}  // namespace chorus::compiler
