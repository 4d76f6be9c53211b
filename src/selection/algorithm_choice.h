// A library algorithm with its settings (selection layer), as CHORUS_ALGO entries and tuning
// files name it: "ring", "allreduce.ring{channels=2,instances=2,protocol=ll128}",
// "alltoall.two-step{nodes=2}".
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "algorithms/registry.h"
#include "ir/algorithm.h"

namespace chorus::selection {

struct AlgorithmChoice {
  std::string algorithm;              // full registry name, e.g. "allreduce.ring"
  std::map<std::string, int> params;  // declared parameters of the algorithm (not root)
  int instances = 1;
  ir::Protocol protocol = ir::Protocol::simple;
  int nodes = 0;  // node-shaped algorithms: number of nodes; 0 = from the ranks per node

  // The canonical text: the full name, then "{...}" with every setting that differs from the
  // default, keys sorted ("allreduce.ring{channels=2,instances=2}").
  std::string describe() const;
  // The build request for a communicator of `nranks` ranks (`ranksPerNode` 0: one node) without
  // a root. Throws OptionError when a node-shaped algorithm does not fit (nodes must divide
  // nranks). Parameter ranges are checked later by algorithms::resolveRequest.
  algorithms::BuildRequest buildRequest(int nranks, int ranksPerNode) const;
  // buildRequest with root 0 when the algorithm takes a root: what checking that a choice
  // compiles for a communicator (or counting its plan's steps) builds.
  algorithms::BuildRequest probeRequest(int nranks, int ranksPerNode) const;
  friend bool operator==(const AlgorithmChoice&, const AlgorithmChoice&) = default;
};

// Parses NAME or NAME{key=value,...}: NAME is a registry name of `collective` (full, or short
// without the "collective." prefix); keys are the algorithm's parameters (except root, which
// comes from each call) and instances, protocol (simple, ll, ll128) and nodes. Throws
// OptionError starting with `where` and naming the accepted names and keys.
AlgorithmChoice parseAlgorithmChoice(std::string_view text, ir::CollectiveKind collective,
                                     std::string_view where);

// The registry name for `name` ("ring" or "allreduce.ring") under `collective`; OptionError
// (prefixed with `where`) listing that collective's algorithms when there is none.
std::string resolveAlgorithmName(std::string_view name, ir::CollectiveKind collective,
                                 std::string_view where);

// Whether the algorithm has a "root" parameter.
bool takesRoot(const algorithms::AlgorithmInfo& info);

}  // namespace chorus::selection
