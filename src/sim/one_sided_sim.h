// The event simulator of one-sided plans (MSCCL++ execution plans: puts, gets, signals, waits,
// flushes, barriers, semaphores, LL packets; ir::hasOneSidedOps), on the same topology models
// and bandwidth sharing (sim/flow_network.h) as the two-sided simulator. Each threadblock runs
// its steps in order, once per call on whole chunks (MSCCL++'s executor moves a step's chunks
// in one operation; there are no FIFO slots to tile for):
//   - copy, reduce: a pass on the rank's engine at the device's copy or reduce rate;
//   - put, get, getReduce on a memory channel: one pass on the rank's engine across the route
//     between the two ranks (the threadblock's own loads and stores); a get's data is there α
//     after the pass (the route's and the device's latency);
//   - put on a port channel: the threadblock only posts it (the device's step overhead); the
//     rank's proxy for that channel carries its puts one after another as wire-only passes (DMA,
//     RDMA), and a flush waits until the channel's earlier puts are done;
//   - signal: its token reaches the peer's paired channel α after it was sent (a port channel's
//     signal leaves once its earlier puts are done); a wait takes one that has arrived;
//   - barrier, semaphore, nop: synchronisation only, no time of their own;
//   - LL packets: a packet operand moves twice its data's bytes (a flag beside every data word,
//     MSCCL++ packet_device.hpp), and a step reading packets starts once the last of them
//     landed (α after the writing pass ended), with no signal needed.
// The call ends when every threadblock finished and every proxy is idle. SimOptions' slots,
// slotBytes, tiling and extrapolate do not apply.
#pragma once

#include "ir/algorithm.h"
#include "sim/simulator.h"
#include "topology/fabric.h"

namespace chorus::sim {

// Predicts one call of a one-sided plan. Throws PlanError for a plan whose structure cannot run
// (ir::findOneSidedIssues), OptionError as simulate() does, and SimulationError naming the
// blocked steps when the plan deadlocks.
SimResult simulateOneSided(const ir::Algorithm& algorithm, topology::Fabric& fabric,
                           const SimOptions& options);

}  // namespace chorus::sim
