// Graphviz DOT pictures of the IR: ir::Algorithm (threadblock step chains per rank, send->recv
// edges across ranks, dashed cross-threadblock dependencies) and ir::Dag (the traced chunk graph).
#pragma once

#include <string>

#include "ir/algorithm.h"
#include "ir/dag.h"

namespace chorus::ir {

// A digraph with one cluster per rank and one node chain per threadblock. Solid edges join the
// k-th send on connection (rank, sendPeer, channel) to the k-th receive of the peer's
// threadblocks with recv == rank on that channel; dashed edges are cross-threadblock deps. A
// step's own peer and channel, when set, end its label (" peer=3 ch=1"). Deterministic; for
// pictures only (not parsed back).
std::string writeDot(const Algorithm& algorithm);

// One node per DagOp labelled like "copy r0.in[2] -> r1.sc[0] x1"; solid edges for true
// (data) dependencies, dashed edges for false (buffer-reuse) dependencies.
std::string writeDagDot(const Dag& dag);

}  // namespace chorus::ir
