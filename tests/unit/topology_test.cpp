// The topology layer (src/topology): presets validate and route as documented (DGX-1's
// NVLink pairs, PCIe/QPI otherwise), shared resources, the routing rule's tie-breaks,
// cross-node routes through NICs and an oversubscribed core, chorus-topology/1 round trips
// and path-naming errors, loadTopology, and the local (detect) model.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "support/error.h"
#include "temp_dir.h"
#include "topology/detect.h"
#include "topology/fabric.h"
#include "topology/presets.h"
#include "topology/topology.h"
#include "topology/topology_json.h"

namespace chorus::topology {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr double kGB = 1e9;
constexpr double kUs = 1e-6;

std::vector<std::string> builtinPresets() {
  std::vector<std::string> names;
  for (const PresetInfo& info : presets())
    if (info.name != "local") names.push_back(info.name);
  return names;
}

std::vector<std::string> resourceNames(Fabric& fabric, int src, int dst) {
  std::vector<std::string> names;
  for (int r : fabric.route(src, dst).resources)
    names.push_back(fabric.resources()[static_cast<std::size_t>(r)].name);
  return names;
}

// Sets an environment variable for one scope, restoring the old value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

using chorus::testing_support::TempDir;

void expectNear(double a, double b, const std::string& what) {
  EXPECT_NEAR(a, b, 1e-9 * std::max(std::abs(a), std::abs(b))) << what;
}

// a == b up to the JSON format's 12 significant digits.
void expectSameTopology(const Topology& a, const Topology& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.description, b.description);
  EXPECT_EQ(a.nodes, b.nodes);
  expectNear(a.network.latency, b.network.latency, "network latency");
  expectNear(a.network.oversubscription, b.network.oversubscription, "oversubscription");
  const NodeModel& x = a.node;
  const NodeModel& y = b.node;
  EXPECT_EQ(x.name, y.name);
  EXPECT_EQ(x.devices, y.devices);
  EXPECT_EQ(x.cores, y.cores);
  expectNear(x.wakeLatency, y.wakeLatency, "wake latency");
  ASSERT_EQ(x.vertices.size(), y.vertices.size());
  for (std::size_t v = 0; v < x.vertices.size(); ++v) {
    EXPECT_EQ(x.vertices[v].name, y.vertices[v].name);
    expectNear(x.vertices[v].bandwidth, y.vertices[v].bandwidth, x.vertices[v].name);
    EXPECT_EQ(x.vertices[v].memory, y.vertices[v].memory);
  }
  ASSERT_EQ(x.links.size(), y.links.size());
  for (std::size_t l = 0; l < x.links.size(); ++l) {
    EXPECT_EQ(x.links[l].name, y.links[l].name);
    EXPECT_EQ(x.links[l].kind, y.links[l].kind);
    EXPECT_EQ(x.links[l].a, y.links[l].a);
    EXPECT_EQ(x.links[l].b, y.links[l].b);
    expectNear(x.links[l].bandwidth, y.links[l].bandwidth, x.links[l].name);
    expectNear(x.links[l].latency, y.links[l].latency, x.links[l].name);
    EXPECT_EQ(x.links[l].duplex, y.links[l].duplex);
  }
  ASSERT_EQ(x.nics.size(), y.nics.size());
  for (std::size_t n = 0; n < x.nics.size(); ++n) {
    EXPECT_EQ(x.nics[n].name, y.nics[n].name);
    EXPECT_EQ(x.nics[n].devices, y.nics[n].devices);
    expectNear(x.nics[n].bandwidth, y.nics[n].bandwidth, x.nics[n].name);
    expectNear(x.nics[n].latency, y.nics[n].latency, x.nics[n].name);
  }
  ASSERT_EQ(x.levels.size(), y.levels.size());
  for (std::size_t i = 0; i < x.levels.size(); ++i) {
    EXPECT_EQ(x.levels[i].name, y.levels[i].name);
    EXPECT_EQ(x.levels[i].groups, y.levels[i].groups);
  }
  EXPECT_EQ(x.device.kind, y.device.kind);
  expectNear(x.device.reduceRate, y.device.reduceRate, "reduceRate");
  expectNear(x.device.copyRate, y.device.copyRate, "copyRate");
  EXPECT_EQ(x.device.engines, y.device.engines);
  expectNear(x.device.stepOverhead, y.device.stepOverhead, "stepOverhead");
  expectNear(x.device.messageLatency, y.device.messageLatency, "messageLatency");
}

HostInfo twoSocketHost() {
  HostInfo host;
  host.hostname = "testhost";
  host.cpuModel = "Test CPU";
  host.packages = 2;
  host.numaNodes = 2;
  host.cores = 4;
  host.pus = 8;
  host.coresPerNuma = {{0, 1}, {2, 3}};
  return host;
}

// A small node for routing tests: devices d0..d(n-1), then the given switches.
NodeModel smallNode(int devices, std::vector<Vertex> switches) {
  NodeModel node;
  node.name = "test";
  node.devices = devices;
  for (int d = 0; d < devices; ++d)
    node.vertices.push_back({fmt::format("d{}", d)});
  for (Vertex& s : switches)
    node.vertices.push_back(std::move(s));
  return node;
}

void addLink(NodeModel& node, int a, int b, double gbps, double us = 0, bool duplex = true) {
  Link link;
  // Appended, not "l" + to_string(...): GCC 12 flags that with a false -Wrestrict (PR105329).
  link.name = "l";
  link.name += std::to_string(node.links.size());
  link.a = a;
  link.b = b;
  link.bandwidth = gbps * kGB;
  link.latency = us * kUs;
  link.duplex = duplex;
  node.links.push_back(link);
}

Topology single(NodeModel node) {
  Topology topology;
  topology.name = "test";
  topology.node = std::move(node);
  return topology;
}

// ---------------------------------------------------------------------------------------------
// Presets

TEST(TopologyPresets, EveryPresetValidatesAndBuildsAFabric) {
  for (const std::string& name : builtinPresets()) {
    SCOPED_TRACE(name);
    const Topology topology = preset(name);
    EXPECT_EQ(topology.name, name);
    EXPECT_EQ(topology.nodes, 1);
    EXPECT_NO_THROW(validate(topology));
    Fabric fabric(topology);
    EXPECT_EQ(fabric.ranks(), topology.node.devices);
    for (int s = 0; s < fabric.ranks(); ++s) {
      for (int d = 0; d < fabric.ranks(); ++d) {
        if (s == d) continue;
        const Route& route = fabric.route(s, d);
        EXPECT_GT(route.bandwidth, 0);
        EXPECT_FALSE(route.resources.empty());
      }
    }
    const auto& info = presets();
    const auto it =
        std::find_if(info.begin(), info.end(), [&](const PresetInfo& p) { return p.name == name; });
    ASSERT_NE(it, info.end());
    EXPECT_EQ(it->devices, topology.node.devices);
    EXPECT_FALSE(it->summary.empty());
  }
}

TEST(TopologyPresets, AliasesAndUnknownNames) {
  EXPECT_EQ(preset("DGX-1").name, "dgx1");
  EXPECT_EQ(preset("dgxa100").name, "dgx-a100");
  EXPECT_EQ(preset("a2-megagpu-16g").name, "hgx-a100-16");
  EXPECT_EQ(preset("sierra").name, "lassen");
  try {
    preset("dgx9");
    FAIL() << "expected OptionError";
  } catch (const OptionError& error) {
    EXPECT_THAT(error.what(), HasSubstr("unknown topology 'dgx9'"));
    EXPECT_THAT(error.what(), HasSubstr("dgx1, dgx2, dgx-a100"));
    EXPECT_THAT(error.what(), HasSubstr("hgx-a100-16"));
  }
}

TEST(TopologyPresets, NumbersFollowTheirSources) {
  // P² §5: NVLink at 90% of nominal, 100 Gb/s NICs at 60%.
  Fabric a100(preset("hgx-a100-16", 2));
  EXPECT_DOUBLE_EQ(a100.route(0, 15).bandwidth, 270 * kGB);
  EXPECT_DOUBLE_EQ(a100.route(0, 16).bandwidth, 7.5 * kGB);
  const Topology h100 = preset("dgx-h100");
  EXPECT_DOUBLE_EQ(Fabric(h100).route(0, 7).bandwidth, 405 * kGB);
  EXPECT_DOUBLE_EQ(h100.node.device.reduceRate, 36.7 * kGB);
  EXPECT_DOUBLE_EQ(preset("dgx2").node.device.copyRate, 20 * kGB);
  EXPECT_EQ(preset("hgx-a100-16").node.nics.size(), 1u);
  EXPECT_EQ(preset("dgx-a100").node.nics.size(), 8u);
  // DGX A100 / H100 NICs: the IB data rate less packet headers at a 4 KiB MTU (26 bytes).
  EXPECT_DOUBLE_EQ(preset("dgx-a100").node.nics[0].bandwidth, 25 * kGB * 4096 / 4122);
  EXPECT_DOUBLE_EQ(preset("dgx-h100").node.nics[0].bandwidth, 50 * kGB * 4096 / 4122);
  Fabric summit(preset("summit"));
  EXPECT_DOUBLE_EQ(summit.route(0, 1).bandwidth, 45 * kGB);
  EXPECT_DOUBLE_EQ(summit.route(0, 3).bandwidth, 45 * kGB);  // over both CPUs and the X-Bus
  EXPECT_THAT(resourceNames(summit, 0, 3), ElementsAre("node0 nvlink cpu0-gpu0 x2 (gpu0->cpu0)",
                                                       "node0 xbus cpu0-cpu1 (cpu0->cpu1)",
                                                       "node0 nvlink cpu1-gpu3 x2 (cpu1->gpu3)"));
}

// P² §4, §5 "Assumptions", Figure 9(b): an NVLink ring at 135 GB/s/dir, 32 GB/s PCIe switches
// for GPU pairs, two CPUs of four GPUs joined through the one 7.5 GB/s NIC; no levels, so P²'s
// hierarchy is [(node, N), (device, 8)].
TEST(TopologyPresets, GcpV100IsP2sFigure9b) {
  const Topology v100 = preset("gcp-v100", 2);
  EXPECT_EQ(v100.ranks(), 16);
  EXPECT_TRUE(v100.node.levels.empty());
  int ring = 0;
  for (const Link& link : v100.node.links)
    if (link.kind == LinkKind::nvlink) {
      ++ring;
      EXPECT_DOUBLE_EQ(link.bandwidth, 135 * kGB);
      EXPECT_TRUE(link.b - link.a == 1 || (link.a == 0 && link.b == 7)) << link.name;
    }
  EXPECT_EQ(ring, 8);
  ASSERT_EQ(v100.node.nics.size(), 1u);
  EXPECT_EQ(v100.node.nics[0].devices.size(), 8u);
  EXPECT_DOUBLE_EQ(v100.node.nics[0].bandwidth, 7.5 * kGB);
  Fabric fabric(v100);
  EXPECT_DOUBLE_EQ(fabric.route(0, 1).bandwidth, 135 * kGB);
  EXPECT_DOUBLE_EQ(fabric.route(7, 0).bandwidth, 135 * kGB);
  EXPECT_THAT(
      resourceNames(fabric, 0, 2),
      ElementsAre("node0 pcie gpu0-pcie0 (gpu0->pcie0)", "node0 pcie0",
                  "node0 pcie pcie0-cpu0 (pcie0->cpu0)", "node0 pcie pcie1-cpu0 (cpu0->pcie1)",
                  "node0 pcie1", "node0 pcie gpu2-pcie1 (pcie1->gpu2)"));
  EXPECT_DOUBLE_EQ(fabric.route(0, 2).bandwidth, 32 * kGB);
  EXPECT_DOUBLE_EQ(fabric.route(0, 4).bandwidth, 7.5 * kGB);  // across the CPUs: the NIC's rate
  EXPECT_DOUBLE_EQ(fabric.route(0, 8).bandwidth, 7.5 * kGB);
  EXPECT_EQ(preset("gcpv100").name, "gcp-v100");
}

// ---------------------------------------------------------------------------------------------
// DGX-1 routes

TEST(TopologyFabric, Dgx1DoubleNvlinkPairIsTwiceASinglePair) {
  Fabric fabric(preset("dgx1"));
  const Route& doublePair = fabric.route(0, 3);
  const Route& singlePair = fabric.route(0, 1);
  EXPECT_DOUBLE_EQ(doublePair.bandwidth, 2 * singlePair.bandwidth);
  EXPECT_DOUBLE_EQ(singlePair.bandwidth, 22.5 * kGB);
  EXPECT_THAT(resourceNames(fabric, 0, 3), ElementsAre("node0 nvlink gpu0-gpu3 x2 (gpu0->gpu3)"));
  EXPECT_THAT(resourceNames(fabric, 3, 0), ElementsAre("node0 nvlink gpu0-gpu3 x2 (gpu3->gpu0)"));
  EXPECT_DOUBLE_EQ(doublePair.latency, 0.6 * kUs);
}

TEST(TopologyFabric, Dgx1OtherPairsCrossPcieAndQpiNotAnotherGpu) {
  Fabric fabric(preset("dgx1"));
  EXPECT_THAT(resourceNames(fabric, 0, 5),
              ElementsAre("node0 pcie gpu0-pcie0 (gpu0->pcie0)", "node0 pcie0",
                          "node0 pcie pcie0-cpu0 (pcie0->cpu0)", "node0 qpi cpu0-cpu1 (cpu0->cpu1)",
                          "node0 pcie pcie2-cpu1 (cpu1->pcie2)", "node0 pcie2",
                          "node0 pcie gpu5-pcie2 (pcie2->gpu5)"));
  EXPECT_DOUBLE_EQ(fabric.route(0, 5).bandwidth, 6 * kGB);  // NCCL's Broadwell QPI
  EXPECT_DOUBLE_EQ(fabric.route(0, 5).latency, 2.5 * kUs);
}

TEST(TopologyFabric, Dgx1MatchesTheNvidiaSmiMatrix) {
  // MXNet's p3.16xlarge matrix (docs/sources.md "MXNet tree backend"): 3 = two NVLinks, 2 = one
  // NVLink, 1 = PCIe only.
  const int matrix[8][8] = {{0, 2, 2, 3, 3, 1, 1, 1}, {2, 0, 3, 2, 1, 3, 1, 1},
                            {2, 3, 0, 3, 1, 1, 2, 1}, {3, 2, 3, 0, 1, 1, 1, 2},
                            {3, 1, 1, 1, 0, 2, 2, 3}, {1, 3, 1, 1, 2, 0, 3, 2},
                            {1, 1, 2, 1, 2, 3, 0, 3}, {1, 1, 1, 2, 3, 2, 3, 0}};
  const double bandwidth[] = {0, 6 * kGB, 22.5 * kGB, 45 * kGB};
  Fabric fabric(preset("dgx1"));
  for (int s = 0; s < 8; ++s) {
    for (int d = 0; d < 8; ++d) {
      if (s == d) continue;
      EXPECT_DOUBLE_EQ(fabric.route(s, d).bandwidth, bandwidth[matrix[s][d]]) << s << "->" << d;
    }
  }
}

TEST(TopologyFabric, FlowsThroughOneLinkShareItsResource) {
  // d0, d1 and d2 on switch s (vertex 3): d0->d2 and d1->d2 share the s->d2 direction.
  NodeModel node = smallNode(3, {{"s", 0}});
  addLink(node, 0, 3, 10);
  addLink(node, 1, 3, 10);
  addLink(node, 2, 3, 10);
  Fabric fabric(single(node));
  const std::vector<int> a = fabric.route(0, 2).resources;
  const std::vector<int> b = fabric.route(1, 2).resources;
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_NE(a[0], b[0]);
  EXPECT_EQ(a[1], b[1]);
  EXPECT_EQ(fabric.resources()[static_cast<std::size_t>(a[1])].name, "node0 l2 (s->d2)");
  // The opposite direction of a duplex link is another resource.
  EXPECT_NE(fabric.route(2, 0).resources[0], a[1]);
  // A switch with a bandwidth is one more resource shared by every route through it.
  NodeModel capped = smallNode(3, {{"s", 4 * kGB}});
  capped.links = node.links;
  Fabric cappedFabric(single(capped));
  EXPECT_THAT(resourceNames(cappedFabric, 0, 2),
              ElementsAre("node0 l0 (d0->s)", "node0 s", "node0 l2 (s->d2)"));
  EXPECT_EQ(cappedFabric.route(0, 2).resources[1], cappedFabric.route(2, 1).resources[1]);
  EXPECT_DOUBLE_EQ(cappedFabric.route(0, 2).bandwidth, 4 * kGB);
  // A non-duplex link is one resource for both directions.
  NodeModel halfDuplex = smallNode(2, {});
  addLink(halfDuplex, 0, 1, 8, 0, false);
  Fabric halfFabric(single(halfDuplex));
  EXPECT_EQ(halfFabric.route(0, 1).resources, halfFabric.route(1, 0).resources);
  EXPECT_THAT(resourceNames(halfFabric, 0, 1), ElementsAre("node0 l0 (d0<->d1)"));
}

TEST(TopologyFabric, RoutesAreWidestThenFewestHopsThenLowestLatency) {
  // d0-d1 direct at 10 GB/s, or through s2 (vertex 2) at 20 GB/s: the wider path wins.
  NodeModel wide = smallNode(2, {{"s2", 0}});
  addLink(wide, 0, 1, 10);
  addLink(wide, 0, 2, 20);
  addLink(wide, 2, 1, 20);
  Fabric wideFabric(single(wide));
  EXPECT_EQ(wideFabric.route(0, 1).resources.size(), 2u);
  EXPECT_DOUBLE_EQ(wideFabric.route(0, 1).bandwidth, 20 * kGB);
  // A switch cap below the direct link's bandwidth makes the direct link the wider path.
  wide.vertices[2].bandwidth = 5 * kGB;
  Fabric cappedFabric(single(wide));
  EXPECT_THAT(resourceNames(cappedFabric, 0, 1), ElementsAre("node0 l0 (d0->d1)"));
  // Equal width: fewest hops (direct), then lowest latency (through s3, vertex 3).
  NodeModel hops = smallNode(2, {{"s2", 0}, {"s3", 0}});
  addLink(hops, 0, 2, 10, 1.0);
  addLink(hops, 2, 1, 10, 1.0);
  addLink(hops, 0, 3, 10, 0.5);
  addLink(hops, 3, 1, 10, 0.5);
  Fabric latencyFabric(single(hops));
  EXPECT_THAT(resourceNames(latencyFabric, 0, 1),
              ElementsAre("node0 l2 (d0->s3)", "node0 l3 (s3->d1)"));
  EXPECT_DOUBLE_EQ(latencyFabric.route(0, 1).latency, 1 * kUs);
  addLink(hops, 0, 1, 10, 5.0);
  Fabric directFabric(single(hops));
  EXPECT_THAT(resourceNames(directFabric, 0, 1), ElementsAre("node0 l4 (d0->d1)"));
  // Full tie: the lowest vertex indices (s2 before s3).
  NodeModel tie = smallNode(2, {{"s2", 0}, {"s3", 0}});
  addLink(tie, 0, 3, 10);
  addLink(tie, 3, 1, 10);
  addLink(tie, 0, 2, 10);
  addLink(tie, 2, 1, 10);
  Fabric tieFabric(single(tie));
  EXPECT_THAT(resourceNames(tieFabric, 0, 1),
              ElementsAre("node0 l2 (d0->s2)", "node0 l3 (s2->d1)"));
}

TEST(TopologyFabric, WithNodesRoutesAcrossNodesThroughNics) {
  Fabric fabric(preset("dgx1", 2));
  EXPECT_EQ(fabric.ranks(), 16);
  EXPECT_THAT(resourceNames(fabric, 0, 8), ElementsAre("node0 nic0 tx", "node1 nic0 rx"));
  EXPECT_THAT(resourceNames(fabric, 3, 13), ElementsAre("node0 nic1 tx", "node1 nic2 rx"));
  EXPECT_DOUBLE_EQ(fabric.route(0, 8).bandwidth, 7.5 * kGB);
  EXPECT_NEAR(fabric.route(0, 8).latency, (1.5 + 1.0 + 1.5) * kUs, 1e-15);
  // Routes inside node 1 use node 1's resources.
  EXPECT_THAT(resourceNames(fabric, 8, 11), ElementsAre("node1 nvlink gpu0-gpu3 x2 (gpu0->gpu3)"));
  // Sources on one NIC share its tx resource.
  EXPECT_EQ(fabric.route(0, 9).resources[0], fabric.route(1, 12).resources[0]);
  EXPECT_TRUE(fabric.localResources(9).empty());

  EXPECT_THROW(preset("uniform", 2), OptionError);
  EXPECT_THROW(withNodes(preset("dgx1"), 0), OptionError);
}

TEST(TopologyFabric, OversubscribedNetworkAddsACore) {
  // Lassen: one 7.5 GB/s NIC per node, 2:1 tapered: the core carries 4 x 7.5 / 2 = 15 GB/s.
  Fabric lassen(preset("lassen", 4));
  EXPECT_THAT(resourceNames(lassen, 0, 4),
              ElementsAre("node0 nic0 tx", "network core", "node1 nic0 rx"));
  const Resource& core = lassen.resources().back();
  EXPECT_EQ(core.name, "network core");
  EXPECT_DOUBLE_EQ(core.bandwidth, 15 * kGB);
  EXPECT_DOUBLE_EQ(lassen.route(0, 4).bandwidth, 7.5 * kGB);
  // A core narrower than a NIC bounds a lone flow.
  Topology tapered = preset("hgx-a100-16", 2);
  tapered.network.oversubscription = 4;
  Fabric fabric(tapered);
  EXPECT_DOUBLE_EQ(fabric.route(0, 16).bandwidth, 2 * 7.5 / 4 * kGB);
  // Non-blocking: no core.
  Fabric dgx(preset("dgx1", 2));
  for (const Resource& r : dgx.resources())
    EXPECT_NE(r.name, "network core");
}

TEST(TopologyFabric, ThousandRanksBuildWithoutAllPairs) {
  Fabric fabric(preset("dgx1", 128));
  EXPECT_EQ(fabric.ranks(), 1024);
  EXPECT_EQ(fabric.resources().size(), 128u * 70u);
  EXPECT_THAT(resourceNames(fabric, 1023, 0), ElementsAre("node127 nic3 tx", "node0 nic0 rx"));
  EXPECT_THAT(resourceNames(fabric, 1016, 1019),
              ElementsAre("node127 nvlink gpu0-gpu3 x2 (gpu0->gpu3)"));
}

TEST(TopologyFabric, UniformTopologyIsTheAlphaBetaGammaMachine) {
  const Topology topology = uniformTopology(5, 2 * kUs, 5 * kGB, 7 * kGB);
  EXPECT_EQ(topology.node.links.size(), 10u);
  EXPECT_DOUBLE_EQ(topology.node.device.reduceRate, 7 * kGB);
  EXPECT_EQ(topology.node.device.copyRate, 0);
  EXPECT_EQ(topology.node.device.engines, 0);
  Fabric fabric(topology);
  for (int s = 0; s < 5; ++s) {
    for (int d = 0; d < 5; ++d) {
      if (s == d) continue;
      const Route& route = fabric.route(s, d);
      EXPECT_EQ(route.resources.size(), 1u);
      EXPECT_DOUBLE_EQ(route.bandwidth, 5 * kGB);
      EXPECT_DOUBLE_EQ(route.latency, 2 * kUs);
    }
  }
  EXPECT_NE(fabric.route(0, 1).resources, fabric.route(1, 0).resources);
  const Topology defaults = preset("uniform");
  EXPECT_EQ(defaults.node.devices, 8);
  EXPECT_DOUBLE_EQ(Fabric(defaults).route(0, 7).bandwidth, 10 * kGB);
  EXPECT_THROW(uniformTopology(0, 0, 1, 1), OptionError);
  EXPECT_THROW(uniformTopology(2, 0, 0, 1), OptionError);
}

// ---------------------------------------------------------------------------------------------
// JSON

TEST(TopologyJson, EveryPresetRoundTrips) {
  std::vector<Topology> models;
  for (const std::string& name : builtinPresets())
    models.push_back(preset(name, name == "uniform" ? 1 : 3));
  models.push_back(uniformTopology(3, 0.7 * kUs, 12.3456789 * kGB, 3.3 * kGB));
  models.push_back(localTopology(twoSocketHost(), defaultCalibration(), 6));
  for (const Topology& model : models) {
    SCOPED_TRACE(model.name);
    const std::string text = toTopologyJson(model);
    const Topology parsed = parseTopologyJson(text);
    expectSameTopology(parsed, model);
    EXPECT_EQ(toTopologyJson(parsed), text);
  }
}

TEST(TopologyJson, DocumentFormat) {
  const std::string text = toTopologyJson(preset("dgx1"));
  EXPECT_THAT(text, HasSubstr("\"format\": \"chorus-topology/1\""));
  EXPECT_THAT(text, HasSubstr("\"devices\": 8,"));
  EXPECT_THAT(text, HasSubstr("{\"name\": \"nvlink gpu0-gpu3 x2\", \"kind\": \"nvlink\", "
                              "\"between\": [\"gpu0\", \"gpu3\"], \"bandwidth_GBps\": 45.0, "
                              "\"latency_us\": 0.6, \"duplex\": true}"));
  EXPECT_THAT(text, HasSubstr("{\"name\": \"nic0\", \"devices\": [0, 1], \"bandwidth_GBps\": 7.5"));
  // Device names other than gpu0.. are listed.
  EXPECT_THAT(toTopologyJson(uniformTopology(2, 1e-6, 1e9, 1e9)),
              HasSubstr("\"devices\": [\"rank0\", \"rank1\"]"));
}

TEST(TopologyJson, MinimalDocumentUsesDefaults) {
  const Topology t = parseTopologyJson(R"({
    "format": "chorus-topology/1", "name": "pair",
    "node": {"devices": 2, "switches": [{"name": "sw"}],
             "links": [{"between": [0, "sw"], "bandwidth_GBps": 10},
                       {"kind": "pcie", "between": ["gpu1", "sw"], "bandwidth_GBps": 5,
                        "latency_us": 0.25, "duplex": false}]}
  })");
  EXPECT_EQ(t.nodes, 1);
  EXPECT_EQ(t.node.vertices[0].name, "gpu0");
  EXPECT_EQ(t.node.links[0].name, "other gpu0-sw");
  EXPECT_EQ(t.node.links[0].kind, LinkKind::other);
  EXPECT_TRUE(t.node.links[0].duplex);
  EXPECT_EQ(t.node.links[1].kind, LinkKind::pcie);
  EXPECT_FALSE(t.node.links[1].duplex);
  EXPECT_DOUBLE_EQ(t.node.links[1].latency, 0.25 * kUs);
  EXPECT_DOUBLE_EQ(Fabric(t).route(0, 1).bandwidth, 5 * kGB);
  EXPECT_DOUBLE_EQ(t.network.oversubscription, 1);
}

// The parse error of `document` (ParseError expected).
std::string parseError(const std::string& document) {
  try {
    parseTopologyJson(document, "test.json");
  } catch (const ParseError& error) {
    return error.what();
  }
  ADD_FAILURE() << "no ParseError for " << document;
  return {};
}

std::string pairDocument(const std::string& link, const std::string& extra = "") {
  return R"({"format": "chorus-topology/1", "name": "t", "node": {"devices": 2,)" + extra +
         R"( "links": [)" + link + "]}}";
}

TEST(TopologyJson, ErrorsNameThePath) {
  EXPECT_THAT(
      parseError(pairDocument(R"({"between": [0, 1], "bandwdith_GBps": 10})")),
      HasSubstr("test.json: node.links[0].bandwdith_GBps: unknown key; check the spelling"));
  EXPECT_THAT(
      parseError(pairDocument(R"({"between": [0, 1], "bandwidth_GBps": -10})")),
      HasSubstr("test.json: node.links[0].bandwidth_GBps: is -10; it must be a number >= 0"));
  EXPECT_THAT(parseError(pairDocument(R"({"between": [0, 1], "bandwidth_GBps": 0})")),
              HasSubstr("node.links[0] 'other gpu0-gpu1': bandwidth_GBps is 0 GB/s; it must be a "
                        "number > 0"));
  EXPECT_THAT(parseError(pairDocument(R"({"between": ["gpu0", "gpu9"], "bandwidth_GBps": 1})")),
              HasSubstr("node.links[0].between[1]: 'gpu9' is not a vertex of the node; use one "
                        "of gpu0, gpu1"));
  EXPECT_THAT(parseError(pairDocument(R"({"between": [0, 2], "bandwidth_GBps": 1})")),
              HasSubstr("node.links[0].between[1]: 2 is not a device index (0..1)"));
  EXPECT_THAT(parseError(pairDocument(R"({"between": [0, "sw"], "bandwidth_GBps": 1})",
                                      R"( "switches": [{"name": "sw"}],)")),
              HasSubstr("node.links: device 'gpu0' cannot reach device 'gpu1'"));
  EXPECT_THAT(
      parseError(pairDocument(R"({"kind": "fiber", "between": [0, 1], "bandwidth_GBps": 1})")),
      HasSubstr("node.links[0].kind: unknown link kind 'fiber'; use nvlink, nvswitch"));
  EXPECT_THAT(
      parseError(R"({"format": "chorus-topology/2", "name": "t", "node": {"devices": 1}})"),
      HasSubstr("format: is \"chorus-topology/2\"; this chorus reads \"chorus-topology/1\""));
  EXPECT_THAT(parseError(R"({"format": "chorus-topology/1", "node": {"devices": 1}})"),
              HasSubstr("test.json: name: is missing"));
  EXPECT_THAT(parseError("{\"format\": "), HasSubstr("test.json: not valid JSON"));
  EXPECT_THAT(parseError(pairDocument(R"({"between": [0, 1], "bandwidth_GBps": 1})",
                                      R"( "nics": [{"devices": [0, 0], "bandwidth_GBps": 1}],)")),
              HasSubstr("node.nics[0] 'nic0': device 'gpu0' is already on node.nics[0]"));
  EXPECT_THAT(
      parseError(
          R"({"format": "chorus-topology/1", "name": "t", "nodes": 2, "node": {"devices": 1}})"),
      HasSubstr("node.nics: device 'gpu0' has no NIC, so 2 nodes cannot reach it"));
  EXPECT_THAT(parseError(R"({"format": "chorus-topology/1", "name": "t", "node": {"devices": 1},
                             "network": {"oversubscription": 0.5}})"),
              HasSubstr("network: oversubscription is 0.5; it must be >= 1"));
  EXPECT_THAT(parseError(R"({"format": "chorus-topology/1", "name": "t",
                             "node": {"devices": 1, "cores": 1, "wake_latency_us": -2}})"),
              HasSubstr("node.wake_latency_us: is -2; it must be a number >= 0"));
}

TEST(TopologyJson, LoadTopologyTakesPresetsAndFiles) {
  TempDir dir;
  const std::string path = dir.file("dgx2.json");
  std::ofstream(path) << toTopologyJson(preset("dgx2"));
  expectSameTopology(loadTopology(path), preset("dgx2"));
  EXPECT_EQ(loadTopology(path, 3).nodes, 3);
  EXPECT_EQ(loadTopology("dgx1", 2).ranks(), 16);
  EXPECT_EQ(loadTopology("dgx1").nodes, 1);
  try {
    loadTopology(dir.file("missing.json"));
    FAIL() << "expected ParseError";
  } catch (const ParseError& error) {
    EXPECT_THAT(error.what(), HasSubstr("cannot read topology file"));
  }
}

// ---------------------------------------------------------------------------------------------
// Local topology (detect)

TEST(TopologyDetect, DescribeHostFindsCores) {
  const HostInfo host = describeHost();
  EXPECT_GE(host.cores, 1);
  EXPECT_GE(host.pus, host.cores);
  EXPECT_FALSE(host.cpuModel.empty());
}

TEST(TopologyDetect, LocalTopologySharesOneMemory) {
  Calibration calibration = defaultCalibration();
  const Topology topology = localTopology(twoSocketHost(), calibration, 4);
  EXPECT_EQ(topology.name, "local");
  EXPECT_EQ(topology.node.devices, 4);
  EXPECT_EQ(topology.node.cores, 4);
  EXPECT_EQ(topology.node.device.engines, 1);
  EXPECT_DOUBLE_EQ(topology.node.device.messageLatency, calibration.messageLatency);
  EXPECT_DOUBLE_EQ(topology.node.wakeLatency, calibration.wakeLatency);
  ASSERT_EQ(topology.node.levels.size(), 1u);
  EXPECT_EQ(topology.node.levels[0].name, "numa");
  EXPECT_EQ(topology.node.levels[0].groups, (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
  Fabric fabric(topology);
  EXPECT_THAT(resourceNames(fabric, 0, 3),
              ElementsAre("node0 shm rank0 (rank0->memory)", "node0 memory",
                          "node0 shm rank3 (memory->rank3)"));
  // The links and the bus carry the measured aggregate; a rank's own rate is the device's.
  EXPECT_DOUBLE_EQ(fabric.route(0, 3).bandwidth, calibration.memoryBandwidth);
  EXPECT_DOUBLE_EQ(topology.node.device.copyRate, calibration.copyRate);
  EXPECT_EQ(fabric.route(0, 3).latency, 0);
  for (int r : fabric.route(0, 3).resources)
    EXPECT_TRUE(fabric.resources()[static_cast<std::size_t>(r)].memory);
  ASSERT_EQ(fabric.localResources(2).size(), 1u);
  EXPECT_EQ(fabric.resources()[static_cast<std::size_t>(fabric.localResources(2)[0])].name,
            "node0 memory");
  // Default rank count: one per core (at least 2).
  EXPECT_EQ(localTopology(twoSocketHost(), calibration, 0).node.devices, 4);
  calibration.copyRate = 0;
  EXPECT_THROW(localTopology(twoSocketHost(), calibration, 2), OptionError);
}

TEST(TopologyDetect, LocalPathAndPreset) {
  TempDir dir;
  {
    ScopedEnv local("CHORUS_TOPOLOGY_LOCAL", nullptr);
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(localTopologyPath(), "/xdg/chorus/topology-local.json");
    ScopedEnv noXdg("XDG_CACHE_HOME", nullptr);
    ScopedEnv home("HOME", "/home/someone");
    EXPECT_EQ(localTopologyPath(), "/home/someone/.cache/chorus/topology-local.json");
  }
  const std::string path = dir.file("local.json");
  ScopedEnv local("CHORUS_TOPOLOGY_LOCAL", path.c_str());
  EXPECT_EQ(localTopologyPath(), path);
  try {
    preset("local");
    FAIL() << "expected OptionError";
  } catch (const OptionError& error) {
    EXPECT_THAT(error.what(), HasSubstr("run `chorus topology detect`"));
  }
  std::ofstream(path) << toTopologyJson(localTopology(twoSocketHost(), defaultCalibration(), 3));
  EXPECT_EQ(preset("local").node.devices, 3);
  EXPECT_EQ(loadTopology("local").name, "local");
  EXPECT_THROW(loadTopology("local", 2), OptionError);  // no NICs
}

TEST(TopologyModel, LinkKindsAndValidation) {
  for (LinkKind kind : {LinkKind::nvlink, LinkKind::nvswitch, LinkKind::pcie, LinkKind::xbus,
                        LinkKind::memory, LinkKind::other})
    EXPECT_EQ(parseLinkKind(linkKindName(kind)), kind);
  EXPECT_THROW(parseLinkKind("fiber"), ParseError);

  Topology t = preset("dgx1");
  t.node.links[0].b = 99;
  EXPECT_THROW(validate(t), ParseError);
  t = preset("dgx1");
  t.node.vertices[9].name = "gpu1";
  try {
    validate(t);
    FAIL() << "expected ParseError";
  } catch (const ParseError& error) {
    EXPECT_THAT(error.what(), HasSubstr("node.switches[1] 'gpu1': the name is also used by "
                                        "node.devices[1] 'gpu1'"));
  }
  t = preset("dgx1");
  t.node.levels[0].groups[1].push_back(0);
  EXPECT_THROW(validate(t), ParseError);
  t = preset("dgx1");
  t.node.device.engines = -1;
  EXPECT_THROW(validate(t), ParseError);
}

TEST(TopologyDetect, FittedCurvesTravelToTheDeviceAndWidenTheBus) {
  Calibration calibration = defaultCalibration();
  calibration.copyCurve = {{1 << 20, 30e9}, {64 << 20, 10e9}};
  calibration.reduceCurve = {{1 << 20, 20e9}, {64 << 20, 8e9}};
  const Topology topology = localTopology(twoSocketHost(), calibration, 4);
  EXPECT_EQ(topology.node.device.copyCurve, calibration.copyCurve);
  EXPECT_EQ(topology.node.device.reduceCurve, calibration.reduceCurve);
  // Four cores at the curves' best rate must not be slowed by the bus.
  Fabric fabric(topology);
  EXPECT_DOUBLE_EQ(fabric.route(0, 3).bandwidth, 4 * 30e9);
  // The curves round-trip through the JSON format.
  EXPECT_EQ(parseTopologyJson(toTopologyJson(topology)).node.device.copyCurve,
            calibration.copyCurve);
}

TEST(TopologyModel, RateCurvesInterpolateLogLinearly) {
  const std::vector<RatePoint> curve = {{1e3, 1e9}, {1e5, 1e11}};
  EXPECT_DOUBLE_EQ(rateAt(curve, 10, 5), 1e9);     // clamped below
  EXPECT_DOUBLE_EQ(rateAt(curve, 1e6, 5), 1e11);   // clamped above
  EXPECT_NEAR(rateAt(curve, 1e4, 5), 1e10, 1e-3);  // halfway in log space
  EXPECT_DOUBLE_EQ(rateAt({}, 1e4, 5), 5);         // no curve: the flat rate
  Topology topology = uniformTopology(2, 1e-6, 1e9, 1e9);
  topology.node.device.copyCurve = {{1e5, 1e9}, {1e3, 2e9}};  // decreasing working sets
  EXPECT_THROW(validate(topology), ParseError);
}

}  // namespace
}  // namespace chorus::topology
