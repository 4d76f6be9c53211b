// Rail rings (NCCL builds one ring per channel, each through another NIC:
// docs/sources.md "NCCL constants and channels"; the ring itself is the xCCL notes' "Ring").
#include "algorithms/rail_rings.h"

namespace chorus::algorithms {

bool usesRailRings(const BuildArgs& args) {
  return args.nodes > 1 && args.param("channels") > 1;
}

std::vector<int> railRing(int channel, int nodes, int gpusPerNode) {
  std::vector<int> ring;
  ring.reserve(static_cast<std::size_t>(nodes * gpusPerNode));
  const int first = channel % gpusPerNode;
  for (int n = 0; n < nodes; ++n)
    for (int i = 0; i < gpusPerNode; ++i)
      ring.push_back(n * gpusPerNode + (first + i) % gpusPerNode);
  return ring;
}

}  // namespace chorus::algorithms
