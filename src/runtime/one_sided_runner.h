// Runs a one-sided plan (MSCCL++ execution plans: puts, gets, signals, waits, barriers,
// semaphores, LL packets; ir::hasOneSidedOps) with exact integer-valued inputs and checks the
// results as the two-sided runners do (run_check.h), one thread per threadblock
// (one_sided_engine.h): on N ranks that are threads of this process (runOnThreads hands such
// plans here), or on N forked rank processes (runOnProcesses does), each of which keeps its
// buffers, scratch, packets and token counts in a shared-memory segment that every peer maps,
// so a memory or port channel is the peer's mapped memory itself (over tcp, port channels are
// messages instead).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/algorithm.h"
#include "runtime/run_check.h"

namespace chorus::runtime {

// Throws PlanError for a plan whose structure cannot run (a step naming a missing channel,
// semaphore or peer; 'chorus verify' explains), OptionError for ReduceOp::avg or given inputs
// (not supported here yet), and TimeoutError naming the step when a wait, semaphore or barrier
// waits longer than options.timeout (the plan deadlocks: 'chorus verify' says why).
RunReport runOneSidedOnThreads(const ir::Algorithm& algorithm, const RunOptions& options,
                               std::vector<std::vector<std::uint8_t>>* outputs = nullptr);

// The same on processes. Over shared memory (options.transport empty, "shm" or "auto") every
// rank maps its peers' memory, and the transport's connections only tell a rank that a peer
// failed. Over tcp ranks share no memory: port-channel puts and signals travel as messages on
// the connections, landed in order by a receiver thread per rank (as MSCCL++'s proxy carries
// port channels over the network). Throws as runOnProcesses does, and OptionError naming the
// step for a plan that reaches peer memory otherwise over tcp (a memory channel, a get).
RunReport runOneSidedOnProcesses(const ir::Algorithm& algorithm, const RunOptions& options);

}  // namespace chorus::runtime
