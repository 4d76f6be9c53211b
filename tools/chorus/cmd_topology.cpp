// `chorus topology list|show|detect`: the built-in topology presets, any topology (preset or
// chorus-topology/1 file) as a readable summary or JSON, and this machine measured into the
// "local" topology (docs/topology.md).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "calibrate_shm.h"
#include "cli.h"
#include "support/error.h"
#include "support/size.h"
#include "topology/detect.h"
#include "topology/fabric.h"
#include "topology/presets.h"
#include "topology/topology_json.h"

namespace chorus::cli {
namespace {

constexpr int kMaxMatrixDevices = 16;

struct TopologyArgs {
  std::string topology;
  int nodes = 0;
  bool json = false;
  int ranks = 0;
  bool noCalibrate = false;
  bool quick = false;
  std::string output;
};

double toGBps(double bytesPerSecond) {
  return bytesPerSecond / 1e9;
}
double toUs(double seconds) {
  return seconds * 1e6;
}

std::string rateText(double bytesPerSecond) {
  return bytesPerSecond > 0 ? fmt::format("{:.4g} GB/s", toGBps(bytesPerSecond)) : "unlimited";
}

ExitCode runList() {
  fmt::print("{:<13} {:>7}  {}\n", "NAME", "DEVICES", "SUMMARY");
  for (const topology::PresetInfo& info : topology::presets()) {
    std::string devices = info.devices > 0 ? std::to_string(info.devices) : "-";
    std::string summary = info.summary;
    if (info.name == "local") {
      const std::string path = topology::localTopologyPath();
      if (std::filesystem::exists(path)) {
        try {
          devices = std::to_string(topology::readTopologyFile(path).node.devices);
          summary += fmt::format(" ({})", path);
        } catch (const UserError&) {
          summary += fmt::format(" ({} is unreadable; run detect again)", path);
        }
      } else {
        summary += " (not measured yet)";
      }
    }
    fmt::print("{:<13} {:>7}  {}\n", info.name, devices, summary);
  }
  fmt::print(
      "\nA topology is a preset name or a chorus-topology/1 JSON file (docs/topology.md); "
      "`chorus topology show NAME` describes one.\n");
  return ExitCode::ok;
}

// "1 node", "2 nodes".
std::string count(int n, std::string_view one, std::string_view many = {}) {
  if (n == 1) return fmt::format("1 {}", one);
  return many.empty() ? fmt::format("{} {}s", n, one) : fmt::format("{} {}", n, many);
}

std::string deviceRange(const topology::NodeModel& node) {
  const auto& first = node.vertices.front().name;
  if (node.devices == 1) return first;
  return fmt::format("{}..{}", first,
                     node.vertices[static_cast<std::size_t>(node.devices - 1)].name);
}

std::string groupsText(const std::vector<std::vector<int>>& groups) {
  std::string text;
  for (const auto& group : groups) {
    text += text.empty() ? "{" : " {";
    for (std::size_t i = 0; i < group.size(); ++i) {
      if (i) text += ' ';
      text += std::to_string(group[i]);
    }
    text += "}";
  }
  return text;
}

void printRouteMatrix(topology::Fabric& fabric) {
  const topology::NodeModel& node = fabric.topology().node;
  const int devices = node.devices;
  if (devices < 2) return;
  if (devices > kMaxMatrixDevices) {
    double lo = 1e300, hi = 0;
    for (int s = 0; s < devices; ++s)
      for (int d = 0; d < devices; ++d)
        if (s != d) {
          lo = std::min(lo, fabric.route(s, d).bandwidth);
          hi = std::max(hi, fabric.route(s, d).bandwidth);
        }
    fmt::print(
        "route bandwidth inside a node: {:.1f} to {:.1f} GB/s (matrix shown up to {} "
        "devices)\n",
        toGBps(lo), toGBps(hi), kMaxMatrixDevices);
    return;
  }
  std::size_t width = 7;
  for (int d = 0; d < devices; ++d)
    width = std::max(width, node.vertices[static_cast<std::size_t>(d)].name.size() + 1);
  fmt::print("route bandwidth inside a node (GB/s; row = source, column = destination):\n");
  fmt::print("  {:<{}}", "", width);
  for (int d = 0; d < devices; ++d)
    fmt::print("{:>{}}", node.vertices[static_cast<std::size_t>(d)].name, width);
  fmt::print("\n");
  for (int s = 0; s < devices; ++s) {
    fmt::print("  {:<{}}", node.vertices[static_cast<std::size_t>(s)].name, width);
    for (int d = 0; d < devices; ++d) {
      const std::string cell =
          s == d ? "-" : fmt::format("{:.1f}", toGBps(fabric.route(s, d).bandwidth));
      fmt::print("{:>{}}", cell, width);
    }
    fmt::print("\n");
  }
}

void printSummary(const topology::Topology& t) {
  const topology::NodeModel& node = t.node;
  fmt::print("{}: {}\n", t.name, t.description);
  const int switches = static_cast<int>(node.vertices.size()) - node.devices;
  fmt::print("{} of \"{}\": {} ranks; per node {} ({}), {}, {}, {}\n\n", count(t.nodes, "node"),
             node.name, t.ranks(), count(node.devices, "device"), deviceRange(node),
             count(switches, "switch", "switches"),
             count(static_cast<int>(node.links.size()), "link"),
             count(static_cast<int>(node.nics.size()), "NIC"));
  const topology::DeviceModel& device = node.device;
  fmt::print(
      "device model ({}): reduce {}, copy {} per threadblock, engines {}, step overhead "
      "{:.4g} us, message latency {:.4g} us{}\n",
      device.kind.empty() ? "unnamed" : device.kind, rateText(device.reduceRate),
      rateText(device.copyRate),
      device.engines == 0 ? std::string("unlimited") : std::to_string(device.engines),
      toUs(device.stepOverhead), toUs(device.messageLatency),
      node.cores > 0 ? fmt::format("; {} shared cores", node.cores) : std::string());
  if (switches > 0) {
    fmt::print("\nswitches:\n");
    for (std::size_t v = static_cast<std::size_t>(node.devices); v < node.vertices.size(); ++v) {
      const topology::Vertex& vertex = node.vertices[v];
      fmt::print("  {:<16} {}{}\n", vertex.name, rateText(vertex.bandwidth),
                 vertex.memory ? " (the node's memory)" : "");
    }
  }
  if (!node.links.empty()) {
    std::size_t nameWidth = 4;
    for (const topology::Link& link : node.links)
      nameWidth = std::max(nameWidth, link.name.size());
    fmt::print("\nlinks (GB/s per direction):\n");
    fmt::print("  {:<{}}  {:<8}  {:<22} {:>8} {:>8}\n", "NAME", nameWidth, "KIND", "BETWEEN",
               "GB/s", "us");
    for (const topology::Link& link : node.links) {
      const std::string between = fmt::format(
          "{} {} {}", node.vertices[static_cast<std::size_t>(link.a)].name,
          link.duplex ? "<->" : "<=>", node.vertices[static_cast<std::size_t>(link.b)].name);
      fmt::print("  {:<{}}  {:<8}  {:<22} {:>8.2f} {:>8.2f}{}\n", link.name, nameWidth,
                 topology::linkKindName(link.kind), between, toGBps(link.bandwidth),
                 toUs(link.latency), link.duplex ? "" : "  (one bandwidth for both directions)");
    }
  }
  if (!node.nics.empty()) {
    fmt::print("\nNICs:\n");
    for (const topology::Nic& nic : node.nics) {
      std::string devices;
      for (int d : nic.devices)
        devices += (devices.empty() ? "" : " ") + node.vertices[static_cast<std::size_t>(d)].name;
      fmt::print("  {:<8} {:>8.2f} GB/s {:>6.2f} us  for {}\n", nic.name, toGBps(nic.bandwidth),
                 toUs(nic.latency), devices);
    }
  }
  if (!node.levels.empty()) {
    fmt::print("\nlevels:\n");
    for (const topology::Level& level : node.levels)
      fmt::print("  {:<14} {}\n", level.name, groupsText(level.groups));
  }
  fmt::print("\nnetwork: latency {:g} us, oversubscription {:g}{}\n\n", toUs(t.network.latency),
             t.network.oversubscription, t.network.oversubscription <= 1 ? " (non-blocking)" : "");
}

ExitCode runShow(const TopologyArgs& args) {
  if (args.nodes < 0)
    throw OptionError(fmt::format("--nodes {} is invalid; use 1 or more", args.nodes));
  const topology::Topology t = topology::loadTopology(args.topology, args.nodes);
  if (args.json) {
    fmt::print("{}", topology::toTopologyJson(t));
    return ExitCode::ok;
  }
  topology::Fabric fabric(t);
  printSummary(t);
  printRouteMatrix(fabric);
  if (t.nodes > 1) {
    const int dst = t.node.devices;
    const topology::Route& route = fabric.route(0, dst);
    std::string via;
    for (int r : route.resources)
      via += (via.empty() ? "" : ", ") + fabric.resources()[static_cast<std::size_t>(r)].name;
    fmt::print("across nodes: rank 0 -> rank {}: {:.2f} GB/s, {:g} us via {}\n", dst,
               toGBps(route.bandwidth), toUs(route.latency), via);
  }
  fmt::print("{} shared resources in the fabric\n", fabric.resources().size());
  return ExitCode::ok;
}

void printHost(std::FILE* out, const topology::HostInfo& host) {
  fmt::print(out, "host: {} ({})\n", host.hostname.empty() ? "unnamed" : host.hostname,
             host.cpuModel);
  fmt::print(out, "  packages {}, NUMA nodes {}, cores {}, hardware threads {}\n", host.packages,
             host.numaNodes, host.cores, host.pus);
  for (std::size_t n = 0; n < host.coresPerNuma.size() && host.coresPerNuma.size() > 1; ++n)
    fmt::print(out, "  NUMA node {}: {} cores\n", n, host.coresPerNuma[n].size());
}

ExitCode runDetect(const TopologyArgs& args) {
  if (args.ranks < 0) throw OptionError("--ranks must be >= 1 (or omitted: one rank per core)");
  const topology::HostInfo host = topology::describeHost();
  std::FILE* out = args.json ? stderr : stdout;
  printHost(out, host);
  topology::Calibration calibration = topology::defaultCalibration();
  std::vector<std::uint64_t> curveSizes;
  std::vector<double> copyUs, reduceUs;
  if (args.noCalibrate) {
    fmt::print(out,
               "calibration: skipped (--no-calibrate); using the defaults of "
               "docs/topology.md\n");
  } else {
    double load = 0;
    if (getloadavg(&load, 1) == 1 && load > host.pus - 2 + 0.5) {
      fmt::print(out,
                 "warning: this host is busy (load average {:.1f} on {} hardware threads); the "
                 "2-rank measurements will include waiting for the scheduler. Rerun on an idle "
                 "machine for the transport's own costs.\n",
                 load, host.pus);
    }
    fmt::print(out, "calibrating chorus's shm transport (2 ranks) and memory...\n");
    std::fflush(out);
    const CalibrationReport report =
        calibrateShm(host, args.quick ? CalibrationEffort::quick() : CalibrationEffort{});
    calibration = report.calibration;
    curveSizes = report.curveSizes;
    copyUs = report.copyUs;
    reduceUs = report.reduceUs;
    fmt::print(out, "  allreduce.ring, 2 ranks, 8..512 B:  {:.2f} us per call\n", report.ringUs);
    fmt::print(out, "  broadcast.chain pipeline {} / {}, 4 KiB: {:.2f} / {:.2f} us per call\n",
               report.shortPipeline, report.longPipeline, report.chainShortUs, report.chainLongUs);
    fmt::print(out, "  memory bandwidth measured with {} thread{}\n", report.threads,
               report.threads == 1 ? "" : "s");
    if (report.curveAttempts > 1)
      fmt::print(out,
                 "  rate curves fitted {} times: earlier sweeps ran slower than memory allows\n",
                 report.curveAttempts);
    if (report.curvesDisturbed)
      fmt::print(out,
                 "warning: the 2-rank sweeps copied slower than one thread copies from DRAM in "
                 "every attempt, so this host was in a slow period (another tenant, a frequency "
                 "drop); the fitted rates are too low. Rerun `chorus topology detect` later.\n");
    if (report.wakeRanks > 0 && report.wakeUs.size() == 2)
      fmt::print(out, "  allreduce.ring, {} ranks on {} cores, 512 B / 4 KiB: {:.2f} / {:.2f} us\n",
                 report.wakeRanks, host.cores, report.wakeUs[0], report.wakeUs[1]);
  }
  fmt::print(out, "calibration:\n");
  fmt::print(out, "  message latency (alpha)  {:8.3f} us\n", toUs(calibration.messageLatency));
  fmt::print(out, "  step overhead            {:8.3f} us\n", toUs(calibration.stepOverhead));
  fmt::print(out, "  copy rate (1 core)       {:8.2f} GB/s\n", toGBps(calibration.copyRate));
  fmt::print(out, "  reduce rate (1 core)     {:8.2f} GB/s\n", toGBps(calibration.reduceRate));
  fmt::print(out, "  memory bandwidth (all)   {:8.2f} GB/s\n", toGBps(calibration.memoryBandwidth));
  fmt::print(out, "  wake latency             {:8.3f} us (ranks > cores)\n",
             toUs(calibration.wakeLatency));
  if (!calibration.copyCurve.empty()) {
    fmt::print(out, "  rates fitted to allgather.ring / reducescatter.ring at 2 ranks:\n");
    fmt::print(out, "  {:>10} {:>12} {:>12} {:>12} {:>12}\n", "size", "copy(us)", "copy GB/s",
               "reduce(us)", "reduce GB/s");
    for (std::size_t i = 0; i < calibration.copyCurve.size(); ++i) {
      const bool haveReduce = i < calibration.reduceCurve.size();
      fmt::print(out, "  {:>10} {:>12.1f} {:>12.2f} {:>12.1f} {:>12.2f}\n",
                 i < curveSizes.size() ? formatSize(curveSizes[i]) : std::string("?"),
                 i < copyUs.size() ? copyUs[i] : 0.0, toGBps(calibration.copyCurve[i].rate),
                 haveReduce && i < reduceUs.size() ? reduceUs[i] : 0.0,
                 haveReduce ? toGBps(calibration.reduceCurve[i].rate) : 0.0);
    }
  }
  const topology::Topology local = topology::localTopology(host, calibration, args.ranks);
  const std::string path = args.output.empty() ? topology::localTopologyPath() : args.output;
  const std::string text = topology::toTopologyJson(local);
  std::error_code error;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, error);
  std::ofstream file(path);
  file << text;
  file.close();
  if (error || !file) {
    throw UserError(
        fmt::format("cannot write the local topology to {}; choose a writable path "
                    "with -o FILE or CHORUS_TOPOLOGY_LOCAL",
                    path));
  }
  fmt::print(out, "wrote the local topology ({} ranks) to {}; use it as `--topology local`\n",
             local.node.devices, path);
  if (args.json) fmt::print("{}", text);
  return ExitCode::ok;
}

}  // namespace

Command addTopologyCommand(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "topology", "Topology models for the simulator: presets, files, this machine (detect)");
  command->require_subcommand(1);
  auto args = std::make_shared<TopologyArgs>();

  CLI::App* list = command->add_subcommand("list", "List the built-in topology presets");

  CLI::App* show =
      command->add_subcommand("show", "Describe a topology: devices, links, NICs, routes");
  show->add_option("topology", args->topology,
                   "A preset name (chorus topology list) or a "
                   "chorus-topology/1 JSON file")
      ->required();
  show->add_option("--nodes", args->nodes,
                   "Number of nodes (default: the preset's 1 or the "
                   "file's count)");
  show->add_flag("--json", args->json, "Print the chorus-topology/1 document instead");

  CLI::App* detect = command->add_subcommand(
      "detect",
      "Describe this machine (hwloc), calibrate chorus's shm transport and write the "
      "\"local\" topology");
  detect->add_option("--ranks", args->ranks,
                     "Ranks (devices) of the local topology (default: one per core, at least 2)");
  detect->add_flag("--no-calibrate", args->noCalibrate,
                   "Skip the measurements and use the documented defaults");
  detect
      ->add_flag("--quick", args->quick,
                 "Sweep and fit once instead of taking the fastest of several rounds: a few "
                 "seconds instead of about half a minute, coarser numbers")
      ->excludes("--no-calibrate");
  detect->add_option("-o,--output", args->output,
                     "Where to write the topology (default: $CHORUS_TOPOLOGY_LOCAL, else "
                     "$XDG_CACHE_HOME or ~/.cache /chorus/topology-local.json)");
  detect->add_flag("--json", args->json,
                   "Print the topology JSON on stdout (the report goes to stderr)");

  return [args, list, show, detect]() {
    if (list->parsed()) return runList();
    if (show->parsed()) return runShow(*args);
    if (detect->parsed()) return runDetect(*args);
    return ExitCode::usage;
  };
}

}  // namespace chorus::cli
