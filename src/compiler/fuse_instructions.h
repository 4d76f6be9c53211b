// Pass "fuse-instructions": peephole fusion of a receive with the send that forwards its
// result (GC3 §4.2): recv+send -> recvCopySend, recvReduceCopy+send ->
// recvReduceCopySend, or recvReduceSend when the reduced value is dead after the send.
#pragma once

#include "compiler/instr_graph.h"

namespace chorus::compiler {

// Algorithm:
//  1. For each receive R (recv or recvReduceCopy) in trace order, candidates are sends S on the
//     same rank that read exactly R's destination range, whose other predecessors are already
//     predecessors of R (so S may run at R's position), with compatible channel and threadblock
//     hints and the same replica.
//  2. Among candidates pick the one on the longest remaining path (largest reverse depth; GC3
//     "the send on the longest path is fused"), ties to the earliest.
//  3. recvReduceCopy becomes recvReduceSend when, for every chunk it writes, the next access by
//     another instruction overwrites it without reading it, or it is scratch never read again.
InstrGraph fuseInstructions(InstrGraph graph, const PassContext& context);

}  // namespace chorus::compiler
