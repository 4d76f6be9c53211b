// What both event simulators (simulator.cpp: two-sided plans; one_sided_sim.cpp: one-sided
// plans) derive the same way (sim stage): the call's chunk size, the protocol's cost, a
// receiver's expected wake-up, the hosts' time-shared engines, the buffers' working set, and
// the result's bandwidths and link uses. Internal to src/sim.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/algorithm.h"
#include "sim/event_queue.h"
#include "sim/flow_network.h"
#include "sim/simulator.h"
#include "topology/fabric.h"

namespace chorus::sim {

// What a protocol costs on a slicing device, relative to Simple (NCCL v2.30.7
// src/graph/tuning.cc; docs/sources.md "NCCL constants and channels"): `efficiency` scales the rate
// of every pass of an op that moves data between ranks (Ring LL <= 0.5 of bus bandwidth: an 8-byte
// line carries 4 data bytes and a 4-byte flag; LL128 x 0.92: 120 data bytes per 128-byte line, less
// the flag stores); `latency` scales the device's message latency by NCCL's Ring hardware latency
// of an NVLink step, LL 0.6 µs, LL128 1.9 µs, Simple 3.4 µs.
struct ProtocolCost {
  double efficiency = 1;
  double latency = 1;
};
ProtocolCost protocolCost(ir::Protocol protocol);

// `rate` when positive, else infinity (a device model's 0 means unlimited).
double rateOrInfinity(double rate);

// The wake-up a message to `rank` waits for on average (NodeModel::wakeLatency): on a node
// running more of the call's `nranks` ranks than it has cores, the receiver is off a core
// with probability 1 - cores / ranks there.
double expectedWake(const topology::Topology& topo, int rank, int nranks);

// Elements of one chunk of the call: its element count (nccl-tests' size convention for the
// plan's collective) cut into chunksPerBlock chunks, rounded up.
std::size_t callChunkElems(const ir::Algorithm& algorithm, const SimOptions& options);

// Throws OptionError for a call no simulator can predict: more ranks than the fabric, 0 bytes.
void requireSimulable(const ir::Algorithm& algorithm, const topology::Fabric& fabric,
                      const SimOptions& options);

// The time-shared engines of the call's ranks: one "node cpu" per node with cores (NodeModel),
// one "rank engines" per rank with engines (DeviceModel), nested.
struct HostEngines {
  std::vector<int> nodeCpu;     // per node; empty when cores are unlimited
  std::vector<int> rankEngine;  // per rank; empty when engines are unlimited
};
HostEngines addHostEngines(FlowNetwork& net, const topology::Topology& topo, int nranks);

// Bytes of the call's buffers (input, output, scratch) of each node's ranks.
std::vector<double> nodeWorkingSets(const ir::Algorithm& algorithm, const topology::Topology& topo,
                                    std::size_t chunkBytes);

// Fills seconds, algbw, busbw, workingSet and links from the finish time and the network.
void summarize(SimResult& result, const ir::Algorithm& algorithm, double seconds,
               const FlowNetwork& net, const std::vector<double>& workingSets);

// The chain of steps that decided the finish: from the record that ended last, back through
// each record's predecessor (`preds`, -1 at the start), first to last, each with `waitedFor`.
std::vector<StepRecord> criticalPathOf(const std::vector<StepRecord>& records,
                                       const std::vector<int>& preds,
                                       const std::function<std::string(int)>& waitedFor);

}  // namespace chorus::sim
