// Compiles a library algorithm for a test: compileForTest for a runtime test (tests/runtime), by
// rank count, or by nodes x GPUs when `nodes` is set, with optional parameter settings;
// compileAtTestShape and libraryAlgorithmNames for suites over the whole library;
// compileForTiming for a simulator test (tests/sim), any request, without the verifier.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

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

// A library algorithm at the shape the runtime suites run every algorithm at: ranks-shaped
// ones on max(minRanks, 3) ranks, node-shaped ones on 2 nodes x 2 GPUs.
inline ir::Algorithm compileAtTestShape(const algorithms::AlgorithmInfo& info,
                                        ir::Protocol protocol = ir::Protocol::simple) {
  algorithms::BuildRequest request;
  request.algorithm = info.name;
  request.protocol = protocol;
  if (info.shape == algorithms::Shape::ranks) {
    request.ranks = std::max(info.minRanks, 3);
  } else {
    request.nodes = 2;
    request.gpusPerNode = 2;
  }
  return algorithms::compileAlgorithm(request).algorithm;
}

// The name of every library algorithm, in the registry's order.
inline std::vector<std::string> libraryAlgorithmNames() {
  std::vector<std::string> names;
  for (const auto& info : algorithms::listAlgorithms())
    names.push_back(info.name);
  return names;
}

// The compiler's own tests verify every library algorithm; a timing test only needs the IR.
inline ir::Algorithm compileForTiming(const algorithms::BuildRequest& request) {
  compiler::CompileOptions options;
  options.verify = false;
  return algorithms::compileAlgorithm(request, options).algorithm;
}

}  // namespace chorus::testing_support
