// Fabric: resources and routes of a Topology (see fabric.h for the routing rule).
//
// Algorithm (routes inside a node, computed once per source device of the node template):
//   1. Widest bottleneck from the source to every vertex (max-min Dijkstra). Only the source
//      and switches are expanded: devices are endpoints, never forwarders. A switch with a
//      bandwidth caps the paths through it.
//   2. For each distinct bottleneck value t of the destinations, a layered breadth-first search
//      over the links with bandwidth >= t (and switches with no cap or a cap >= t) labels
//      every vertex with its best path: fewest hops, then lowest latency, then the
//      lexicographically smallest vertex sequence, then link sequence (deterministic ties).
//   3. A path becomes a Route: each link in its direction (a duplex link has one resource per
//      direction, a non-duplex link one for both), each inner switch with a bandwidth.
// Across nodes: source NIC tx, the network core when oversubscribed, destination NIC rx.
#include "topology/fabric.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <utility>

#include "support/error.h"

namespace chorus::topology {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

struct Adjacent {
  int link = 0;
  int vertex = 0;
};

// A candidate path from the source to one vertex.
struct Label {
  bool set = false;
  double latency = 0;
  std::vector<int> vertices;  // source first
  std::vector<int> links;
};

bool sameLatency(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)) + 1e-18;
}

// Among paths of equal hop count: lower latency, then lower vertex, then link indices.
bool better(const Label& a, const Label& b) {
  if (!b.set) return true;
  if (!sameLatency(a.latency, b.latency)) return a.latency < b.latency;
  if (a.vertices != b.vertices) return a.vertices < b.vertices;
  return a.links < b.links;
}

class NodeRouter {
 public:
  NodeRouter(const NodeModel& node, const std::vector<int>& linkResource,
             const std::vector<int>& switchResource, const std::vector<Resource>& resources)
      : node_(node),
        linkResource_(linkResource),
        switchResource_(switchResource),
        resources_(resources),
        adjacent_(node.vertices.size()) {
    for (int l = 0; l < static_cast<int>(node.links.size()); ++l) {
      const Link& link = node.links[static_cast<std::size_t>(l)];
      adjacent_[static_cast<std::size_t>(link.a)].push_back({l, link.b});
      adjacent_[static_cast<std::size_t>(link.b)].push_back({l, link.a});
    }
  }

  // Routes from device `s` to every device, indexed by destination (routes[s] stays empty).
  std::vector<Route> routesFrom(int s) const {
    const std::vector<double> widest = widestFrom(s);
    std::vector<double> thresholds;
    for (int d = 0; d < node_.devices; ++d)
      if (d != s) thresholds.push_back(widest[static_cast<std::size_t>(d)]);
    std::sort(thresholds.begin(), thresholds.end());
    thresholds.erase(std::unique(thresholds.begin(), thresholds.end()), thresholds.end());
    std::vector<Route> routes(static_cast<std::size_t>(node_.devices));
    for (double t : thresholds) {
      const std::vector<Label> labels = shortestFrom(s, t);
      for (int d = 0; d < node_.devices; ++d) {
        if (d == s || widest[static_cast<std::size_t>(d)] != t) continue;
        const Label& label = labels[static_cast<std::size_t>(d)];
        CHORUS_INTERNAL_ASSERT(label.set, "a validated node has a route between its devices");
        routes[static_cast<std::size_t>(d)] = routeOf(label);
      }
    }
    return routes;
  }

 private:
  bool isSwitch(int v) const { return v >= node_.devices; }
  double switchCap(int v) const {
    const double bandwidth = node_.vertices[static_cast<std::size_t>(v)].bandwidth;
    return isSwitch(v) && bandwidth > 0 ? bandwidth : kInfinity;
  }

  std::vector<double> widestFrom(int s) const {
    std::vector<double> widest(node_.vertices.size(), 0);
    widest[static_cast<std::size_t>(s)] = kInfinity;
    std::priority_queue<std::pair<double, int>> queue;
    queue.push({kInfinity, s});
    while (!queue.empty()) {
      const auto [width, u] = queue.top();
      queue.pop();
      if (width < widest[static_cast<std::size_t>(u)]) continue;
      if (u != s && !isSwitch(u)) continue;
      for (const Adjacent& next : adjacent_[static_cast<std::size_t>(u)]) {
        const double w =
            std::min({width, node_.links[static_cast<std::size_t>(next.link)].bandwidth,
                      switchCap(next.vertex)});
        if (w > widest[static_cast<std::size_t>(next.vertex)]) {
          widest[static_cast<std::size_t>(next.vertex)] = w;
          queue.push({w, next.vertex});
        }
      }
    }
    return widest;
  }

  // Best paths of bottleneck >= t by layers of hop count.
  std::vector<Label> shortestFrom(int s, double t) const {
    std::vector<Label> labels(node_.vertices.size());
    std::vector<int> hops(node_.vertices.size(), -1);
    labels[static_cast<std::size_t>(s)].set = true;
    labels[static_cast<std::size_t>(s)].vertices = {s};
    hops[static_cast<std::size_t>(s)] = 0;
    std::vector<int> frontier = {s};
    for (int layer = 0; !frontier.empty(); ++layer) {
      std::vector<int> next;
      for (int u : frontier) {
        const Label& from = labels[static_cast<std::size_t>(u)];
        for (const Adjacent& step : adjacent_[static_cast<std::size_t>(u)]) {
          const int v = step.vertex;
          if (node_.links[static_cast<std::size_t>(step.link)].bandwidth < t) continue;
          if (switchCap(v) < t) continue;
          int& h = hops[static_cast<std::size_t>(v)];
          if (h >= 0 && h != layer + 1) continue;
          Label candidate;
          candidate.set = true;
          candidate.latency =
              from.latency + node_.links[static_cast<std::size_t>(step.link)].latency;
          candidate.vertices = from.vertices;
          candidate.vertices.push_back(v);
          candidate.links = from.links;
          candidate.links.push_back(step.link);
          Label& label = labels[static_cast<std::size_t>(v)];
          if (h < 0) {
            h = layer + 1;
            if (isSwitch(v)) next.push_back(v);
          }
          if (better(candidate, label)) label = std::move(candidate);
        }
      }
      frontier = std::move(next);
    }
    return labels;
  }

  Route routeOf(const Label& label) const {
    Route route;
    route.bandwidth = kInfinity;
    for (std::size_t i = 0; i < label.links.size(); ++i) {
      const Link& link = node_.links[static_cast<std::size_t>(label.links[i])];
      const bool reverse = link.duplex && label.vertices[i] == link.b;
      route.resources.push_back(linkResource_[static_cast<std::size_t>(label.links[i])] +
                                (reverse ? 1 : 0));
      route.latency += link.latency;
      const int v = label.vertices[i + 1];
      if (i + 1 < label.links.size() && switchResource_[static_cast<std::size_t>(v)] >= 0)
        route.resources.push_back(switchResource_[static_cast<std::size_t>(v)]);
    }
    for (int r : route.resources)
      route.bandwidth =
          std::min(route.bandwidth, resources_[static_cast<std::size_t>(r)].bandwidth);
    return route;
  }

  const NodeModel& node_;
  const std::vector<int>& linkResource_;
  const std::vector<int>& switchResource_;
  const std::vector<Resource>& resources_;  // node 0's, indexed node-relative
  std::vector<std::vector<Adjacent>> adjacent_;
};

}  // namespace

Fabric::Fabric(const Topology& topology) : topology_(topology) {
  validate(topology_);
  const NodeModel& node = topology_.node;
  const int devices = node.devices;

  // Node 0's resources, node-relative: links (two per duplex link), capped switches, NICs.
  std::vector<Resource> nodeResources;
  std::vector<int> linkResource(node.links.size());
  for (std::size_t l = 0; l < node.links.size(); ++l) {
    const Link& link = node.links[l];
    const std::string& a = node.vertices[static_cast<std::size_t>(link.a)].name;
    const std::string& b = node.vertices[static_cast<std::size_t>(link.b)].name;
    const bool memory = link.kind == LinkKind::memory;
    linkResource[l] = static_cast<int>(nodeResources.size());
    if (link.duplex) {
      nodeResources.push_back(
          {fmt::format("{} ({}->{})", link.name, a, b), link.bandwidth, memory});
      nodeResources.push_back(
          {fmt::format("{} ({}->{})", link.name, b, a), link.bandwidth, memory});
    } else {
      nodeResources.push_back(
          {fmt::format("{} ({}<->{})", link.name, a, b), link.bandwidth, memory});
    }
  }
  std::vector<int> switchResource(node.vertices.size(), -1);
  for (std::size_t v = static_cast<std::size_t>(devices); v < node.vertices.size(); ++v) {
    const Vertex& vertex = node.vertices[v];
    if (vertex.bandwidth <= 0) continue;
    switchResource[v] = static_cast<int>(nodeResources.size());
    nodeResources.push_back({vertex.name, vertex.bandwidth, vertex.memory});
  }
  nicResourceBase_ = static_cast<int>(nodeResources.size());
  nicOfDevice_.assign(static_cast<std::size_t>(devices), -1);
  double nicBandwidth = 0;
  for (std::size_t n = 0; n < node.nics.size(); ++n) {
    const Nic& nic = node.nics[n];
    nodeResources.push_back({nic.name + " tx", nic.bandwidth, false});
    nodeResources.push_back({nic.name + " rx", nic.bandwidth, false});
    nicBandwidth += nic.bandwidth;
    for (int d : nic.devices)
      nicOfDevice_[static_cast<std::size_t>(d)] = static_cast<int>(n);
  }
  resourcesPerNode_ = static_cast<int>(nodeResources.size());

  resources_.reserve(static_cast<std::size_t>(topology_.nodes) * nodeResources.size() + 1);
  for (int n = 0; n < topology_.nodes; ++n)
    for (const Resource& r : nodeResources)
      resources_.push_back({fmt::format("node{} {}", n, r.name), r.bandwidth, r.memory});
  if (topology_.nodes > 1 && topology_.network.oversubscription > 1) {
    networkCore_ = static_cast<int>(resources_.size());
    resources_.push_back({"network core",
                          topology_.nodes * nicBandwidth / topology_.network.oversubscription,
                          false});
  }

  const NodeRouter router(node, linkResource, switchResource, nodeResources);
  nodeRoutes_.resize(static_cast<std::size_t>(devices) * static_cast<std::size_t>(devices));
  for (int s = 0; s < devices; ++s) {
    std::vector<Route> routes = router.routesFrom(s);
    for (int d = 0; d < devices; ++d)
      nodeRoutes_[static_cast<std::size_t>(s * devices + d)] =
          std::move(routes[static_cast<std::size_t>(d)]);
  }

  localResources_.resize(static_cast<std::size_t>(topology_.nodes));
  for (std::size_t v = static_cast<std::size_t>(devices); v < node.vertices.size(); ++v) {
    if (!node.vertices[v].memory || switchResource[v] < 0) continue;
    for (int n = 0; n < topology_.nodes; ++n)
      localResources_[static_cast<std::size_t>(n)].push_back(n * resourcesPerNode_ +
                                                             switchResource[v]);
  }
}

const Route& Fabric::route(int src, int dst) {
  const int ranks = topology_.ranks();
  CHORUS_INTERNAL_ASSERT(src >= 0 && src < ranks && dst >= 0 && dst < ranks && src != dst,
                         fmt::format("route({}, {}) on a fabric of {} ranks", src, dst, ranks));
  const std::uint64_t key = static_cast<std::uint64_t>(src) * static_cast<std::uint64_t>(ranks) +
                            static_cast<std::uint64_t>(dst);
  const auto found = cache_.find(key);
  if (found != cache_.end()) return found->second;

  const int devices = topology_.node.devices;
  const int srcNode = topology_.nodeOf(src);
  const int dstNode = topology_.nodeOf(dst);
  Route route;
  if (srcNode == dstNode) {
    route = nodeRoutes_[static_cast<std::size_t>(topology_.deviceOf(src) * devices +
                                                 topology_.deviceOf(dst))];
    for (int& r : route.resources)
      r += srcNode * resourcesPerNode_;
  } else {
    const int srcNic = nicOfDevice_[static_cast<std::size_t>(topology_.deviceOf(src))];
    const int dstNic = nicOfDevice_[static_cast<std::size_t>(topology_.deviceOf(dst))];
    CHORUS_INTERNAL_ASSERT(srcNic >= 0 && dstNic >= 0, "validate() puts every device on a NIC");
    route.resources.push_back(srcNode * resourcesPerNode_ + nicResourceBase_ + 2 * srcNic);
    if (networkCore_ >= 0) route.resources.push_back(networkCore_);
    route.resources.push_back(dstNode * resourcesPerNode_ + nicResourceBase_ + 2 * dstNic + 1);
    const auto& nics = topology_.node.nics;
    route.latency = nics[static_cast<std::size_t>(srcNic)].latency + topology_.network.latency +
                    nics[static_cast<std::size_t>(dstNic)].latency;
    route.bandwidth = kInfinity;
    for (int r : route.resources)
      route.bandwidth =
          std::min(route.bandwidth, resources_[static_cast<std::size_t>(r)].bandwidth);
  }
  return cache_.emplace(key, std::move(route)).first->second;
}

const std::vector<int>& Fabric::localResources(int rank) const {
  CHORUS_INTERNAL_ASSERT(rank >= 0 && rank < topology_.ranks(),
                         fmt::format("localResources({}) on {} ranks", rank, topology_.ranks()));
  return localResources_[static_cast<std::size_t>(topology_.nodeOf(rank))];
}

}  // namespace chorus::topology
