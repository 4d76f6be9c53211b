// Compiles a library algorithm for a test: compileForTest for a runtime test (tests/runtime), by
// rank count, or by nodes x GPUs when `nodes` is set, with optional parameter settings;
// compileForTiming for a simulator test (tests/sim), any request, without the verifier.
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

// The compiler's own tests verify every library algorithm; a timing test only needs the IR.
inline ir::Algorithm compileForTiming(const algorithms::BuildRequest& request) {
  compiler::CompileOptions options;
  options.verify = false;
  return algorithms::compileAlgorithm(request, options).algorithm;
}

}  // namespace chorus::testing_support
