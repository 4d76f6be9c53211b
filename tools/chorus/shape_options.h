// The options that pick a library algorithm's shape, shared by `compile` and `run`:
// --ranks | --nodes --gpus-per-node, --set NAME=VALUE..., --instances.
#pragma once

#include <string>
#include <vector>

#include "algorithms/registry.h"

namespace CLI {
class App;
}

namespace chorus::cli {

struct ShapeOptions {
  int ranks = 0;
  int nodes = 0;
  int gpusPerNode = 0;
  std::vector<std::string> sets;
  int instances = 1;
};

// Adds the options to `command`, storing into `shape` (which must outlive parsing).
void addShapeOptions(CLI::App& command, ShapeOptions& shape);

// A registry request for `algorithm` with the shape, parameters and instances given.
algorithms::BuildRequest makeBuildRequest(const std::string& algorithm, const ShapeOptions& shape);

}  // namespace chorus::cli
