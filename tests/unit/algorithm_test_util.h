// Helpers for the algorithm library's unit tests: build requests by shape, and the
// cross-rank messages of a traced program.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/registry.h"

namespace chorus::testing_support {

inline algorithms::BuildRequest ranksRequest(const std::string& algorithm, int ranks,
                                             std::map<std::string, int> params = {}) {
  algorithms::BuildRequest request;
  request.algorithm = algorithm;
  request.ranks = ranks;
  request.params = std::move(params);
  return request;
}

inline algorithms::BuildRequest nodesRequest(const std::string& algorithm, int nodes, int gpus,
                                             std::map<std::string, int> params = {}) {
  algorithms::BuildRequest request;
  request.algorithm = algorithm;
  request.nodes = nodes;
  request.gpusPerNode = gpus;
  request.params = std::move(params);
  return request;
}

// The cross-rank operations of a traced program (local copies and reductions excluded).
inline std::vector<ir::DagOp> messagesOf(const lang::Program& program) {
  std::vector<ir::DagOp> messages;
  for (const ir::DagOp& op : program.dag().ops)
    if (op.src.rank != op.dst.rank) messages.push_back(op);
  return messages;
}

}  // namespace chorus::testing_support
