// Lowers a two-sided plan (sends and receives over threadblock connections: chorus's compiler
// output, MSCCL XML) to one-sided steps that MSCCL++'s executor runs (ir stage; docs/ir.md
// "Writing MSCCL++ plans"). Each message gets its own landing chunks in the receiver's scratch:
//   send      put src -> receiver's landing chunks, nop, signal
//   receive   wait, nop, then the step's local work reading the landing chunks
// so no landing chunk is written twice in a launch and no flow control is needed. Each
// connection (sender, receiver, channel) gets a memory channel on both ends (the k-th of the
// pair on each side, so they pair); at the start of a launch the receiver signals it (relaxed)
// and the sender waits for that before its first put, so a put of the next launch never lands
// before the receiver has finished this one (MSCCL++'s own plans open the same way). A
// cross-threadblock dependency becomes a semaphore (release after the step, acquire before its
// dependent). Nops join a threadblock's threads where MSCCL++ needs them: after a wait or
// acquire, before a signal or release, and between two data steps that touch the same chunks
// (but not between a reduce and the put of its result, which the writer fuses into `res`).
#pragma once

#include "ir/algorithm.h"

namespace chorus::ir {

// The one-sided plan of `plan`, whose steps must all be two-sided or local (a plan that is
// already one-sided is returned unchanged). Its channels are memory channels. An LL plan's
// messages land as LL packets in packet landing chunks past the receiver's plain scratch, read
// by the receiving step's local work (which waits for them) with no signal or wait; other
// plans are written as Simple. Throws PlanError when a connection has more
// than one threadblock on an end, or its sends and receives do not match in number and size
// (`chorus verify` says more). MSCCL++'s size limits are the writer's to check.
Algorithm lowerToOneSided(const Algorithm& plan);

}  // namespace chorus::ir
