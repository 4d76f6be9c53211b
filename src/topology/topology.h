// The topology model (docs/design.md "Layers"): a cluster of identical nodes joined by a
// network. A node is a graph of devices (where ranks run) and switches (which only forward),
// joined by links with a latency and a bandwidth per direction; NICs join devices to the
// network. Plain data; Fabric (fabric.h) turns it into routes and shared resources.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace chorus::topology {

enum class LinkKind : std::uint8_t { nvlink, nvswitch, pcie, xbus, memory, other };

// A vertex of a node's graph. Vertices [0, NodeModel::devices) are the devices, in rank order
// inside the node; the rest are switches. Routes never pass through a device (devices do not
// forward, as in NCCL's p2p paths).
struct Vertex {
  std::string name;  // "gpu0", "pcie-switch0", "nvswitch", "cpu0", "memory"
  // Switches only: the aggregate bytes/s everything routed through it shares (e.g. a memory
  // bus or a switch backplane); 0 = unlimited.
  double bandwidth = 0;
  // Switches only, at most one per node: this switch is the node's memory (a CPU host's shared
  // memory), so its bandwidth is also shared by every device's local work (copies, reductions).
  bool memory = false;
};

struct Link {
  std::string name;  // "nvlink gpu0-gpu3 x2"
  LinkKind kind = LinkKind::other;
  int a = 0;  // vertex indices inside the node
  int b = 0;
  double bandwidth = 0;  // bytes/s in each direction (> 0)
  double latency = 0;    // seconds (>= 0)
  bool duplex = true;    // false: both directions share one bandwidth
};

// A network interface: the devices listed reach other nodes through it.
struct Nic {
  std::string name;
  std::vector<int> devices;  // device indices (each device has at most one NIC)
  double bandwidth = 0;      // bytes/s in each direction
  double latency = 0;        // seconds, device to the network's switch
};

// A measured rate at a working set: the bytes of the input, output and scratch buffers of
// all the node's ranks for one call (caches, shared by the node's cores, make small calls
// faster than large ones on a CPU host).
struct RatePoint {
  double workingSet = 0;  // bytes
  double rate = 0;        // bytes/s
  friend bool operator==(const RatePoint&, const RatePoint&) = default;
};

// How a device executes the local part of a step (GC3 threadblocks; the xCCL notes' γ).
struct DeviceModel {
  std::string kind;       // "V100", "A100", "cpu-core"
  double reduceRate = 0;  // bytes/s one threadblock reduces (1/γ); 0 = instantaneous
  // bytes/s one threadblock moves: copying a FIFO slot out, a local copy, or pushing a message
  // (a GPU threadblock is one SM: NCCL v2.30.7's per-channel caps, docs/sources.md); 0 = unlimited.
  double copyRate = 0;
  int engines = 0;            // threadblocks a device runs at once at full speed; 0 = unlimited
  double stepOverhead = 0;    // seconds every step costs its threadblock before its work
  double messageLatency = 0;  // seconds added to every message (software / protocol latency)
  // Messages a device sends at once (the one-port model of the xCCL notes when 1): a sending step
  // holds a port from its start until its message arrived, latency included, and waiting
  // steps get ports in request order. 0 = unlimited (latencies overlap).
  int sendPorts = 0;
  // How a step's bytes pipeline (NCCL prims: a step's chunk moves in slices, and the SM fills
  // slice k+1 while the wire drains slice k; ring AllReduce chunk = NCCL_STEPS/2 slots, slice =
  // NCCL_STEPS/4, so 2 slices). 1: store and forward, as on a CPU host where one core copies
  // and then hands over: a pass's engine and wire times add, and a message is received whole.
  // > 1: an op is one fused pass whose rate is min(engine, wire); a received message may be
  // worked on once its first slice arrived, and the step ends no earlier than its last slice
  // arrived plus one slice of work; the plan's protocol (LL, LL128) scales rate and latency.
  int slices = 1;
  // When not empty, copyRate / reduceRate as functions of the node's working set, by
  // increasing working set: interpolated log-linearly between points, constant beyond the
  // ends (chorus topology detect measures them for a CPU host).
  std::vector<RatePoint> copyCurve;
  std::vector<RatePoint> reduceCurve;
};

// The rate of `curve` at `workingSet` bytes, or `flat` when the curve is empty.
double rateAt(const std::vector<RatePoint>& curve, double workingSet, double flat);

// A named grouping level inside a node (e.g. "socket" with groups {0..3} and {4..7}).
struct Level {
  std::string name;
  std::vector<std::vector<int>> groups;  // device indices
};

struct NodeModel {
  std::string name;  // "DGX-1 V100"
  int devices = 0;
  std::vector<Vertex> vertices;  // devices first, then switches
  std::vector<Link> links;
  std::vector<Nic> nics;
  std::vector<Level> levels;  // outermost first; may be empty
  DeviceModel device;
  // Processors the node's devices share (a host running one rank per process on `cores` CPU
  // cores); every engine's work competes for them. 0 = each device has its own.
  int cores = 0;
  // Seconds until a rank that is not running gets a core when a message arrives for it, on a
  // node running more ranks than `cores` (the scheduler's wake-up and context switch; fitted
  // by `chorus topology detect`). A message waits this long with probability
  // 1 - cores / ranks on the node. 0 = never.
  double wakeLatency = 0;
};

// The network joining the nodes' NICs: a switch with `latency` and, when oversubscribed, a
// core of total bandwidth (sum of NIC bandwidths) / oversubscription.
struct Network {
  double latency = 0;           // seconds, NIC to NIC through the switch
  double oversubscription = 1;  // >= 1; 1 = non-blocking
};

struct Topology {
  std::string name;         // preset or file name: "dgx1", "dgx-a100", "local"
  std::string description;  // one line, with sources
  int nodes = 1;
  NodeModel node;
  Network network;

  int ranks() const { return nodes * node.devices; }
  int nodeOf(int rank) const { return rank / node.devices; }
  int deviceOf(int rank) const { return rank % node.devices; }
};

std::string_view linkKindName(LinkKind kind);  // "nvlink", "nvswitch", "pcie", ...
// Throws chorus::ParseError naming the accepted kinds.
LinkKind parseLinkKind(std::string_view name);

// Checks the model: device count ≥ 1, vertex indices in range, positive bandwidths,
// non-negative latencies, every device pair connected inside a node, every device on at most
// one NIC and, when nodes > 1, every device on one. Throws chorus::ParseError naming the
// element and the fix.
void validate(const Topology& topology);

// A copy of `topology` with `nodes` nodes (≥ 1; > 1 needs NICs). Throws chorus::OptionError.
Topology withNodes(Topology topology, int nodes);

}  // namespace chorus::topology
