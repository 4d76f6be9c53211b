// `chorus synth reduction` (CLI tool): P² placement and reduction synthesis on a
// topology. Every parallelism matrix of the axes on the topology's hierarchy, every valid
// reduction program over the reduction axes up to --size-limit, each lowered to ONE chorus
// program, compiled and simulated at --bytes; printed best first with the speedup over a
// single AllReduce of the same placement.
//
// Algorithm:
//   1. system = systemHierarchyOf(topology, nodes); candidates = synthesizeReductions(system,
//      axes, reduce) (p2_placement.h, p2_program.h).
//   2. Per placement and program: lowerProgram (p2_lower.h), compileProgram without the
//      verifier (the trace already checked the postcondition), simulate on the topology.
//      Every program gets the same threadblock budget per device (--threadblocks, as NCCL
//      runs any collective on a fixed number of channels/SMs): compiled once with one
//      instance to count its threadblocks t, then with floor(budget / t) instances. A fixed
//      --instances replicates every program alike instead.
//      --lowering both (the default) lowers every program twice, to NCCL Ring and to NCCL Tree
//      (p2_lower.h; P² §4 runs each program under both NCCL_ALGO settings, Appendix A's
//      Ring and Tree columns), and ranks the two as separate candidates.
//   3. The baseline of a placement is its one-instruction program (root, InsideGroup,
//      AllReduce): one AllReduce over each reduction group, in the faster of the lowerings
//      given (NCCL's tuner picks ring or tree for its AllReduce by predicted time).
//      Speedup = baseline / program. Every ring, the baseline's included, follows the
//      topology's fastest links (ring_order.h, --ring-order topology) as NCCL's ring search
//      would; the trees are shaped over the same order.
//   4. --run K measures the K fastest programs and their placements' single AllReduce on this
//      host (host_timing.h: one process per device over shm, exact results checked).
//   5. --emit compiles the --top best programs of all placements again with the verifier on
//      and writes them as MSCCL XML.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "chorus/error.h"
#include "cli.h"
#include "compiler/pipeline.h"
#include "host_timing.h"
#include "ir/formats.h"
#include "msccl_options.h"
#include "perf/progress.h"
#include "sim/simulator.h"
#include "support/error.h"
#include "support/size.h"
#include "synth/link_matrix.h"
#include "synth/p2_lower.h"
#include "synth/p2_placement.h"
#include "synth/p2_program.h"
#include "synth/ranking_f1.h"
#include "topology/fabric.h"
#include "topology/presets.h"

namespace chorus::cli {

// Adds `synth reduction` to the `synth` group (cmd_synth.cpp).
Command addSynthReductionCommand(CLI::App& synth);

namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

constexpr int kMaxInstances = 32;  // channels an MSCCL program may use

struct ReductionArgs {
  std::string topology;
  int nodes = 0;
  std::vector<int> axes;
  std::vector<int> reduce;
  int top = 3;
  int sizeLimit = 5;
  int threadblocks = 0;  // budget per device (0: defaultThreadblocks); unused with --instances
  int instances = 0;
  bool instancesGiven = false;
  bool threadblocksGiven = false;
  std::string bytes = "64M";
  std::string emit;
  std::string json;
  int run = 0;          // programs to measure on this host
  double budget = 0.2;  // seconds of timed calls per measured program
  bool quiet = false;
  ir::MscclWriteOptions xml;               // for --emit
  std::string ringOrder = "topology";      // --ring-order: "topology" or "rank"
  std::string lowering = "both";           // --lowering: "ring", "tree" or "both"
  std::vector<synth::Lowering> lowerings;  // derived in runReduction from --lowering
  synth::LinkMatrix nodeLinks;             // derived in runReduction from --ring-order
  int devicesPerNode = 0;  // the topology's, for the tree lowering's intra-node chains
};

// One simulated program of one placement.
struct Scored {
  int placement = 0;
  int program = 0;  // index in the placement's programs
  synth::Lowering lowering = synth::Lowering::ring;
  std::string text;
  double seconds = 0;
  double speedup = 0;                  // baseline / seconds
  int steps = 0;                       // IR steps of the compiled program
  int instances = 0;                   // copies of the program it was compiled with
  int threadblocks = 0;                // the most threadblocks any device runs
  std::optional<HostTiming> measured;  // --run
};

struct PlacementResult {
  std::string matrix;
  std::string hierarchy;
  double baselineSeconds = 0;
  int baselineProgram = -1;  // the single AllReduce's index in the placement's programs
  synth::Lowering baselineLowering = synth::Lowering::ring;  // its faster lowering
  std::vector<Scored> programs;  // fastest first; one entry per program and lowering
  Scored& baseline() {
    const auto it = std::find_if(programs.begin(), programs.end(), [&](const Scored& s) {
      return s.program == baselineProgram && s.lowering == baselineLowering;
    });
    CHORUS_INTERNAL_ASSERT(it != programs.end(),
                           "every placement's programs include the single AllReduce");
    return *it;
  }
};

bool isSingleAllReduce(const synth::ReductionProgram& program) {
  return program.instructions.size() == 1 &&
         program.instructions[0].collective == synth::Collective::allReduce &&
         program.instructions[0].slice == 0 &&
         program.instructions[0].form.kind == synth::FormKind::insideGroup;
}

// The file and algorithm name of program `k` of placement `p` in `lowering`.
std::string loweredName(int p, int k, synth::Lowering lowering) {
  return fmt::format("p2-m{}-{}-{}", p, k, synth::loweringName(lowering));
}

ir::Algorithm compileLowered(const ReductionArgs& args, const synth::PlacementCandidate& candidate,
                             const synth::ReductionProgram& program, synth::Lowering lowering,
                             const std::string& name, int instances, bool verify) {
  CHORUS_INTERNAL_ASSERT(instances >= 1, "a program is compiled with at least one instance");
  synth::LowerOptions lowerOptions;
  lowerOptions.name = name;
  lowerOptions.lowering = lowering;
  lowerOptions.nodeLinks = args.nodeLinks;
  lowerOptions.devicesPerNode = args.devicesPerNode;
  lowerOptions.program.instances = instances;
  const auto lowered =
      synth::lowerProgram(candidate.hierarchy, candidate.layout, program, lowerOptions);
  compiler::CompileOptions options;
  options.verify = verify;
  return compiler::compileProgram(lowered->dag(), options).algorithm;
}

int maxThreadblocks(const ir::Algorithm& algorithm) {
  std::size_t most = 0;
  for (const ir::RankProgram& rank : algorithm.ranks)
    most = std::max(most, rank.threadblocks.size());
  return static_cast<int>(most);
}

// A compiled program and the instances it was compiled with.
struct Compiled {
  ir::Algorithm algorithm;
  int instances = 1;
};

// Compiles with args.instances, or with as many instances as fit args.threadblocks per device
// (at least one).
Compiled compileWithinBudget(const ReductionArgs& args, const synth::PlacementCandidate& candidate,
                             const synth::ReductionProgram& program, synth::Lowering lowering,
                             const std::string& name, bool verify) {
  if (args.instancesGiven)
    return {compileLowered(args, candidate, program, lowering, name, args.instances, verify),
            args.instances};
  Compiled one{compileLowered(args, candidate, program, lowering, name, 1, verify), 1};
  const int fit = std::min(kMaxInstances, args.threadblocks / maxThreadblocks(one.algorithm));
  if (fit <= 1) return one;
  return {compileLowered(args, candidate, program, lowering, name, fit, verify), fit};
}

// The tbs column: threadblocks per device, starred when one instance already exceeds the budget.
std::string threadblockCell(const ReductionArgs& args, const Scored& s) {
  const bool over = !args.instancesGiven && s.threadblocks > args.threadblocks;
  return fmt::format("{}{}", s.threadblocks, over ? "*" : "");
}

std::string seconds(double s) {
  return s >= 1e-3 ? fmt::format("{:.3f} ms", s * 1e3) : fmt::format("{:.1f} us", s * 1e6);
}

void checkArgs(const ReductionArgs& args) {
  if (args.axes.empty())
    throw OptionError("--axes needs the parallelism axes' sizes, e.g. --axes 4,4");
  for (int axis : args.reduce)
    if (axis < 0 || axis >= static_cast<int>(args.axes.size()))
      throw OptionError(fmt::format(
          "--reduce {} is not an axis of --axes (0..{}); name axes by position, e.g. --reduce 0",
          axis, args.axes.size() - 1));
  if (args.reduce.empty())
    throw OptionError("--reduce needs the axes to reduce over, by position, e.g. --reduce 0");
  if (args.top < 1) throw OptionError("--top must be at least 1");
  if (args.ringOrder != "topology" && args.ringOrder != "rank")
    throw OptionError(fmt::format(
        "--ring-order {} is not known; use topology (NCCL-like rings along the fastest links) "
        "or rank",
        args.ringOrder));
  if (args.lowering != "ring" && args.lowering != "tree" && args.lowering != "both")
    throw OptionError(fmt::format(
        "--lowering {} is not known; use ring (NCCL Ring), tree (NCCL Tree: double binary tree "
        "AllReduce) or both (rank every program in each)",
        args.lowering));
  if (args.sizeLimit < 1) throw OptionError("--size-limit must be at least 1");
  if (args.run < 0) throw OptionError("--run must be 0 (no measuring) or more programs");
  if (!(args.budget > 0))
    throw OptionError(fmt::format("--budget {} must be a positive number of seconds", args.budget));
  if (args.instancesGiven && (args.instances < 1 || args.instances > kMaxInstances))
    throw OptionError(
        fmt::format("--instances {} is out of range; use 1 to {}", args.instances, kMaxInstances));
  if (args.threadblocksGiven && args.threadblocks < 1)
    throw OptionError(
        fmt::format("--threadblocks {} is out of range; give the threadblocks per device, e.g. 8",
                    args.threadblocks));
}

std::vector<std::vector<int>> matrixRows(const synth::ParallelismMatrix& matrix) {
  std::vector<std::vector<int>> rows(static_cast<std::size_t>(matrix.axes));
  for (int a = 0; a < matrix.axes; ++a)
    for (int l = 0; l < matrix.levels; ++l)
      rows[static_cast<std::size_t>(a)].push_back(matrix.factor(a, l));
  return rows;
}

// Every program of every placement, fastest predicted first.
std::vector<Scored*> byPredictedTime(std::vector<PlacementResult>& results) {
  std::vector<Scored*> all;
  for (PlacementResult& r : results)
    for (Scored& s : r.programs)
      all.push_back(&s);
  std::stable_sort(all.begin(), all.end(),
                   [](const Scored* a, const Scored* b) { return a->seconds < b->seconds; });
  return all;
}

// --run: measures the --run fastest programs and their placements' single AllReduce here.
void measureFastest(const ReductionArgs& args, std::uint64_t bytes,
                    const std::vector<synth::PlacementCandidate>& candidates,
                    std::vector<PlacementResult>& results) {
  std::vector<Scored*> chosen = byPredictedTime(results);
  if (chosen.size() > static_cast<std::size_t>(args.run))
    chosen.resize(static_cast<std::size_t>(args.run));
  for (Scored* s : std::vector<Scored*>(chosen)) {
    Scored* baseline = &results[static_cast<std::size_t>(s->placement)].baseline();
    if (std::find(chosen.begin(), chosen.end(), baseline) == chosen.end())
      chosen.push_back(baseline);
  }
  perf::Progress progress(!args.quiet, static_cast<int>(chosen.size()));
  int done = 0;
  for (Scored* s : chosen) {
    progress.show(++done, fmt::format("measuring placement {}: {}", s->placement, s->text));
    const synth::PlacementCandidate& c = candidates[static_cast<std::size_t>(s->placement)];
    const ir::Algorithm algorithm = compileLowered(
        args, c, c.programs[static_cast<std::size_t>(s->program)], s->lowering,
        loweredName(s->placement, s->program, s->lowering), s->instances, /*verify=*/false);
    s->measured = timeOnHost(algorithm, bytes, args.budget);
  }
}

// Top-1/5/10 F1 of the predicted ranking against the measured one, over the measured programs
// (ranking_f1.h; P² Table 5 ranks every program, --run K only the ones it measured).
void printTopKF1(std::FILE* out, std::vector<PlacementResult>& results) {
  std::vector<double> predicted;
  std::vector<double> measured;
  for (const Scored* s : byPredictedTime(results)) {
    if (!s->measured) continue;
    predicted.push_back(s->seconds);
    measured.push_back(s->measured->seconds);
  }
  if (predicted.size() < 2) return;
  std::string figures;
  for (int k : {1, 5, 10}) {
    if (static_cast<std::size_t>(k) >= predicted.size()) break;
    figures += fmt::format("{}top-{} {:.0f}%", figures.empty() ? "" : ", ", k,
                           100 * synth::computeTopKF1(predicted, measured, k));
  }
  fmt::print(out,
             "top-k F1 of the predicted ranking against the measured one ({} measured programs; "
             "P2 Table 5 reports 52/75/92%): {}\n",
             predicted.size(),
             figures.empty() ? "none (top-k needs more than k measured programs)" : figures);
}

// The --run table: predicted and measured times and speedups, fastest predicted first.
bool printMeasured(std::FILE* out, const ReductionArgs& args, const topology::Topology& topology,
                   std::vector<PlacementResult>& results) {
  fmt::print(out,
             "\nmeasured on this host (shm, one process per device pinned to a core, float32; "
             "median over batches of {} s of calls, as chorus bench):\n",
             args.budget);
  if (topology.name != "local")
    fmt::print(out,
               "note: the predictions are for {}; measure with --topology local (after `chorus "
               "topology detect`) to compare them with this host\n",
               topology.name);
  fmt::print(out, "{:>3}  {:>12} {:>12} {:>9} {:>9}  {:<4}  {}\n", "#", "predicted", "measured",
             "pred. x", "meas. x", "low.", "program");
  bool allCorrect = true;
  for (const Scored* s : byPredictedTime(results)) {
    if (!s->measured) continue;
    const Scored& baseline = results[static_cast<std::size_t>(s->placement)].baseline();
    const HostTiming& m = *s->measured;
    allCorrect = allCorrect && m.correct;
    fmt::print(out, "{:>3}  {:>12} {:>12} {:>8.2f}x {:>8.2f}x  {:<4}  {}{}\n", s->placement,
               seconds(s->seconds), seconds(m.seconds), s->speedup,
               baseline.measured->seconds / m.seconds, synth::loweringName(s->lowering), s->text,
               m.correct ? "" : "  WRONG: " + m.firstWrong);
  }
  printTopKF1(out, results);
  return allCorrect;
}

void writeJson(const ReductionArgs& args, const synth::SystemHierarchy& system, std::uint64_t bytes,
               const std::vector<synth::PlacementCandidate>& candidates,
               const std::vector<PlacementResult>& results) {
  Json json;
  json["topology"] = args.topology;
  json["system"] = synth::formatHierarchy(system);
  json["axes"] = args.axes;
  json["reduce"] = args.reduce;
  json["bytes"] = bytes;
  json["lowering"] = args.lowering;
  json["candidates"] = Json::array();
  for (std::size_t p = 0; p < results.size(); ++p) {
    for (const Scored& s : results[p].programs) {
      json["candidates"].push_back(
          {{"placement", p},
           {"matrix", matrixRows(candidates[p].matrix)},
           {"hierarchy", results[p].hierarchy},
           {"program", s.text},
           {"lowering", synth::loweringName(s.lowering)},
           {"seconds", s.seconds},
           {"allreduce_seconds", results[p].baselineSeconds},
           {"allreduce_lowering", synth::loweringName(results[p].baselineLowering)},
           {"speedup", s.speedup},
           {"steps", s.steps},
           {"instances", s.instances},
           {"threadblocks", s.threadblocks}});
      if (s.measured) {
        Json& candidate = json["candidates"].back();
        candidate["measured_seconds"] = s.measured->seconds;
        candidate["measured_correct"] = s.measured->correct;
      }
    }
  }
  writeTextOutput(args.json, json.dump(2) + "\n");
}

// The threadblock budget when --threadblocks is not given: the device's engines when the
// topology limits them (a CPU host: one thread per core per rank), else 8 (GPUs: a collective's
// usual channels).
int defaultThreadblocks(const topology::Topology& topology) {
  return topology.node.device.engines > 0 ? topology.node.device.engines : 8;
}

ExitCode runReduction(const ReductionArgs& given) {
  checkArgs(given);
  const std::uint64_t bytes = parseSize(given.bytes);
  const topology::Topology topology = topology::loadTopology(given.topology, given.nodes);
  ReductionArgs args = given;
  if (!args.threadblocksGiven) args.threadblocks = defaultThreadblocks(topology);
  args.lowerings = args.lowering == "both"
                       ? std::vector<synth::Lowering>{synth::Lowering::ring, synth::Lowering::tree}
                       : std::vector<synth::Lowering>{synth::parseLowering(args.lowering)};
  args.devicesPerNode = topology.node.devices;
  if (args.ringOrder == "topology" && topology.node.devices > 1)
    args.nodeLinks = synth::linkMatrixFromTopology(topology::withNodes(topology, 1));
  const synth::SystemHierarchy system = synth::systemHierarchyOf(topology, topology.nodes);
  topology::Fabric fabric(topology);
  const auto start = Clock::now();
  synth::EnumerateOptions enumerate;
  enumerate.sizeLimit = args.sizeLimit;
  const std::vector<synth::PlacementCandidate> candidates =
      synth::synthesizeReductions(system, args.axes, args.reduce, enumerate);
  int total = 0;
  for (const auto& c : candidates)
    total += static_cast<int>(c.programs.size());
  const int lowered = total * static_cast<int>(args.lowerings.size());

  perf::Progress progress(!args.quiet, lowered);
  std::vector<PlacementResult> results;
  int done = 0;
  for (std::size_t p = 0; p < candidates.size(); ++p) {
    const synth::PlacementCandidate& c = candidates[p];
    PlacementResult result;
    result.matrix = synth::formatMatrix(c.matrix);
    result.hierarchy = synth::formatSynthesisHierarchy(c.hierarchy);
    for (std::size_t k = 0; k < c.programs.size(); ++k) {
      const std::string text = synth::formatProgram(c.hierarchy, c.programs[k]);
      for (const synth::Lowering lowering : args.lowerings) {
        progress.show(++done, fmt::format("placement {} of {}: {} ({})", p + 1, candidates.size(),
                                          text, synth::loweringName(lowering)));
        const Compiled compiled = compileWithinBudget(
            args, c, c.programs[k], lowering,
            loweredName(static_cast<int>(p), static_cast<int>(k), lowering), /*verify=*/false);
        const ir::Algorithm& algorithm = compiled.algorithm;
        sim::SimOptions options;
        options.bytes = bytes;
        Scored scored;
        scored.placement = static_cast<int>(p);
        scored.program = static_cast<int>(k);
        scored.lowering = lowering;
        scored.text = text;
        scored.seconds = sim::simulate(algorithm, fabric, options).seconds;
        scored.steps = static_cast<int>(ir::stepCount(algorithm));
        scored.instances = compiled.instances;
        scored.threadblocks = maxThreadblocks(algorithm);
        // The baseline: the single AllReduce in its faster lowering (ties: the first given).
        if (isSingleAllReduce(c.programs[k]) &&
            (result.baselineProgram < 0 || scored.seconds < result.baselineSeconds)) {
          result.baselineSeconds = scored.seconds;
          result.baselineProgram = static_cast<int>(k);
          result.baselineLowering = lowering;
        }
        result.programs.push_back(std::move(scored));
      }
    }
    CHORUS_INTERNAL_ASSERT(result.baselineSeconds > 0,
                           "every placement's programs include the single AllReduce");
    for (Scored& s : result.programs)
      s.speedup = result.baselineSeconds / s.seconds;
    std::stable_sort(result.programs.begin(), result.programs.end(),
                     [](const Scored& a, const Scored& b) { return a.seconds < b.seconds; });
    results.push_back(std::move(result));
  }
  progress.clear();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();

  if (args.run > 0) measureFastest(args, bytes, candidates, results);
  if (!args.json.empty()) writeJson(args, system, bytes, candidates, results);
  std::FILE* out = args.json == "-" ? stderr : stdout;
  fmt::print(out, "system: {} ({}, {} device{})\n", synth::formatHierarchy(system), topology.name,
             synth::deviceCount(system), synth::deviceCount(system) == 1 ? "" : "s");
  fmt::print(out, "axes: [{}], reducing axis {} ; {} per device\n", fmt::join(args.axes, ", "),
             fmt::join(args.reduce, ", "), formatSize(bytes));
  fmt::print(out, "rings: {}\n",
             args.nodeLinks.size > 0
                 ? "along the fastest links of a node, as NCCL orders them (--ring-order topology)"
                 : "in rank order (--ring-order rank)");
  fmt::print(out, "lowering: {}\n",
             args.lowering == "both"
                 ? "every program to NCCL Ring and to NCCL Tree, ranked together; the AllReduce "
                   "baseline in the faster of the two (--lowering both)"
                 : fmt::format("every program to NCCL {} (--lowering {})",
                               args.lowering == "tree" ? "Tree" : "Ring", args.lowering));
  if (args.instancesGiven)
    fmt::print(out, "every program on {} instance{}\n", args.instances,
               args.instances == 1 ? "" : "s");
  else
    fmt::print(out,
               "every program on up to {} threadblocks per device (tbs: instances x "
               "threadblocks of one instance)\n",
               args.threadblocks);
  fmt::print(out,
             "{} placements, {} valid programs (size <= {}), {} lowered, compiled and simulated "
             "in {:.1f} s\n\n",
             candidates.size(), total, args.sizeLimit, lowered, elapsed);
  if (results.empty()) return ExitCode::ok;

  // Placements by their single AllReduce, fastest first (P² §5: placement matters).
  std::vector<std::size_t> order(results.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return results[a].baselineSeconds < results[b].baselineSeconds;
  });
  fmt::print(out, "{:>3}  {:<28} {:>19} {:>14} {:>8} {:>4}  {:<4}  {}\n", "#", "parallelism matrix",
             "AllReduce", "best", "speedup", "tbs", "low.", "best program");
  bool starred = false;
  for (std::size_t i : order) {
    const PlacementResult& r = results[i];
    const Scored& best = r.programs.front();
    fmt::print(
        out, "{:>3}  {:<28} {:>19} {:>14} {:>7.2f}x {:>4}  {:<4}  {}\n", i, r.matrix,
        fmt::format("{} {}", seconds(r.baselineSeconds), synth::loweringName(r.baselineLowering)),
        seconds(best.seconds), best.speedup, threadblockCell(args, best),
        synth::loweringName(best.lowering), best.text);
    starred = starred || threadblockCell(args, best).ends_with('*');
    for (std::size_t k = 1; k < r.programs.size() && k < static_cast<std::size_t>(args.top); ++k) {
      const Scored& s = r.programs[k];
      fmt::print(out, "{:>3}  {:<28} {:>19} {:>14} {:>7.2f}x {:>4}  {:<4}  {}\n", "", "", "",
                 seconds(s.seconds), s.speedup, threadblockCell(args, s),
                 synth::loweringName(s.lowering), s.text);
      starred = starred || threadblockCell(args, s).ends_with('*');
    }
  }
  if (starred)
    fmt::print(out,
               "* one instance of the program already needs more than --threadblocks {} per "
               "device\n",
               args.threadblocks);
  const PlacementResult& fastest = results[order.front()];
  const PlacementResult& slowest = results[order.back()];
  int beaten = 0;
  for (const PlacementResult& r : results)
    beaten += r.programs.front().speedup > 1.0 + 1e-9 ? 1 : 0;
  fmt::print(out,
             "\nplacement: the single AllReduce takes {} on the best placement and {} on the "
             "worst ({:.1f}x)\n",
             seconds(fastest.baselineSeconds), seconds(slowest.baselineSeconds),
             slowest.baselineSeconds / fastest.baselineSeconds);
  fmt::print(out, "a synthesized program beats the single AllReduce on {} of {} placements\n",
             beaten, results.size());

  const bool correct = args.run == 0 || printMeasured(out, args, topology, results);
  if (!args.emit.empty()) {
    const std::vector<Scored*> all = byPredictedTime(results);
    std::error_code error;
    std::filesystem::create_directories(args.emit, error);
    if (error)
      throw UserError(
          fmt::format("cannot create --emit directory {}: {}", args.emit, error.message()));
    for (std::size_t i = 0; i < all.size() && i < static_cast<std::size_t>(args.top); ++i) {
      const Scored& s = *all[i];
      const std::string name = loweredName(s.placement, s.program, s.lowering);
      const synth::PlacementCandidate& c = candidates[static_cast<std::size_t>(s.placement)];
      const ir::Algorithm algorithm =
          compileLowered(args, c, c.programs[static_cast<std::size_t>(s.program)], s.lowering, name,
                         s.instances, /*verify=*/true);
      const std::string path = (std::filesystem::path(args.emit) / (name + ".xml")).string();
      writeTextOutput(path, ir::writeAlgorithm(algorithm, ir::Format::xml, args.xml));
      fmt::print(out, "wrote {} ({}, {} lowering, {})\n", path, s.text,
                 synth::loweringName(s.lowering), seconds(s.seconds));
    }
  }
  return correct ? ExitCode::ok : ExitCode::failure;
}

}  // namespace

Command addSynthReductionCommand(CLI::App& synth) {
  CLI::App* command = synth.add_subcommand(
      "reduction",
      "P² (Xie et al., MLSys 2022): every placement of the parallelism axes on the topology's "
      "hierarchy and "
      "every reduction program over the reduction axes, lowered to chorus, simulated and "
      "ranked against a single AllReduce");
  auto args = std::make_shared<ReductionArgs>();
  command
      ->add_option("--topology", args->topology,
                   "Preset name or topology JSON file (its levels "
                   "give the hierarchy)")
      ->required();
  command->add_option("--nodes", args->nodes, "Nodes of the topology (default: its own)");
  command->add_option("--axes", args->axes, "Parallelism axes' sizes, e.g. 4,4 (data x shards)")
      ->delimiter(',')
      ->required();
  command->add_option("--reduce", args->reduce, "Axes to reduce over, by position, e.g. 0")
      ->delimiter(',')
      ->required();
  command
      ->add_option("--ring-order", args->ringOrder,
                   "Order of every ring and chain: topology (along the fastest links, as NCCL "
                   "orders a ring, e.g. NVLink on dgx1) or rank")
      ->capture_default_str();
  command
      ->add_option("--lowering", args->lowering,
                   "How programs become chorus programs: ring (NCCL Ring), tree (NCCL Tree: "
                   "double binary tree AllReduce, binary tree Reduce/Broadcast, ring "
                   "ReduceScatter/AllGather) or both (each program in each, ranked together; the "
                   "AllReduce baseline in the faster one)")
      ->capture_default_str();
  command->add_option("--top", args->top, "Programs shown per placement and emitted")
      ->capture_default_str();
  command->add_option("--size-limit", args->sizeLimit, "Largest program size (P² uses 5)")
      ->capture_default_str();
  command->add_option("--bytes", args->bytes, "Bytes per device to reduce (simulated)")
      ->capture_default_str();
  CLI::Option* threadblocks =
      command->add_option("--threadblocks", args->threadblocks,
                          "Threadblocks per device every program may use: each is replicated on "
                          "as many channels as fit, as NCCL runs any collective on a fixed number "
                          "of channels (default: the device's engines when the topology limits "
                          "them, as on a CPU host; else 8)");
  CLI::Option* instances =
      command
          ->add_option("--instances", args->instances,
                       "Instead of --threadblocks: this many copies of every program on separate "
                       "channels, splitting the data")
          ->excludes(threadblocks);
  command->add_option("--run", args->run,
                      "Also run the K fastest programs and their placements' single AllReduce "
                      "on this host (one process per device over shm, results checked) and "
                      "print measured next to predicted times");
  command
      ->add_option("--budget", args->budget, "Seconds of timed calls per measured program (--run)")
      ->capture_default_str();
  command->add_option("--emit", args->emit,
                      "Write the --top fastest programs as MSCCL XML into this directory");
  addMscclWriteOptions(*command, args->xml);
  CLI::Option* json =
      command
          ->add_option("--json", args->json,
                       "Write every candidate {placement, matrix, program, lowering, seconds, "
                       "speedup} to "
                       "FILE ('-' or no value = standard output; the table then goes to stderr)")
          ->expected(0, 1)
          ->type_name("[FILE]");
  command->add_flag("--quiet", args->quiet, "No progress line");
  return [args, json, instances, threadblocks]() {
    if (json->count() > 0 && args->json.empty()) args->json = "-";
    args->instancesGiven = instances->count() > 0;
    args->threadblocksGiven = threadblocks->count() > 0;
    return runReduction(*args);
  };
}

}  // namespace chorus::cli
