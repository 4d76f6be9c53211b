#include "shape_options.h"

#include <CLI/CLI.hpp>

namespace chorus::cli {

void addShapeOptions(CLI::App& command, ShapeOptions& shape) {
  CLI::Option* ranks =
      command.add_option("--ranks", shape.ranks, "Number of ranks (ranks-shaped algorithms)");
  CLI::Option* nodes = command.add_option("--nodes", shape.nodes, "Number of nodes");
  CLI::Option* gpus =
      command.add_option("--gpus-per-node", shape.gpusPerNode, "GPUs (ranks) per node");
  ranks->excludes(nodes)->excludes(gpus);
  command
      .add_option("--set", shape.sets,
                  "Algorithm parameter NAME=VALUE (repeatable; VALUE a number or, where the "
                  "parameter names its values, a name: direction=backward)")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false);
  command.add_option("--instances", shape.instances, "Replicate the program I times")
      ->capture_default_str();
}

algorithms::BuildRequest makeBuildRequest(const std::string& algorithm, const ShapeOptions& shape) {
  algorithms::BuildRequest request;
  request.algorithm = algorithm;
  request.ranks = shape.ranks;
  request.nodes = shape.nodes;
  request.gpusPerNode = shape.gpusPerNode;
  request.instances = shape.instances;
  for (const std::string& assignment : shape.sets) {
    const auto [key, value] =
        algorithms::parseParamAssignment(assignment, algorithms::findAlgorithm(algorithm));
    request.params[key] = value;
  }
  return request;
}

}  // namespace chorus::cli
