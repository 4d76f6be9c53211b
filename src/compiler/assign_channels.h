// Pass "assign-channels": gives every communication flow (a send and the chain of fused
// receives that forward it) one channel and a threadblock slot on each rank it touches, so that
// each slot has at most one send peer and one recv peer and each connection (rank, peer,
// channel) has exactly one slot per side (GC3 §5.2 channel assignment).
#pragma once

#include "compiler/instr_graph.h"

namespace chorus::compiler {

// Algorithm:
//  1. Flows are processed in trace order. A flow with a channel hint takes that channel (a
//     CompileError names the op when the hint is impossible); otherwise it takes the lowest
//     channel on which every hop fits an existing slot (same peers, or a free side) or can open
//     a new one.
//  2. Replicas made by instances/parallelize use disjoint channel ranges: replica q's channels
//     are offset by the channels used by replicas 0..q-1, so replicas never share a connection.
//  3. Manual threadblock hints pin a hop to the user's threadblock id on that rank.
// Runs again on its own output (after InstrGraph::avoidChannels grew): every communication
// instruction's slot and channel are assigned afresh.
InstrGraph assignChannels(InstrGraph graph, const PassContext& context);

}  // namespace chorus::compiler
