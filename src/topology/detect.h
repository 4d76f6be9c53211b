// `chorus topology detect`: describes this machine with hwloc (packages, NUMA nodes, cores)
// and calibrates chorus's own shm transport into a one-node topology ("local") whose devices
// are ranks (processes) sharing the host's cores and memory.
#pragma once

#include <string>
#include <vector>

#include "topology/topology.h"

namespace chorus::topology {

struct HostInfo {
  std::string hostname;
  std::string cpuModel;
  int packages = 0;
  int numaNodes = 0;
  int cores = 0;                               // physical cores
  int pus = 0;                                 // hardware threads
  std::vector<std::vector<int>> coresPerNuma;  // core indices per NUMA node
};

// hwloc's view of this machine. Throws chorus::UserError when hwloc fails.
HostInfo describeHost();

// Measured costs of chorus's shm transport on this host (all in bytes/s or seconds).
struct Calibration {
  double messageLatency = 0;   // α: one FIFO message between two processes
  double copyRate = 0;         // one core copying 256 KiB tiles (memcpy)
  double memoryBandwidth = 0;  // every core copying at once (the shared memory bus)
  double reduceRate = 0;       // one core summing float32 (γ = 1 / reduceRate)
  double stepOverhead = 0;     // the interpreter's cost per step
  // Copy and reduce rates fitted to chorus's own 2-rank runs per working set (empty: the flat
  // copyRate / reduceRate above apply); see docs/topology.md "How detect calibrates".
  std::vector<RatePoint> copyCurve;
  std::vector<RatePoint> reduceCurve;
  double wakeLatency = 0;  // NodeModel::wakeLatency (0 = not measured)
};

// What `chorus topology detect --no-calibrate` assumes (docs/topology.md "Defaults"): a
// round numbers of an idle x86 host, not a measurement of this one.
Calibration defaultCalibration();

// The "local" topology: `ranks` devices "rank0".. (one rank each; ranks <= 0 means
// max(2, host.cores)) each joined to a memory switch of calibration.memoryBandwidth by a
// LinkKind::memory link at copyRate with latency 0; α is the device's messageLatency;
// node.cores = host.cores (physical cores); a "numa" level when the host has several NUMA
// nodes. Throws chorus::OptionError when a calibration value is not positive.
Topology localTopology(const HostInfo& host, const Calibration& calibration, int ranks);

// Where `chorus topology detect` writes the local topology and `loadTopology("local")` reads
// it: $CHORUS_TOPOLOGY_LOCAL, else $XDG_CACHE_HOME/chorus/topology-local.json, else
// $HOME/.cache/chorus/topology-local.json (else ./topology-local.json).
std::string localTopologyPath();

}  // namespace chorus::topology
