// The built-in topologies. Every number carries its source; docs/topology.md has the same
// table. Conventions (P² §5 "Assumptions"): links are modelled at 90% of their
// nominal per-direction bandwidth, NICs at 60% (100 Gb/s -> 7.5 GB/s, "an effective 8GB/s"
// in P²), PCIe switches at 32 GB/s.
#include "topology/presets.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>
#include <utility>

#include "support/error.h"
#include "topology/detect.h"
#include "topology/topology_json.h"

namespace chorus::topology {
namespace {

constexpr double kGB = 1e9;   // bytes/s per GB/s
constexpr double kUs = 1e-6;  // seconds per microsecond

// P² §5: "an optimistic 90% of the nominal uni-directional bandwidth" for links,
// NICs "utilized at 60%".
constexpr double kLinkEfficiency = 0.9;
constexpr double kNicEfficiency = 0.6;
// The DGX A100 and H100 presets, which docs/simulator.md checks against published cluster
// measurements, take their NICs from the InfiniBand specification instead: the HDR / NDR data
// rate (after line encoding) less the headers of each packet at a 4 KiB MTU: LRH 8 + BTH 12 +
// ICRC 4 + VCRC 2 bytes (InfiniBand Architecture Specification vol. 1, ch. 5-7), 99.4%. Their
// PCIe (gen4 x16, 31.5 GB/s for HDR; gen5 x16, 63 GB/s for NDR) does not bind. No measurement
// was used to set this.
constexpr double kIbMtu = 4096;
constexpr double kIbPacketHeaders = 8 + 12 + 4 + 2;
constexpr double kIbPacketEfficiency = kIbMtu / (kIbMtu + kIbPacketHeaders);

// Nominal per-direction rates (docs/sources.md "Topology presets").
constexpr double kNvlink2Brick = 25 * kGB;       // NVLink 2.0 (V100): 25 GB/s/dir per link
constexpr double kA100NvlinkPerGpu = 300 * kGB;  // 12 NVLink3 x 25 GB/s/dir
constexpr double kH100NvlinkPerGpu = 450 * kGB;  // 18 NVLink4 x 25 GB/s/dir
constexpr double kPcieGen3x16 = 15.75 * kGB;     // 8 GT/s x 16 lanes, 128b/130b
constexpr double kPowerXbus = 64 * kGB;          // POWER9 X-Bus (OLCF Summit guide)
constexpr double kEdr = 100 / 8.0 * kGB;         // InfiniBand EDR 100 Gb/s
constexpr double kHdr = 200 / 8.0 * kGB;         // InfiniBand HDR 200 Gb/s (ConnectX-6)
constexpr double kNdr = 400 / 8.0 * kGB;         // InfiniBand NDR 400 Gb/s (ConnectX-7)

// Effective rates used by the presets.
constexpr double kPcieLink = kLinkEfficiency * kPcieGen3x16;  // 14.2 GB/s
constexpr double kPcieSwitch = 32 * kGB;                      // P² §5: "32GB/s"
// Broadwell QPI as NCCL models it for GPU peer traffic (NCCL v2.30.7 src/graph/topo.h
// BDW_QPI_BW 6.0); P² gives no number for it.
constexpr double kBroadwellQpi = 6 * kGB;

// Latencies. NCCL's hardware latency of one NVLink hop with the LL protocol (0.6 µs,
// NCCL v2.30.7 src/graph/tuning.cc, NVLink Ring LL) is close to the raw wire latency, so links take
// ~0.5 µs per hop and the protocol's software cost goes to DeviceModel::messageLatency.
constexpr double kNvlinkLatency = 0.6 * kUs;
constexpr double kNvswitchHalfLatency = 0.3 * kUs;  // GPU -> switch and switch -> GPU: 0.6 µs
constexpr double kPcieLatency = 0.5 * kUs;          // per PCIe link
constexpr double kSocketLatency = 0.5 * kUs;        // QPI / X-Bus hop
constexpr double kNicLatency = 1.5 * kUs;           // device -> NIC -> wire
constexpr double kNetworkLatency = 1.0 * kUs;       // one switch hop of the fabric
// NCCL Ring/Simple hardware latency of an NVLink step, 3.4 µs (NCCL v2.30.7 src/graph/tuning.cc),
// minus the NVLink hop the route already charges.
constexpr double kGpuMessageLatency = 3.4 * kUs - kNvlinkLatency;

// Slices per step of NCCL's ring primitives (src/device/primitives.h, collectives.h:
// ALLREDUCE_CHUNKSTEPS = NCCL_STEPS/2, ALLREDUCE_SLICESTEPS = NCCL_STEPS/4): the SM and the
// wire pipeline the two halves of a step (DeviceModel::slices).
constexpr int kNcclRingSlices = 2;

// One threadblock's copy/reduce rate: NCCL's per-channel caps (v2.30.7 src/graph/tuning.cc
// perChMaxRingLL128Bw: Volta/Ampere 20 GB/s, Hopper 36.7 GB/s).
DeviceModel gpuModel(std::string kind, double perChannel) {
  DeviceModel device;
  device.kind = std::move(kind);
  device.reduceRate = perChannel;
  device.copyRate = perChannel;
  device.engines = 0;
  device.stepOverhead = 0;
  device.messageLatency = kGpuMessageLatency;
  device.slices = kNcclRingSlices;
  return device;
}

class NodeBuilder {
 public:
  NodeBuilder(std::string name, int devices, const std::string& prefix = "gpu") {
    node_.name = std::move(name);
    node_.devices = devices;
    for (int d = 0; d < devices; ++d)
      node_.vertices.push_back({fmt::format("{}{}", prefix, d)});
  }

  int addSwitch(std::string name, double bandwidth = 0, bool memory = false) {
    node_.vertices.push_back({std::move(name), bandwidth, memory});
    return static_cast<int>(node_.vertices.size()) - 1;
  }

  // `multiplicity` > 1 names the link "... xN" (parallel NVLink bricks merged into one link).
  // The link is named "<kind> <a>-<b>" (or "<label> <a>-<b>"), "... xN" for N merged bricks.
  void link(LinkKind kind, int a, int b, double bandwidth, double latency, int multiplicity = 1,
            std::string_view label = {}) {
    Link link;
    link.kind = kind;
    link.a = a;
    link.b = b;
    link.bandwidth = bandwidth;
    link.latency = latency;
    link.name =
        fmt::format("{} {}-{}", label.empty() ? linkKindName(kind) : label, name(a), name(b));
    if (multiplicity > 1) link.name += fmt::format(" x{}", multiplicity);
    node_.links.push_back(std::move(link));
  }

  void nic(std::vector<int> devices, double bandwidth, double latency = kNicLatency) {
    node_.nics.push_back(
        {fmt::format("nic{}", node_.nics.size()), std::move(devices), bandwidth, latency});
  }

  void level(std::string name, std::vector<std::vector<int>> groups) {
    node_.levels.push_back({std::move(name), std::move(groups)});
  }

  void device(DeviceModel model) { node_.device = std::move(model); }
  NodeModel take() { return std::move(node_); }

 private:
  const std::string& name(int v) const { return node_.vertices[static_cast<std::size_t>(v)].name; }
  NodeModel node_;
};

std::vector<int> range(int first, int count) {
  std::vector<int> values;
  for (int i = 0; i < count; ++i)
    values.push_back(first + i);
  return values;
}

Topology make(std::string name, std::string description, NodeModel node) {
  Topology topology;
  topology.name = std::move(name);
  topology.description = std::move(description);
  topology.node = std::move(node);
  topology.network.latency = kNetworkLatency;
  return topology;
}

// The PCIe tree of an 8-GPU V100 node (DGX-1, GCP): one 32 GB/s switch per GPU pair, switches 0-1
// under cpu0 and 2-3 under cpu1, every GPU and switch uplink at `linkRate`. Returns the two CPU
// switches.
std::pair<int, int> addPcieTree(NodeBuilder& b, double linkRate) {
  int pcie[4];
  for (int s = 0; s < 4; ++s)
    pcie[s] = b.addSwitch(fmt::format("pcie{}", s), kPcieSwitch);
  const int cpu0 = b.addSwitch("cpu0");
  const int cpu1 = b.addSwitch("cpu1");
  for (int g = 0; g < 8; ++g)
    b.link(LinkKind::pcie, g, pcie[g / 2], linkRate, kPcieLatency);
  for (int s = 0; s < 4; ++s)
    b.link(LinkKind::pcie, pcie[s], s < 2 ? cpu0 : cpu1, linkRate, kPcieLatency);
  return {cpu0, cpu1};
}

// DGX-1 V100 (docs/sources.md "Topology presets", MXNet's p3.16xlarge matrix; NCCL issue #671):
// hybrid cube-mesh of 6 NVLink2 per GPU. Non-NVLink pairs cross PCIe switches (2 GPUs and 1 NIC
// each), a CPU and QPI.
Topology dgx1() {
  NodeBuilder b("DGX-1 V100", 8);
  const int doublePairs[][2] = {{0, 3}, {0, 4}, {1, 2}, {1, 5}, {2, 3}, {4, 7}, {5, 6}, {6, 7}};
  const int singlePairs[][2] = {{0, 1}, {0, 2}, {1, 3}, {2, 6}, {3, 7}, {4, 5}, {4, 6}, {5, 7}};
  for (const auto& p : doublePairs)
    b.link(LinkKind::nvlink, p[0], p[1], 2 * kLinkEfficiency * kNvlink2Brick, kNvlinkLatency, 2);
  for (const auto& p : singlePairs)
    b.link(LinkKind::nvlink, p[0], p[1], kLinkEfficiency * kNvlink2Brick, kNvlinkLatency);
  const auto [cpu0, cpu1] = addPcieTree(b, kPcieLink);
  b.link(LinkKind::other, cpu0, cpu1, kBroadwellQpi, kSocketLatency, 1, "qpi");
  for (int s = 0; s < 4; ++s)
    b.nic({2 * s, 2 * s + 1}, kNicEfficiency * kEdr);
  b.level("socket", {range(0, 4), range(4, 4)});
  b.level("pcie-switch", {{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  b.device(gpuModel("V100", 20 * kGB));
  return make("dgx1",
              "NVIDIA DGX-1 V100: 8 GPUs, NVLink2 hybrid cube-mesh (22.5 GB/s per link, 45 on "
              "double pairs), PCIe switches and QPI otherwise, 4 EDR NICs at 7.5 GB/s "
              "(docs/topology.md; P2 efficiencies)",
              b.take());
}

// A node of `gpus` GPUs on one non-blocking NVSwitch (each GPU's links merged into one).
NodeBuilder nvswitchNode(std::string name, int gpus, double perGpu, int bricks) {
  NodeBuilder b(std::move(name), gpus);
  const int sw = b.addSwitch("nvswitch");
  for (int g = 0; g < gpus; ++g)
    b.link(LinkKind::nvswitch, g, sw, kLinkEfficiency * perGpu, kNvswitchHalfLatency, bricks);
  return b;
}

// DGX-2 (nccl-tests #78; docs/sources.md "Topology presets"): 16 V100 on 12 NVSwitches, 6 NVLink2
// per GPU, NV6 between every pair; 8 EDR NICs, one per 2 GPUs.
Topology dgx2() {
  NodeBuilder b = nvswitchNode("DGX-2", 16, 6 * kNvlink2Brick, 6);
  for (int n = 0; n < 8; ++n)
    b.nic({2 * n, 2 * n + 1}, kNicEfficiency * kEdr);
  b.level("baseboard", {range(0, 8), range(8, 8)});
  b.device(gpuModel("V100", 20 * kGB));
  return make("dgx2",
              "NVIDIA DGX-2: 16 V100 on NVSwitch at 135 GB/s/dir per GPU, 8 EDR NICs at 7.5 GB/s "
              "(docs/topology.md)",
              b.take());
}

// DGX A100 (docs/sources.md "Topology presets"): 8 A100, 6 NVSwitch gen2, 12 NVLink3 per GPU
// (300 GB/s/dir); 8 ConnectX-6 HDR 200 Gb/s compute NICs, one per GPU.
Topology dgxA100() {
  NodeBuilder b = nvswitchNode("DGX A100", 8, kA100NvlinkPerGpu, 12);
  for (int n = 0; n < 8; ++n)
    b.nic({n}, kIbPacketEfficiency * kHdr);
  b.level("socket", {range(0, 4), range(4, 4)});
  b.device(gpuModel("A100", 20 * kGB));
  return make("dgx-a100",
              "NVIDIA DGX A100: 8 A100 on NVSwitch at 270 GB/s/dir per GPU, 8 HDR NICs at "
              "24.8 GB/s, one per GPU (docs/topology.md; NVLink at P2's 90%, NICs at the IB data "
              "rate less packet headers)",
              b.take());
}

// DGX H100 (docs/sources.md "Topology presets"): 8 H100, 4 NVSwitch gen3, 18 NVLink4 per GPU
// (450 GB/s/dir); 8 ConnectX-7 400 Gb/s compute NICs, one per GPU.
Topology dgxH100() {
  NodeBuilder b = nvswitchNode("DGX H100", 8, kH100NvlinkPerGpu, 18);
  for (int n = 0; n < 8; ++n)
    b.nic({n}, kIbPacketEfficiency * kNdr);
  b.level("socket", {range(0, 4), range(4, 4)});
  b.device(gpuModel("H100", 36.7 * kGB));
  return make("dgx-h100",
              "NVIDIA DGX H100: 8 H100 on NVSwitch at 405 GB/s/dir per GPU, 8 NDR NICs at "
              "49.7 GB/s, one per GPU (docs/topology.md; NVLink at the 90% rule, NICs at the IB "
              "data rate less packet headers)",
              b.take());
}

// HGX A100 16-GPU as GCP a2-megagpu-16g, the A100 system of P² (§5): two 8-GPU
// baseboards joined through NVSwitch, fully connected at 300 GB/s/dir; one 100 Gb/s VM
// network interface for all 16 GPUs.
Topology hgxA100x16() {
  NodeBuilder b = nvswitchNode("HGX A100 16-GPU (GCP a2-megagpu-16g)", 16, kA100NvlinkPerGpu, 12);
  b.nic(range(0, 16), kNicEfficiency * kEdr);
  b.level("baseboard", {range(0, 8), range(8, 8)});
  b.device(gpuModel("A100", 20 * kGB));
  return make("hgx-a100-16",
              "GCP a2-megagpu-16g (HGX A100 16-GPU): 16 A100 on NVSwitch at 270 GB/s/dir per "
              "GPU, one 100 Gb/s NIC at 7.5 GB/s for all 16 (P2 section 5; docs/topology.md)",
              b.take());
}

// GCP V100 as P² models it (P² §4, §5 "Assumptions", Figure 9(b)): 8 V100 in an NVLink
// ring at 135 GB/s/dir ("an optimistic 90% of the nominal uni-directional bandwidth
// (150GB/s)"), each pair of GPUs on a 32 GB/s PCIe switch, two CPUs each owning the 4 GPUs of
// its PCIe domain, one 100 Gb/s NIC at 60% for the node. P² rounds that NIC to "an effective
// 8GB/s"; 60% of 12.5 GB/s is 7.5, as in hgx-a100-16. Figure 9(b) joins the two CPUs through
// the shared NIC ("a modeling simplification"), so the cpu0-cpu1 link runs at the NIC's rate.
// No levels: P² puts the 8 ring GPUs in one layer, hierarchy [(node, N), (device, 8)].
Topology gcpV100() {
  NodeBuilder b("GCP V100 (8 GPUs, NVLink ring)", 8);
  const double ring = kLinkEfficiency * 150 * kGB;
  for (int g = 0; g < 8; ++g)
    b.link(LinkKind::nvlink, std::min(g, (g + 1) % 8), std::max(g, (g + 1) % 8), ring,
           kNvlinkLatency);
  const auto [cpu0, cpu1] = addPcieTree(b, kPcieSwitch);
  const double nic = kNicEfficiency * kEdr;
  b.link(LinkKind::other, cpu0, cpu1, nic, kNicLatency, 1, "shared-nic");
  b.nic(range(0, 8), nic);
  b.device(gpuModel("V100", 20 * kGB));
  return make("gcp-v100",
              "GCP V100 as P2 models it: 8 V100 in an NVLink ring at 135 GB/s/dir, a 32 GB/s "
              "PCIe switch per GPU pair, 2 CPUs of 4 GPUs joined through the NIC, one 100 Gb/s "
              "NIC at 7.5 GB/s for all 8 (P2 sections 4-5, Figure 9b; docs/topology.md)",
              b.take());
}

// An IBM AC922 node: 2 POWER9 sockets joined by X-Bus, `perSocket` V100 per socket, every GPU
// linked to its socket's CPU and to the other GPUs of the socket by `bricks` NVLink2 bricks.
NodeBuilder powerNode(std::string name, int perSocket, int bricks) {
  NodeBuilder b(std::move(name), 2 * perSocket);
  const int cpu[2] = {b.addSwitch("cpu0"), b.addSwitch("cpu1")};
  const double bandwidth = kLinkEfficiency * bricks * kNvlink2Brick;
  for (int s = 0; s < 2; ++s) {
    for (int i = 0; i < perSocket; ++i) {
      const int g = s * perSocket + i;
      for (int j = i + 1; j < perSocket; ++j)
        b.link(LinkKind::nvlink, g, s * perSocket + j, bandwidth, kNvlinkLatency, bricks);
      b.link(LinkKind::nvlink, cpu[s], g, bandwidth, kNvlinkLatency, bricks);
    }
  }
  b.link(LinkKind::xbus, cpu[0], cpu[1], kLinkEfficiency * kPowerXbus, kSocketLatency);
  b.level("socket", {range(0, perSocket), range(perSocket, perSocket)});
  b.device(gpuModel("V100", 20 * kGB));
  return b;
}

// Summit (OLCF; docs/sources.md "Topology presets"): 2 POWER9 + 6 V100, 2 bricks (50 GB/s/dir) per
// GPU-GPU and CPU-GPU connection, X-Bus 64 GB/s, dual-rail EDR (2 NICs, one per socket).
Topology summit() {
  NodeBuilder b = powerNode("Summit (IBM AC922, 6 GPUs)", 3, 2);
  b.nic({0, 1, 2}, kNicEfficiency * kEdr);
  b.nic({3, 4, 5}, kNicEfficiency * kEdr);
  return make("summit",
              "OLCF Summit node: 2 POWER9 + 6 V100, NVLink2 at 45 GB/s/dir (GPU-GPU, CPU-GPU), "
              "X-Bus 57.6 GB/s, dual-rail EDR at 7.5 GB/s per NIC (docs/topology.md)",
              b.take());
}

// Lassen / Sierra (LLNL; docs/sources.md "Topology presets"): 2 POWER9 + 4 V100, 3 bricks
// (75 GB/s/dir) per connection, X-Bus 64 GB/s, single-plane EDR on a 2:1 tapered fat tree.
Topology lassen() {
  NodeBuilder b = powerNode("Lassen (IBM AC922, 4 GPUs)", 2, 3);
  b.nic(range(0, 4), kNicEfficiency * kEdr);
  Topology topology =
      make("lassen",
           "LLNL Lassen/Sierra node: 2 POWER9 + 4 V100, NVLink2 at 67.5 GB/s/dir, X-Bus "
           "57.6 GB/s, one EDR NIC at 7.5 GB/s, 2:1 tapered network (docs/topology.md)",
           b.take());
  topology.network.oversubscription = 2;
  return topology;
}

Topology uniform() {
  Topology topology = uniformTopology(8, 1 * kUs, 10 * kGB, 20 * kGB);
  topology.name = "uniform";
  return topology;
}

Topology local() {
  const std::string path = localTopologyPath();
  if (!std::filesystem::exists(path)) {
    throw OptionError(fmt::format(
        "no local topology at {}; run `chorus topology detect` to measure this machine (or set "
        "CHORUS_TOPOLOGY_LOCAL to a topology file)",
        path));
  }
  return readTopologyFile(path);
}

struct PresetEntry {
  PresetInfo info;
  Topology (*make)();
};

const std::vector<PresetEntry>& entries() {
  static const std::vector<PresetEntry> table = {
      {{"dgx1", "8 V100, NVLink hybrid cube-mesh + PCIe/QPI, 4x EDR (DGX-1V)", 8}, dgx1},
      {{"dgx2", "16 V100 on NVSwitch (135 GB/s/dir per GPU), 8x EDR", 16}, dgx2},
      {{"dgx-a100", "8 A100 on NVSwitch (270 GB/s/dir per GPU), 8x HDR, one per GPU", 8}, dgxA100},
      {{"dgx-h100", "8 H100 on NVSwitch (405 GB/s/dir per GPU), 8x NDR, one per GPU", 8}, dgxH100},
      {{"hgx-a100-16", "16 A100 on NVSwitch, ONE 100 Gb/s NIC per node (GCP a2-megagpu-16g, P2)",
        16},
       hgxA100x16},
      {{"gcp-v100", "8 V100 in an NVLink ring, PCIe switches, ONE 100 Gb/s NIC per node (GCP, P2)",
        8},
       gcpV100},
      {{"summit", "2 POWER9 + 6 V100, NVLink2 45 GB/s/dir, X-Bus, dual-rail EDR", 6}, summit},
      {{"lassen", "2 POWER9 + 4 V100, NVLink2 67.5 GB/s/dir, X-Bus, EDR, 2:1 network", 4}, lassen},
      {{"uniform", "8 ranks, every pair 1 us + 10 GB/s, reduce 20 GB/s (alpha-beta-gamma)", 8},
       uniform},
      {{"local", "this machine's shm transport as measured by `chorus topology detect`", 0}, local},
  };
  return table;
}

// Lower case, '_' as '-', aliases resolved.
std::string canonicalName(std::string_view name) {
  std::string key(name);
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) {
    return c == '_' ? '-' : static_cast<char>(std::tolower(c));
  });
  static const std::pair<std::string_view, std::string_view> kAliases[] = {
      {"dgx-1", "dgx1"},
      {"dgx1v", "dgx1"},
      {"dgx-1v", "dgx1"},
      {"dgx-2", "dgx2"},
      {"dgxa100", "dgx-a100"},
      {"dgxh100", "dgx-h100"},
      {"a2-megagpu-16g", "hgx-a100-16"},
      {"hgx-a100", "hgx-a100-16"},
      {"hgxa100-16", "hgx-a100-16"},
      {"gcpv100", "gcp-v100"},
      {"sierra", "lassen"},
  };
  for (const auto& [alias, target] : kAliases)
    if (key == alias) return std::string(target);
  return key;
}

}  // namespace

const std::vector<PresetInfo>& presets() {
  static const std::vector<PresetInfo> infos = [] {
    std::vector<PresetInfo> list;
    for (const PresetEntry& entry : entries())
      list.push_back(entry.info);
    return list;
  }();
  return infos;
}

Topology preset(std::string_view name, int nodes) {
  const std::string key = canonicalName(name);
  for (const PresetEntry& entry : entries())
    if (entry.info.name == key) return withNodes(entry.make(), nodes);
  std::string names;
  for (const PresetInfo& info : presets())
    names += (names.empty() ? "" : ", ") + info.name;
  throw OptionError(fmt::format(
      "unknown topology '{}'; use a preset ({}) or a topology file path (containing '/' or "
      "ending in .json); `chorus topology list` describes the presets",
      name, names));
}

Topology loadTopology(std::string_view nameOrPath, int nodes) {
  const bool isPath = nameOrPath.find('/') != std::string_view::npos ||
                      (nameOrPath.size() > 5 && nameOrPath.ends_with(".json"));
  Topology topology = isPath ? readTopologyFile(std::string(nameOrPath)) : preset(nameOrPath);
  if (nodes > 0) topology = withNodes(std::move(topology), nodes);
  return topology;
}

Topology uniformTopology(int ranks, double latency, double bandwidth, double reduceRate,
                         int sendPorts) {
  if (ranks < 1) throw OptionError(fmt::format("uniform topology of {} ranks; use >= 1", ranks));
  NodeBuilder b(fmt::format("uniform {} ranks", ranks), ranks, "rank");
  for (int i = 0; i < ranks; ++i)
    for (int j = i + 1; j < ranks; ++j)
      b.link(LinkKind::other, i, j, bandwidth, latency);
  DeviceModel device;
  device.kind = "uniform";
  device.reduceRate = reduceRate;
  device.sendPorts = sendPorts;
  b.device(device);
  Topology topology =
      make("uniform",
           fmt::format("{} ranks, every pair joined by its own {:g} GB/s, {:g} us link; "
                       "reductions at {:g} GB/s (the alpha-beta-gamma model; docs/sources.md)",
                       ranks, bandwidth / kGB, latency / kUs, reduceRate / kGB),
           b.take());
  topology.network.latency = 0;
  try {
    validate(topology);
  } catch (const ParseError& error) {
    throw OptionError(fmt::format("uniform topology: {}", error.what()));
  }
  return topology;
}

}  // namespace chorus::topology
