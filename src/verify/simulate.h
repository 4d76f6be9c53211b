// The execution engine shared by the postcondition and deadlock checks (verify stage): runs an
// ir::Algorithm under the MSCCL runtime's blocking rules, optionally computing symbolic chunk
// values, until every threadblock finished or none can move.
#pragma once

#include <cstddef>
#include <vector>

#include "ir/collective.h"
#include "verify/findings.h"
#include "verify/program_model.h"

namespace chorus::verify {

struct SimOptions {
  int fifoSlots = 8;      // unreceived messages a connection holds before a send blocks
  int iterations = 1;     // back-to-back runs of the whole program (tiles)
  bool trackData = true;  // compute symbolic values during iteration 0
};

enum class BlockKind { none, dependency, emptyFifo, fullFifo };

// Why an unfinished threadblock cannot run its current step.
struct TbBlock {
  BlockKind kind = BlockKind::none;
  int iteration = 0;
  int step = 0;       // the step it is stuck at
  int targetTb = -1;  // global tb it waits for: the dependee, the sender or the receiver
  int depStep = -1;   // for dependency: the dependee step
  int conn = -1;      // for empty/full FIFO
};

struct SimResult {
  bool finished = false;                // every tb ran every iteration
  bool firstIterationComplete = false;  // every tb finished iteration 0
  std::vector<TbBlock> blocks;          // per global tb; kind none when finished
  std::vector<std::size_t> queued;      // unreceived messages per connection at the end
  std::vector<ir::ChunkValue> slots;    // symbolic values after iteration 0 (trackData)
};

// Algorithm:
//  1. Every tb is a cursor (iteration, step). A ready tb runs steps until one blocks on a
//     dependency (same rank, same iteration), an empty incoming FIFO or a full outgoing FIFO;
//     it then registers as a waiter on what blocks it and leaves the worklist.
//  2. Completing a step wakes the waiters it may unblock (dependents whose threshold is
//     reached, the peer of a FIFO that changed).
//  3. Each connection has one sender and one receiver tb, so the system is confluent: the
//     final state does not depend on the order in which ready tbs are run.
// Reports `uninitialized` findings for iteration-0 reads of chunks that hold no value.
SimResult simulateProgram(const ProgramModel& model, const SimOptions& options, FindingSink& sink);

}  // namespace chorus::verify
