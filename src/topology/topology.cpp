#include "topology/topology.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>

#include "support/error.h"

namespace chorus::topology {
namespace {

constexpr std::string_view kLinkKindNames[] = {"nvlink", "nvswitch", "pcie",
                                               "xbus",   "memory",   "other"};
constexpr long long kMaxRanks = 1 << 22;

// Errors name the element by its path in the JSON format (docs/topology.md), so a file's
// author finds it and a programmatic model's author recognises the field.
[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw ParseError(fmt::format("{}: {}", path, what));
}

// "node.devices[2] 'gpu2'" or "node.switches[0] 'pcie0'".
std::string vertexPath(const NodeModel& node, int v) {
  const auto& name = node.vertices[static_cast<std::size_t>(v)].name;
  if (v < node.devices) return fmt::format("node.devices[{}] '{}'", v, name);
  return fmt::format("node.switches[{}] '{}'", v - node.devices, name);
}

std::string linkPath(const NodeModel& node, std::size_t l) {
  return fmt::format("node.links[{}] '{}'", l, node.links[l].name);
}

std::string gbps(double bytesPerSecond) {
  return fmt::format("{:g} GB/s", bytesPerSecond / 1e9);
}

void checkRate(const std::string& path, const char* key, double value, bool positive) {
  if (!std::isfinite(value) || value < 0 || (positive && value == 0)) {
    fail(path, fmt::format("{} is {}; it must be a number {} 0 (GB/s)", key, gbps(value),
                           positive ? ">" : ">="));
  }
}

void checkSeconds(const std::string& path, const char* key, double value) {
  if (!std::isfinite(value) || value < 0)
    fail(path, fmt::format("{} is {:g} us; it must be >= 0 (microseconds)", key, value * 1e6));
}

void checkDeviceIndex(const NodeModel& node, const std::string& path, int device) {
  if (device < 0 || device >= node.devices) {
    fail(path, fmt::format("device index {} is out of range; the node has devices 0..{}", device,
                           node.devices - 1));
  }
}

void checkVertices(const NodeModel& node) {
  if (node.devices < 1)
    fail("node.devices", fmt::format("is {}; a node needs at least 1 device", node.devices));
  if (static_cast<int>(node.vertices.size()) < node.devices) {
    fail("node.devices",
         fmt::format("the node has {} devices but only {} vertices; vertices [0, devices) are "
                     "the devices, switches follow",
                     node.devices, node.vertices.size()));
  }
  std::unordered_map<std::string, int> names;
  int memorySwitch = -1;
  for (int v = 0; v < static_cast<int>(node.vertices.size()); ++v) {
    const Vertex& vertex = node.vertices[static_cast<std::size_t>(v)];
    const std::string path = vertexPath(node, v);
    if (vertex.name.empty()) fail(path, "has an empty name; give every vertex a unique name");
    const auto [it, inserted] = names.emplace(vertex.name, v);
    if (!inserted) {
      fail(path, fmt::format("the name is also used by {}; vertex names must be unique",
                             vertexPath(node, it->second)));
    }
    if (v < node.devices) {
      if (vertex.bandwidth != 0 || vertex.memory) {
        fail(path,
             "a device has a bandwidth or memory flag; only switches have them (add a switch "
             "and link the device to it)");
      }
      continue;
    }
    checkRate(path, "bandwidth_GBps", vertex.bandwidth, false);
    if (vertex.memory) {
      if (memorySwitch >= 0) {
        fail(path, fmt::format("is a second memory switch ({} is one); a node has at most one",
                               vertexPath(node, memorySwitch)));
      }
      memorySwitch = v;
    }
  }
}

void checkLinks(const NodeModel& node) {
  const int vertices = static_cast<int>(node.vertices.size());
  for (std::size_t l = 0; l < node.links.size(); ++l) {
    const Link& link = node.links[l];
    const std::string path = linkPath(node, l);
    for (int end : {link.a, link.b}) {
      if (end < 0 || end >= vertices) {
        fail(path, fmt::format("joins vertex index {}, out of range (the node has {} vertices)",
                               end, vertices));
      }
    }
    if (link.a == link.b)
      fail(path, fmt::format("joins '{}' to itself; a link needs two different vertices",
                             node.vertices[static_cast<std::size_t>(link.a)].name));
    checkRate(path, "bandwidth_GBps", link.bandwidth, true);
    checkSeconds(path, "latency_us", link.latency);
  }
}

void checkNics(const Topology& topology) {
  const NodeModel& node = topology.node;
  std::vector<int> nicOf(static_cast<std::size_t>(node.devices), -1);
  for (std::size_t n = 0; n < node.nics.size(); ++n) {
    const Nic& nic = node.nics[n];
    const std::string path = fmt::format("node.nics[{}] '{}'", n, nic.name);
    if (nic.devices.empty()) fail(path, "serves no device; list the devices that use it");
    for (int device : nic.devices) {
      checkDeviceIndex(node, path + " devices", device);
      int& owner = nicOf[static_cast<std::size_t>(device)];
      if (owner >= 0) {
        fail(path, fmt::format("device '{}' is already on node.nics[{}] '{}'; each device has at "
                               "most one NIC",
                               node.vertices[static_cast<std::size_t>(device)].name, owner,
                               node.nics[static_cast<std::size_t>(owner)].name));
      }
      owner = static_cast<int>(n);
    }
    checkRate(path, "bandwidth_GBps", nic.bandwidth, true);
    checkSeconds(path, "latency_us", nic.latency);
  }
  if (topology.nodes <= 1) return;
  for (int d = 0; d < node.devices; ++d) {
    if (nicOf[static_cast<std::size_t>(d)] < 0) {
      fail("node.nics",
           fmt::format("device '{}' has no NIC, so {} nodes cannot reach it; add it to a NIC's "
                       "devices or use 1 node",
                       node.vertices[static_cast<std::size_t>(d)].name, topology.nodes));
    }
  }
}

void checkLevels(const NodeModel& node) {
  for (std::size_t i = 0; i < node.levels.size(); ++i) {
    const Level& level = node.levels[i];
    const std::string path = fmt::format("node.levels[{}] '{}'", i, level.name);
    if (level.name.empty()) fail(path, "has an empty name; name the level (e.g. \"socket\")");
    std::vector<char> seen(static_cast<std::size_t>(node.devices), 0);
    for (std::size_t g = 0; g < level.groups.size(); ++g) {
      const std::string groupPath = fmt::format("{} groups[{}]", path, g);
      if (level.groups[g].empty()) fail(groupPath, "is empty; remove it or list its devices");
      for (int device : level.groups[g]) {
        checkDeviceIndex(node, groupPath, device);
        if (seen[static_cast<std::size_t>(device)]++ != 0)
          fail(groupPath, fmt::format("device {} is in two groups of this level", device));
      }
    }
  }
}

void checkDeviceModel(const DeviceModel& device) {
  const std::string path = "node.device";
  checkRate(path, "reduce_GBps", device.reduceRate, false);
  checkRate(path, "copy_GBps", device.copyRate, false);
  if (device.engines < 0)
    fail(path, fmt::format("engines is {}; use 0 (unlimited) or a positive count", device.engines));
  if (device.slices < 1)
    fail(path, fmt::format("slices is {}; use 1 (store and forward) or more (GPU pipelining)",
                           device.slices));
  if (device.sendPorts < 0)
    fail(path,
         fmt::format("send_ports is {}; use 0 (unlimited) or a positive count", device.sendPorts));
  checkSeconds(path, "step_overhead_us", device.stepOverhead);
  checkSeconds(path, "message_latency_us", device.messageLatency);
  for (const auto* curve : {&device.copyCurve, &device.reduceCurve}) {
    const char* name = curve == &device.copyCurve ? "copy_curve" : "reduce_curve";
    for (std::size_t i = 0; i < curve->size(); ++i) {
      const RatePoint& point = (*curve)[i];
      const std::string at = fmt::format("{}.{}[{}]", path, name, i);
      if (!(point.workingSet > 0) || !(point.rate > 0) || !std::isfinite(point.rate))
        fail(at, "needs a working set > 0 bytes and a rate > 0 GB/s");
      if (i > 0 && !(point.workingSet > (*curve)[i - 1].workingSet))
        fail(at, "working sets must increase from one point to the next");
    }
  }
}

// Every device reaches every other one through switches only (devices do not forward).
void checkConnected(const NodeModel& node) {
  const std::size_t vertices = node.vertices.size();
  std::vector<std::vector<int>> adjacent(vertices);
  for (const Link& link : node.links) {
    adjacent[static_cast<std::size_t>(link.a)].push_back(link.b);
    adjacent[static_cast<std::size_t>(link.b)].push_back(link.a);
  }
  std::vector<int> seenBy(vertices, -1);
  std::vector<int> stack;
  for (int s = 0; s < node.devices; ++s) {
    stack.assign(1, s);
    seenBy[static_cast<std::size_t>(s)] = s;
    while (!stack.empty()) {
      const int u = stack.back();
      stack.pop_back();
      if (u != s && u < node.devices) continue;  // devices are endpoints only
      for (int v : adjacent[static_cast<std::size_t>(u)]) {
        if (seenBy[static_cast<std::size_t>(v)] == s) continue;
        seenBy[static_cast<std::size_t>(v)] = s;
        stack.push_back(v);
      }
    }
    for (int d = 0; d < node.devices; ++d) {
      if (seenBy[static_cast<std::size_t>(d)] != s) {
        fail("node.links",
             fmt::format("device '{}' cannot reach device '{}' (routes pass through switches "
                         "only, never through another device); add a link between them or "
                         "through a switch both reach",
                         node.vertices[static_cast<std::size_t>(s)].name,
                         node.vertices[static_cast<std::size_t>(d)].name));
      }
    }
  }
}

}  // namespace

double rateAt(const std::vector<RatePoint>& curve, double workingSet, double flat) {
  if (curve.empty()) return flat;
  if (workingSet <= curve.front().workingSet) return curve.front().rate;
  if (workingSet >= curve.back().workingSet) return curve.back().rate;
  std::size_t i = 1;
  while (curve[i].workingSet < workingSet)
    ++i;
  const RatePoint& a = curve[i - 1];
  const RatePoint& b = curve[i];
  const double t = std::log(workingSet / a.workingSet) / std::log(b.workingSet / a.workingSet);
  return std::exp(std::log(a.rate) + t * (std::log(b.rate) - std::log(a.rate)));
}

std::string_view linkKindName(LinkKind kind) {
  return kLinkKindNames[static_cast<std::size_t>(kind)];
}

LinkKind parseLinkKind(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kLinkKindNames); ++i)
    if (kLinkKindNames[i] == name) return static_cast<LinkKind>(i);
  throw ParseError(fmt::format(
      "unknown link kind '{}'; use nvlink, nvswitch, pcie, xbus, memory or other", name));
}

void validate(const Topology& topology) {
  if (topology.nodes < 1)
    fail("nodes", fmt::format("is {}; a topology has at least 1 node", topology.nodes));
  checkVertices(topology.node);
  if (static_cast<long long>(topology.nodes) * topology.node.devices > kMaxRanks) {
    fail("nodes", fmt::format("{} nodes of {} devices exceed {} ranks; use fewer nodes",
                              topology.nodes, topology.node.devices, kMaxRanks));
  }
  checkLinks(topology.node);
  checkNics(topology);
  checkLevels(topology.node);
  checkDeviceModel(topology.node.device);
  if (topology.node.cores < 0) {
    fail("node.cores",
         fmt::format("is {}; use 0 (each device has its own processor) or a core count",
                     topology.node.cores));
  }
  checkSeconds("node", "wake_latency_us", topology.node.wakeLatency);
  checkSeconds("network", "latency_us", topology.network.latency);
  if (!std::isfinite(topology.network.oversubscription) || topology.network.oversubscription < 1) {
    fail("network", fmt::format("oversubscription is {:g}; it must be >= 1 (1 = non-blocking)",
                                topology.network.oversubscription));
  }
  checkConnected(topology.node);
}

Topology withNodes(Topology topology, int nodes) {
  if (nodes < 1)
    throw OptionError(fmt::format("--nodes {} is invalid; a topology has at least 1 node", nodes));
  if (nodes > 1) {
    std::vector<char> onNic(static_cast<std::size_t>(std::max(topology.node.devices, 0)), 0);
    for (const Nic& nic : topology.node.nics)
      for (int device : nic.devices)
        if (device >= 0 && device < topology.node.devices)
          onNic[static_cast<std::size_t>(device)] = 1;
    for (int d = 0; d < topology.node.devices; ++d) {
      if (onNic[static_cast<std::size_t>(d)] == 0) {
        throw OptionError(fmt::format(
            "topology '{}' cannot span {} nodes: device '{}' has no NIC; use 1 node or a "
            "topology whose node lists NICs for every device",
            topology.name, nodes,
            d < static_cast<int>(topology.node.vertices.size())
                ? topology.node.vertices[static_cast<std::size_t>(d)].name
                : fmt::format("#{}", d)));
      }
    }
  }
  topology.nodes = nodes;
  return topology;
}

}  // namespace chorus::topology
