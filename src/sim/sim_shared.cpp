#include "sim/sim_shared.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "perf/collective.h"
#include "support/error.h"

namespace chorus::sim {

ProtocolCost protocolCost(ir::Protocol protocol) {
  switch (protocol) {
    case ir::Protocol::ll:
      return {0.5, 0.6 / 3.4};
    case ir::Protocol::ll128:
      return {0.92, 1.9 / 3.4};
    case ir::Protocol::simple:
      break;
  }
  return {};
}

double rateOrInfinity(double rate) {
  return rate > 0 ? rate : std::numeric_limits<double>::infinity();
}

double expectedWake(const topology::Topology& topo, int rank, int nranks) {
  if (topo.node.cores <= 0 || topo.node.wakeLatency <= 0) return 0;
  const int first = topo.nodeOf(rank) * topo.node.devices;
  const int onNode = std::min(topo.node.devices, nranks - first);
  if (onNode <= topo.node.cores) return 0;
  return topo.node.wakeLatency * (1.0 - static_cast<double>(topo.node.cores) / onNode);
}

std::size_t callChunkElems(const ir::Algorithm& algorithm, const SimOptions& options) {
  const std::size_t elem = options.elementSize;
  std::size_t count = options.bytes / elem;
  if (const auto collective = benchCollective(algorithm.collective))
    count = perf::shapeFor(*collective, options.bytes, elem, algorithm.nranks).count;
  count = std::max<std::size_t>(count, 1);
  const std::size_t q = ir::chunksPerBlock(algorithm);
  return (count + q - 1) / q;
}

void requireSimulable(const ir::Algorithm& algorithm, const topology::Fabric& fabric,
                      const SimOptions& options) {
  if (algorithm.nranks > fabric.ranks())
    throw OptionError(fmt::format(
        "{} has {} ranks but topology '{}' has only {} devices; pick more nodes (--nodes) "
        "or a bigger topology",
        algorithm.name, algorithm.nranks, fabric.topology().name, fabric.ranks()));
  if (options.bytes == 0)
    throw OptionError("simulate: the call's size is 0 bytes; give a size of at least 1 element");
}

HostEngines addHostEngines(FlowNetwork& net, const topology::Topology& topo, int nranks) {
  HostEngines engines;
  const topology::DeviceModel& device = topo.node.device;
  if (topo.node.cores > 0) {
    for (int n = 0; n * topo.node.devices < nranks; ++n)
      engines.nodeCpu.push_back(
          net.addResource(fmt::format("node{} cpu ({} cores)", n, topo.node.cores),
                          ShareKind::timeShare, 0, topo.node.cores));
  }
  if (device.engines > 0) {
    for (int r = 0; r < nranks; ++r) {
      const int engine = net.addResource(fmt::format("rank{} engines", r), ShareKind::timeShare, 0,
                                         device.engines);
      engines.rankEngine.push_back(engine);
      if (!engines.nodeCpu.empty())
        net.nest(engine, engines.nodeCpu[static_cast<std::size_t>(topo.nodeOf(r))]);
    }
  }
  return engines;
}

std::vector<double> nodeWorkingSets(const ir::Algorithm& algorithm, const topology::Topology& topo,
                                    std::size_t chunkBytes) {
  std::vector<double> sets;
  for (const auto& rp : algorithm.ranks) {
    const auto node = static_cast<std::size_t>(topo.nodeOf(rp.rank));
    if (sets.size() <= node) sets.resize(node + 1, 0.0);
    sets[node] += static_cast<double>(rp.inputChunks + rp.outputChunks + rp.scratchChunks) *
                  static_cast<double>(chunkBytes);
  }
  return sets;
}

void summarize(SimResult& r, const ir::Algorithm& algorithm, double seconds, const FlowNetwork& net,
               const std::vector<double>& workingSets) {
  r.seconds = seconds;
  for (double set : workingSets)
    r.workingSet = std::max(r.workingSet, set);
  if (r.seconds > 0) {
    r.algbw = static_cast<double>(r.bytes) / r.seconds;
    const auto collective = benchCollective(algorithm.collective);
    const double factor =
        collective ? perf::busBandwidthFactor(*collective, algorithm.nranks) : 1.0;
    r.busbw = r.algbw * factor;
  }
  for (const auto& sr : net.resources()) {
    if (sr.kind == ShareKind::timeShare || sr.bytes <= 0) continue;
    LinkUse use;
    use.name = sr.name;
    use.bytes = sr.bytes;
    use.busy = sr.busy;
    use.utilization = r.seconds > 0 ? sr.bytes / (sr.bandwidth * r.seconds) : 0;
    r.links.push_back(std::move(use));
  }
  std::stable_sort(r.links.begin(), r.links.end(), [](const LinkUse& x, const LinkUse& y) {
    return x.utilization > y.utilization;
  });
}

std::vector<StepRecord> criticalPathOf(const std::vector<StepRecord>& records,
                                       const std::vector<int>& preds,
                                       const std::function<std::string(int)>& waitedFor) {
  std::vector<StepRecord> path;
  if (records.empty()) return path;
  std::size_t last = 0;
  for (std::size_t i = 0; i < records.size(); ++i)
    if (records[i].end > records[last].end) last = i;
  for (int at = static_cast<int>(last); at != -1; at = preds[static_cast<std::size_t>(at)]) {
    StepRecord rec = records[static_cast<std::size_t>(at)];
    rec.waitedFor = waitedFor(at);
    path.push_back(std::move(rec));
    if (path.size() > records.size()) break;  // defensive: no cycles expected
  }
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace chorus::sim
