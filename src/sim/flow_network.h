// Bandwidth sharing among concurrent transfers (sim stage), as both event simulators use it
// (simulator.cpp for two-sided plans, one_sided_sim.cpp for one-sided ones): the resources a
// pass crosses (links, memory buses, time-shared engines and cores) and the flows on them. A
// flow's rate follows from equal shares per resource and is recomputed whenever a flow starts
// or ends on one of its resources (congestion). On a store-and-forward device (a CPU host)
//   rate = efficiency / (1 / min(engine rate × time shares, memory caps) + 1 / min(link shares))
// so an engine's work and the wire add up (the α-β-γ model) while memory buses cap the engine;
// on a slicing device (a GPU, DeviceModel::slices > 1) rate = efficiency × min(engine, wire).
// Time shares nest: a node's cores among its busy rank engines, then each engine among its
// flows. The network posts each flow's end time; the simulator queues those events and hands
// back the current ones (FlowEnd::version). A plain value: copying it copies the state.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "topology/fabric.h"

namespace chorus::sim {

enum class ShareKind : std::uint8_t { wire, memory, timeShare };

struct SimResource {
  std::string name;
  ShareKind kind = ShareKind::wire;
  double bandwidth = 0;  // wire and memory: bytes/s shared equally
  int capacity = 0;      // time share: flows that run at full speed at once
  int fabricIndex = -1;
  // Time-share hierarchy: a rank's engines are threads that a node's cores time share, so the
  // node's load is the engines in use, sum over its ranks of min(capacity, flows), not its
  // flows (a rank with 3 flows on 1 engine is 1 thread wanting a core).
  int parent = -1;  // the node cpu this rank engine runs on
  bool hasChildren = false;
  double demand = 0;       // node cpu with children: engines in use on it
  std::vector<int> flows;  // active flow ids
  double busySince = 0;
  double busy = 0;   // seconds with at least one flow on it
  double bytes = 0;  // carried by finished flows (not time shares)
};

struct Flow {
  bool active = false;
  int owner = -1;    // who started it (the simulator's threadblock or queue index)
  double bytes = 0;  // whole pass
  double remaining = 0;
  double baseRate = 0;    // engine rate alone, bytes/s; infinity when unlimited
  double efficiency = 1;  // the protocol's share of the rate
  double rate = 0;
  double updated = 0;  // time `remaining` was last brought up to date
  std::uint32_t version = 0;
  std::vector<int> resources;
};

// A flow's end as last computed: stale once the flow's version moved on.
struct FlowEnd {
  double time = 0;
  int flow = 0;
  std::uint32_t version = 0;
};

class FlowNetwork {
 public:
  explicit FlowNetwork(bool slicing) : slicing_(slicing) {}

  int addResource(std::string name, ShareKind kind, double bandwidth, int capacity,
                  int fabricIndex = -1);
  // The simulator resource of Fabric resource `index`, added on first use (a 1024-rank fabric
  // has many that a given program never touches).
  int fabricResource(const topology::Fabric& fabric, int index);
  // Makes rank engine `engine` a child of node cpu `cpu` (the nested time shares).
  void nest(int engine, int cpu);

  const std::vector<SimResource>& resources() const { return resources_; }
  std::vector<SimResource>& resources() { return resources_; }
  const Flow& flow(int id) const { return flows_[static_cast<std::size_t>(id)]; }
  // Whether `resources` bound a flow's rate: a finite base rate or a resource that is not a
  // time share (otherwise the pass takes no time).
  bool bounded(double baseRate, const std::vector<int>& resources) const;

  // Starts a flow of `bytes` at `now` on `resources`; returns its id. Posts its end and the
  // new ends of the flows it slows down.
  int start(double now, int owner, double bytes, double baseRate, double efficiency,
            const std::vector<int>& resources);
  // Whether the end event (flow, version) is the flow's current one.
  bool current(const FlowEnd& end) const;
  // Ends flow `id` at `now` (its end event came); returns its owner. Posts the new ends of the
  // flows it sped up.
  int finish(double now, int id);
  // The ends posted since the last clearPosted(), in posting order; the caller queues them and
  // clears them (the buffer keeps its memory, so starts and finishes do not allocate).
  const std::vector<FlowEnd>& posted() const { return posted_; }
  void clearPosted() { posted_.clear(); }

 private:
  void changeDemand(const SimResource& engine, std::size_t before);
  double rateOf(const Flow& f) const;
  void reschedule(double now, int id);
  void updateNeighbours(double now, int id);

  bool slicing_ = false;
  std::vector<SimResource> resources_;
  std::unordered_map<int, int> fabricMap_;
  std::vector<Flow> flows_;
  std::vector<int> freeFlows_;
  std::vector<int> touched_;
  std::vector<FlowEnd> posted_;
};

}  // namespace chorus::sim
