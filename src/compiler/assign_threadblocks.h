// Pass "assign-threadblocks": orders all instructions in one global list schedule and places
// each on a threadblock (GC3 §5.2 thread block assignment), honouring the bound on outstanding
// sends per connection (FIFO slots, GC3 §6.1).
#pragma once

#include "compiler/instr_graph.h"

namespace chorus::compiler {

// Algorithm:
//  1. Depth = longest path from a source, reverse depth = longest path to a sink, over
//     processing and communication edges.
//  2. List-schedule with a heap keyed (depth, -reverse depth, trace id): an instruction is ready
//     when its predecessors and, for a receive, its matching send are scheduled; a send is held
//     back while its connection already has `fifoSlots` sends whose receives are unscheduled.
//  3. Communication instructions run on the threadblock slot chosen by assignChannels. A local
//     copy/reduce goes to the rank's threadblock with the earliest estimated start: max(ready
//     position, the threadblock's latest position) + waitCost × the waits it would need there,
//     where a predecessor is already waited for if the threadblock's vector clock covers it.
//     waitCost 0 is GC3's load balancing; large values pack dependent work together (fewer
//     waits, less parallelism). A rank without threadblocks gets one local threadblock.
//  4. Each threadblock runs its instructions in schedule order. Because every threadblock follows
//     one global topological order in which no connection exceeds its FIFO, running all of them
//     in lockstep never blocks, so the schedule cannot deadlock.
// Threadblock ids per rank: manual ids are kept; the others are numbered by (channel, send peer,
// recv peer).
// Takes `graph` by rvalue reference so that the pipeline can retry channels without copying the
// graph: `graph` is left untouched when this throws (ChannelConflict in particular).
InstrGraph assignThreadblocks(InstrGraph&& graph, const PassContext& context);

}  // namespace chorus::compiler
