// Compiles a library algorithm for a runtime test (tests/runtime): by rank count, or by
// nodes x GPUs when `nodes` is set, with optional parameter settings.
#pragma once

#include <map>
#include <string>

#include "algorithms/registry.h"
#include "ir/algorithm.h"

namespace chorus::testing_support {

inline ir::Algorithm compileForTest(const std::string& name, int ranks, int nodes = 0, int gpus = 0,
                                    const std::map<std::string, int>& params = {}) {
  algorithms::BuildRequest request;
  request.algorithm = name;
  request.ranks = ranks;
  request.nodes = nodes;
  request.gpusPerNode = gpus;
  request.params = params;
  return algorithms::compileAlgorithm(request).algorithm;
}

}  // namespace chorus::testing_support
