// Simulator cost at scale (issue 5 and 18; results in docs/simulator.md): wall seconds of each
// stage before and in the simulation (trace, postcondition, compiler passes, verify pass,
// simulate) and the simulator's wall time per rank-step (one step of one threadblock on one
// tile) for library algorithms on DGX A100 clusters of 64, 256 and 1024 ranks.
//
//   build/bench/bench_sim_scale [--ranks 64,256,1024] [--algorithms allreduce.ring,...]
//                               [--sizes 1M,64M,1G] [--every-tile]
//
// A benchmark, not a test: it asserts nothing.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "sim/simulator.h"
#include "support/size.h"
#include "support/strings.h"
#include "topology/presets.h"

namespace {

using namespace chorus;

double seconds(std::chrono::steady_clock::time_point from,
               std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

struct Options {
  std::string ranks = "64,256,1024";
  std::string algorithms =
      "allreduce.ring,allreduce.hierarchical,allreduce.recursive-doubling,alltoall.direct";
  std::string topology = "dgx-a100";
  std::string sizes = "1M,64M,1G";
  bool everyTile = false;  // no steady-state extrapolation
};

int run(const Options& o) {
  const topology::Topology node = topology::loadTopology(o.topology);
  const int perNode = node.node.devices;
  fmt::print("# topology {} ({} devices per node); times are wall-clock on this machine\n",
             o.topology, perNode);
  fmt::print(
      "# trace: DSL build; post: trace-time postcondition; passes: compiler passes but verify;\n"
      "# verify: the verify pass; sim: simulate (s); ns/rank-step: sim per simulated step;\n"
      "# simulated: tiles simulated step by step (the rest extrapolated from the steady state);\n"
      "# predicted: the simulated call's time (ms)\n");
  fmt::print(
      "# {:<26} {:>5} {:>6} {:>7} {:>7} {:>7} {:>7} {:>6} {:>9} {:>11} {:>11} {:>8} {:>7} {:>10}\n",
      "algorithm", "ranks", "size", "trace", "post", "passes", "verify", "tiles", "simulated",
      "rank-steps", "events", "sim", "ns/step", "predicted");
  for (auto rankPart : split(o.ranks, ',')) {
    const int ranks = std::stoi(std::string(rankPart));
    topology::Fabric fabric(topology::withNodes(node, ranks / perNode));
    for (auto namePart : split(o.algorithms, ',')) {
      const std::string name(namePart);
      const auto& info = algorithms::findAlgorithm(name);
      algorithms::BuildRequest request;
      request.algorithm = name;
      if (info.shape == algorithms::Shape::ranks) {
        request.ranks = ranks;
      } else {
        request.nodes = ranks / perNode;
        request.gpusPerNode = perNode;
      }
      // The stages of algorithms::compileAlgorithm, timed one by one.
      const auto traceStart = std::chrono::steady_clock::now();
      const std::unique_ptr<lang::Program> program = algorithms::buildProgram(request);
      const auto postStart = std::chrono::steady_clock::now();
      algorithms::requirePostcondition(*program, name);
      const auto compileStart = std::chrono::steady_clock::now();
      const compiler::CompileResult compiled = compiler::compileProgram(program->dag(), {});
      double verifySeconds = 0;
      double passSeconds = 0;
      for (const auto& pass : compiled.passes)
        (pass.name == "verify" ? verifySeconds : passSeconds) += pass.milliseconds / 1e3;
      const ir::Algorithm& plan = compiled.algorithm;
      for (auto sizePart : split(o.sizes, ',')) {
        sim::SimOptions options;
        options.bytes = parseSize(sizePart);
        options.extrapolate = !o.everyTile;
        const sim::SimResult r = sim::simulate(plan, fabric, options);
        fmt::print(
            "  {:<26} {:>5} {:>6} {:>7.2f} {:>7.2f} {:>7.2f} {:>7.2f} {:>6} {:>9} {:>11} {:>11} "
            "{:>8.2f} {:>7.0f} {:>10.3f}\n",
            name, ranks, formatSize(options.bytes), seconds(traceStart, postStart),
            seconds(postStart, compileStart), passSeconds, verifySeconds, r.tiles, r.tilesSimulated,
            r.stepsExecuted, r.events, r.simSeconds,
            r.stepsExecuted ? r.simSeconds * 1e9 / static_cast<double>(r.stepsExecuted) : 0.0,
            r.seconds * 1e3);
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Wall time of trace, compile, verify and simulation at 64, 256 and 1024 ranks"};
  app.add_option("--ranks", o.ranks, "Rank counts (multiples of the node size)")
      ->capture_default_str();
  app.add_option("--algorithms", o.algorithms, "Library algorithms")->capture_default_str();
  app.add_option("--topology", o.topology, "Preset or topology JSON")->capture_default_str();
  app.add_option("--sizes", o.sizes, "Call sizes")->capture_default_str();
  app.add_flag("--every-tile", o.everyTile, "Simulate every tile (no steady-state extrapolation)");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    fmt::print(stderr, "sim_scale: error: {}\n", e.what());
    return 1;
  }
}
