// Pass "assign-threadblocks": orders all instructions in one global list schedule and places
// each on a threadblock (GC3 §5.2 thread block assignment), honouring the bound on outstanding
// sends per connection (FIFO slots, seed 000 §6.1).
#pragma once

#include "compiler/instr_graph.h"

namespace chorus::compiler {

// Algorithm:
//  1. Depth = longest path from a source, reverse depth = longest path to a sink, over
//     processing and communication edges.
//  2. List-schedule with a heap keyed (depth, -reverse depth, trace id): an instruction is ready
//     when its predecessors and, for a receive, its matching send are scheduled; a send is held
//     back while its connection already has `fifoSlots` sends whose receives are unscheduled.
//  3. Communication instructions run on the threadblock slot chosen by assignChannels; a local
//     copy/reduce goes to the rank's threadblock whose latest instruction is earliest in the
//     order (a new local threadblock if the rank has none).
//  4. Each threadblock runs its instructions in schedule order. Because every threadblock follows
//     one global topological order in which no connection exceeds its FIFO, running all of them
//     in lockstep never blocks, so the schedule cannot deadlock.
// Threadblock ids per rank: manual ids are kept; the others are numbered by (channel, send peer,
// recv peer).
InstrGraph assignThreadblocks(InstrGraph graph, const PassContext& context);

}  // namespace chorus::compiler
