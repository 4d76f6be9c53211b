// The verifier's model of one-sided plans (verify stage; MSCCL++ execution plans read by
// ir/mscclpp_plan.h): structure, deadlock freedom, races and the symbolic values the
// postcondition check compares, for programs whose steps are puts, gets, signals, waits,
// barriers and semaphores (ir::opIsOneSided) next to local copies, reduces and nops.
#pragma once

#include <vector>

#include "ir/collective.h"
#include "verify/findings.h"
#include "verify/program_model.h"
#include "verify/verify.h"

namespace chorus::verify {

// Reports `malformed` findings for what the one-sided model cannot run: two-sided ops in a
// one-sided plan, steps whose peer, channel, barrier or semaphore does not exist or does not
// match, chunk ranges outside the owning rank's buffers, signals and waits on a channel that
// has no counterpart on the peer. Returns true when there was none.
bool checkOneSidedStructure(const ir::Algorithm& algorithm, const ir::Collective& collective,
                            FindingSink& sink);

struct OneSidedResult {
  bool finished = false;              // every threadblock ran to its end
  std::vector<ir::ChunkValue> slots;  // symbolic values at the end (model slots)
};

// Runs every threadblock of one launch until all finished or none can move, and reports:
//  - `deadlock`: each threadblock left waiting (for a signal, a semaphore unit or a barrier),
//    with what it waits for;
//  - `race`: two accesses to one chunk of one rank, at least one a write, that no
//    happens-before chain orders (options.checkRaces), and channels or semaphores left
//    unbalanced at the end (the next launch would pass its waits early);
//  - `uninitialized`: reads of chunks that hold no value; `writesInput`: writes to the input
//    of an out-of-place plan (options.checkWritesInput).
// Happens-before (MSCCL++'s executor, docs/ir.md "One-sided operations"): each threadblock has
// two threads of program order, all threads (copies, reduces, memory-channel puts and gets)
// and the signalling threads (signals, waits, flushes, semaphores, port-channel puts); a nop
// or barrier joins them. The n-th wait on a channel acquires what the n-th signal on its
// paired channel released; relaxed signals and waits order execution but publish no data; a
// semaphore acquire acquires every earlier release; a barrier joins its threadblocks.
// Precondition: checkOneSidedStructure returned true.
OneSidedResult simulateOneSided(const ProgramModel& model, const VerifyOptions& options,
                                FindingSink& sink);

}  // namespace chorus::verify
