// Compiles a library algorithm for a runtime test (tests/runtime): by rank count, or by
// nodes x GPUs when `nodes` is set.
#pragma once

#include <string>

#include "algorithms/registry.h"
#include "ir/algorithm.h"

namespace chorus::testing_support {

inline ir::Algorithm compileForTest(const std::string& name, int ranks, int nodes = 0,
                                    int gpus = 0) {
  algorithms::BuildRequest request;
  request.algorithm = name;
  request.ranks = ranks;
  request.nodes = nodes;
  request.gpusPerNode = gpus;
  return algorithms::compileAlgorithm(request).algorithm;
}

}  // namespace chorus::testing_support
