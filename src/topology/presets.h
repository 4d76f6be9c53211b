// Built-in topology presets (docs/topology.md; docs/sources.md "Topology presets", P² §5, MXNet
// trees): DGX-1 V100, DGX-2, DGX A100, DGX H100, HGX A100 16-GPU (GCP a2-megagpu-16g), GCP V100
// as P² models it, Summit and Lassen nodes, and a uniform fully-connected model for closed-form
// checks. Each is one node; withNodes() composes N of them over a network of the node's NICs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "topology/topology.h"

namespace chorus::topology {

struct PresetInfo {
  std::string name;     // "dgx1", "dgx2", "dgx-a100", "dgx-h100", "hgx-a100-16", "summit", ...
  std::string summary;  // one line: devices, fabric, NICs
  int devices = 0;      // per node; 0 for "local" (whatever `chorus topology detect` wrote)
};

const std::vector<PresetInfo>& presets();

// The preset `name` (aliases such as "dgx-1" and "dgxa100" accepted) with `nodes` nodes.
// Throws chorus::OptionError listing the presets when the name is unknown.
Topology preset(std::string_view name, int nodes = 1);

// A preset name or a JSON file path (anything containing '/' or ending in ".json"), with the
// node count replaced when nodes > 0.
Topology loadTopology(std::string_view nameOrPath, int nodes = 0);

// `ranks` devices, every pair joined by its own duplex link of `bandwidth` bytes/s and
// `latency` seconds, reductions at `reduceRate` bytes/s, instantaneous copies, unlimited
// engines: the α-β-γ machine of the xCCL notes (α = latency, β = 1/bandwidth, γ = 1/reduceRate).
// sendPorts 1 is the one-port model of docs/sources.md "α-β-γ closed forms" (a rank sends one
// message at a time, α included); 0 lets every threadblock send at once.
Topology uniformTopology(int ranks, double latency, double bandwidth, double reduceRate,
                         int sendPorts = 0);

}  // namespace chorus::topology
