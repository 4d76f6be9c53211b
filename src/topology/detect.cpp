#include "topology/detect.h"

#include <fmt/format.h>
#include <hwloc.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "support/env.h"
#include "support/error.h"

namespace chorus::topology {
namespace {

struct HwlocDeleter {
  void operator()(hwloc_topology* topology) const { hwloc_topology_destroy(topology); }
};
using HwlocTopology = std::unique_ptr<hwloc_topology, HwlocDeleter>;

HwlocTopology loadHwloc() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0)
    throw UserError("hwloc could not start (hwloc_topology_init failed); is libhwloc installed?");
  HwlocTopology topology(raw);
  if (hwloc_topology_load(raw) != 0) {
    throw UserError(
        "hwloc could not read this machine's topology (hwloc_topology_load failed); check that "
        "/sys and /proc are readable");
  }
  return topology;
}

int countOf(hwloc_topology_t topology, hwloc_obj_type_t type) {
  const int n = hwloc_get_nbobjs_by_type(topology, type);
  return std::max(n, 0);
}

std::string cpuModelOf(hwloc_topology_t topology) {
  for (int p = 0; p < countOf(topology, HWLOC_OBJ_PACKAGE); ++p) {
    hwloc_obj_t package =
        hwloc_get_obj_by_type(topology, HWLOC_OBJ_PACKAGE, static_cast<unsigned>(p));
    if (const char* model = hwloc_obj_get_info_by_name(package, "CPUModel")) return model;
  }
  return "unknown CPU";
}

void requirePositive(const char* what, double value) {
  if (!std::isfinite(value) || value <= 0) {
    throw OptionError(fmt::format(
        "calibration {} is {:g}; it must be > 0 (rerun `chorus topology detect`, or use "
        "--no-calibrate for the defaults)",
        what, value));
  }
}

}  // namespace

HostInfo describeHost() {
  const HwlocTopology topology = loadHwloc();
  hwloc_topology_t t = topology.get();
  HostInfo host;
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) == 0) host.hostname = name;
  host.cpuModel = cpuModelOf(t);
  host.packages = countOf(t, HWLOC_OBJ_PACKAGE);
  host.numaNodes = countOf(t, HWLOC_OBJ_NUMANODE);
  host.cores = countOf(t, HWLOC_OBJ_CORE);
  host.pus = countOf(t, HWLOC_OBJ_PU);
  if (host.cores == 0) host.cores = std::max(host.pus, 1);  // hwloc without core objects
  if (host.pus == 0) host.pus = host.cores;
  for (int n = 0; n < host.numaNodes; ++n) {
    hwloc_obj_t numa = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(n));
    std::vector<int> cores;
    for (int c = 0; c < countOf(t, HWLOC_OBJ_CORE); ++c) {
      hwloc_obj_t core = hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, static_cast<unsigned>(c));
      if (numa->cpuset != nullptr && core->cpuset != nullptr &&
          hwloc_bitmap_intersects(core->cpuset, numa->cpuset))
        cores.push_back(c);
    }
    host.coresPerNuma.push_back(std::move(cores));
  }
  return host;
}

Calibration defaultCalibration() {
  // Round numbers of the order `chorus topology detect` measures on an idle x86 host
  // (docs/topology.md "Defaults").
  Calibration calibration;
  calibration.messageLatency = 0.5e-6;
  calibration.copyRate = 8e9;
  calibration.memoryBandwidth = 20e9;
  calibration.reduceRate = 5e9;
  calibration.stepOverhead = 0.1e-6;
  calibration.wakeLatency = 5e-6;
  return calibration;
}

Topology localTopology(const HostInfo& host, const Calibration& calibration, int ranks) {
  requirePositive("copy rate", calibration.copyRate);
  requirePositive("memory bandwidth", calibration.memoryBandwidth);
  requirePositive("reduce rate", calibration.reduceRate);
  if (calibration.messageLatency < 0 || calibration.stepOverhead < 0)
    requirePositive("latency", std::min(calibration.messageLatency, calibration.stepOverhead));
  if (ranks <= 0) ranks = std::max(2, host.cores);

  Topology topology;
  topology.name = "local";
  topology.description = fmt::format(
      "{}: {}, {} cores ({} hardware threads), {} NUMA node{}; chorus shm transport "
      "calibrated by `chorus topology detect`",
      host.hostname.empty() ? "this host" : host.hostname, host.cpuModel, host.cores, host.pus,
      host.numaNodes, host.numaNodes == 1 ? "" : "s");
  NodeModel& node = topology.node;
  node.name = "shared-memory host";
  node.devices = ranks;
  for (int r = 0; r < ranks; ++r)
    node.vertices.push_back({fmt::format("rank{}", r)});
  // Fitted curves already contain what the memory bus costs two ranks on two cores; the bus
  // then only binds beyond what every core could do at the curves' best rate.
  double busBandwidth = calibration.memoryBandwidth;
  for (const auto* curve : {&calibration.copyCurve, &calibration.reduceCurve})
    for (const RatePoint& point : *curve)
      busBandwidth = std::max(busBandwidth, point.rate * std::max(1, host.cores));
  node.vertices.push_back({"memory", busBandwidth, true});
  for (int r = 0; r < ranks; ++r) {
    Link link;
    link.name = fmt::format("shm rank{}", r);
    link.kind = LinkKind::memory;
    link.a = r;
    link.b = ranks;
    link.bandwidth = busBandwidth;
    link.latency = 0;
    node.links.push_back(std::move(link));
  }
  // Ranks are not pinned; the level assumes the scheduler fills NUMA nodes in order, in
  // proportion to their cores.
  if (host.numaNodes > 1 && static_cast<int>(host.coresPerNuma.size()) == host.numaNodes) {
    Level level;
    level.name = "numa";
    int totalCores = 0;
    for (const auto& cores : host.coresPerNuma)
      totalCores += static_cast<int>(cores.size());
    int next = 0;
    int coresBefore = 0;
    for (const auto& cores : host.coresPerNuma) {
      coresBefore += static_cast<int>(cores.size());
      const int end = totalCores == 0 ? ranks : ranks * coresBefore / totalCores;
      std::vector<int> group;
      for (; next < end; ++next)
        group.push_back(next);
      if (!group.empty()) level.groups.push_back(std::move(group));
    }
    if (level.groups.size() > 1) node.levels.push_back(std::move(level));
  }
  node.device.kind = "cpu-core";
  node.device.copyRate = calibration.copyRate;
  node.device.reduceRate = calibration.reduceRate;
  node.device.copyCurve = calibration.copyCurve;
  node.device.reduceCurve = calibration.reduceCurve;
  node.device.engines = 1;
  node.device.stepOverhead = calibration.stepOverhead;
  node.device.messageLatency = calibration.messageLatency;
  node.cores = host.cores;
  node.wakeLatency = calibration.wakeLatency;
  validate(topology);
  return topology;
}

std::string localTopologyPath() {
  if (auto path = envString("CHORUS_TOPOLOGY_LOCAL")) return *path;
  if (auto cache = envString("XDG_CACHE_HOME")) return *cache + "/chorus/topology-local.json";
  if (auto home = envString("HOME")) return *home + "/.cache/chorus/topology-local.json";
  return "topology-local.json";
}

}  // namespace chorus::topology
