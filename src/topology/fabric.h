// Fabric: a Topology instantiated for all its ranks, as the simulator sees it: a flat list of
// shared resources (each direction of each link of each node, NIC directions, switches with a
// limited backplane, the network core) and, per ordered rank pair, the route a message takes.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "topology/topology.h"

namespace chorus::topology {

struct Resource {
  std::string name;  // "node0 nvlink gpu0-gpu3 x2 (gpu0->gpu3)", "node1 nic0 rx", "network core"
  double bandwidth = 0;  // bytes/s shared by the flows on it
  // A memory switch (Vertex::memory) or a LinkKind::memory link: it caps the rate at which a
  // device can work (min with the engine's rate) instead of adding a wire time of its own.
  bool memory = false;
};

struct Route {
  std::vector<int> resources;  // Fabric resource indices, in order
  double latency = 0;          // seconds: sum of link latencies (+ NICs and network)
  double bandwidth = 0;        // bytes/s of the narrowest resource (a lone flow's rate)
};

// Routing (inside a node): among paths whose inner vertices are switches, the widest path
// (largest bottleneck bandwidth), then the fewest hops, then the lowest latency; ties go to
// the lowest vertex indices, so routes are deterministic. Across nodes: source device → its
// NIC (tx) → network (core when oversubscribed) → the destination's NIC (rx) → device.
class Fabric {
 public:
  explicit Fabric(const Topology& topology);  // validates; throws chorus::ParseError

  const Topology& topology() const { return topology_; }
  int ranks() const { return topology_.ranks(); }
  const std::vector<Resource>& resources() const { return resources_; }
  // The route from rank `src` to rank `dst` (src != dst). Computed on first use, then cached;
  // the reference stays valid for the Fabric's life. Not thread-safe.
  const Route& route(int src, int dst);
  // Resources every local step of `rank` also uses: its node's memory switch, if any.
  const std::vector<int>& localResources(int rank) const;
  // Every rank's node-local index range is [node * devices, (node + 1) * devices).

 private:
  // The members below are the implementation's bookkeeping; change them freely.
  Topology topology_;
  std::vector<Resource> resources_;
  std::vector<Route> nodeRoutes_;  // [srcDevice * devices + dstDevice], node-relative indices
  std::unordered_map<std::uint64_t, Route> cache_;
  // Filled by the constructor (the implementation's bookkeeping).
  int resourcesPerNode_ = 0;
  std::vector<int> nicOfDevice_;                  // -1 when none
  int nicResourceBase_ = 0;                       // node-relative index of the first NIC resource
  int networkCore_ = -1;                          // resource index, -1 when non-blocking
  std::vector<std::vector<int>> localResources_;  // per node: its memory switch, if any
};

}  // namespace chorus::topology
