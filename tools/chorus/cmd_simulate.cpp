// `chorus simulate FILE|ALGO --topology PRESET|FILE ...`: predicts the time of a plan file or a
// library algorithm on a topology model with the event-driven simulator (or, with --analytic,
// the closed-form α-β-γ model) over one size or an nccl-tests style sweep; prints a table,
// the busiest links, the critical path, and writes JSON or a Chrome trace.
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "cli.h"
#include "compiler/pipeline.h"
#include "ir/formats.h"
#include "ir/step_endpoints.h"
#include "perf/collective.h"
#include "perf/sweep.h"
#include "shape_options.h"
#include "sim/closed_form.h"
#include "sim/simulator.h"
#include "support/error.h"
#include "support/size.h"
#include "topology/fabric.h"
#include "topology/presets.h"

namespace chorus::cli {
namespace {

constexpr std::size_t kElementSize = 4;  // float32; the simulator is dtype-free
constexpr int kDefaultLinksSingle = 5;

struct SimulateArgs {
  std::string target;
  std::string topology;
  ShapeOptions shape;
  std::string protocol = "simple";
  std::string bytes;
  std::string minBytes;
  std::string maxBytes;
  std::uint64_t factor = 2;
  int slots = sim::SimOptions{}.slots;
  std::string slotBytes;
  bool noTiling = false;
  bool everyTile = false;
  bool analytic = false;
  bool criticalPath = false;
  std::string tracePath;
  int links = -1;  // -1: 5 for a single size, 0 for a sweep
  bool json = false;
  std::string jsonPath;  // "-" = standard output
};

// One plan to simulate and, for a library algorithm, its registry name.
struct Plan {
  ir::Algorithm algorithm;
  std::string libraryName;  // empty for plan files
  bool defaultParameters = true;
  // A library plan compiled without its verify pass, which runs beside the first simulation
  // (PendingVerification): the collective it is checked against, else null.
  std::shared_ptr<const ir::Collective> unverifiedCollective;
};

// The verify pass of a library plan on a second thread, so that it overlaps the simulation
// (at 1024 ranks each takes seconds). wait() rethrows its CompileError; nothing about the plan
// is printed before it returns. Joins in the destructor on every path.
class PendingVerification {
 public:
  explicit PendingVerification(const Plan& plan) {
    if (!plan.unverifiedCollective) return;
    verified_ = std::async(std::launch::async, [&plan] {
      compiler::verifyCompiled(plan.algorithm, plan.unverifiedCollective, {});
    });
  }
  PendingVerification(const PendingVerification&) = delete;
  PendingVerification& operator=(const PendingVerification&) = delete;
  ~PendingVerification() {
    if (verified_.valid()) verified_.wait();
  }
  void wait() {
    if (verified_.valid()) verified_.get();
  }

 private:
  std::future<void> verified_;
};

// One printed row.
struct Row {
  std::uint64_t bytes = 0;
  std::size_t count = 0;
  double seconds = 0;
  double algbw = 0;
  double busbw = 0;
  std::optional<sim::SimResult> result;  // absent for --analytic rows
};

std::string collectiveLabel(const ir::Algorithm& algorithm) {
  if (algorithm.collective == ir::CollectiveKind::custom && !algorithm.customName.empty())
    return algorithm.customName;
  return std::string(ir::collectiveName(algorithm.collective));
}

// The sizes to simulate: --bytes, or the -b/-e/-f sweep (either end defaults to the other),
// or 1 MiB.
std::vector<std::uint64_t> requestedSizes(const SimulateArgs& args) {
  const bool sweep = !args.minBytes.empty() || !args.maxBytes.empty();
  if (sweep && !args.bytes.empty())
    throw OptionError("--bytes gives one size and -b/-e a sweep; use one or the other");
  if (!sweep) return {parseSize(args.bytes.empty() ? "1M" : args.bytes)};
  const std::uint64_t minBytes = parseSize(args.minBytes.empty() ? args.maxBytes : args.minBytes);
  const std::uint64_t maxBytes = parseSize(args.maxBytes.empty() ? args.minBytes : args.maxBytes);
  return perf::sizeSweep(minBytes, maxBytes, args.factor);
}

// A library algorithm compiled for the topology's shape unless --ranks, --nodes or
// --gpus-per-node say otherwise (--nodes also composed the topology). Ranks-shaped algorithms
// that also take a node shape (AlgorithmInfo::alsoByNodes) get N x G on a multi-node topology.
Plan compileForTopology(const SimulateArgs& args, const topology::Topology& topology) {
  const algorithms::AlgorithmInfo& info = algorithms::findAlgorithm(args.target);
  ShapeOptions shape = args.shape;
  // A ranks-shaped algorithm that also takes a node shape (the rings) gets the topology's
  // N x G when it spans several nodes, so its channels can use every node's NICs.
  const bool byNodes =
      info.shape == algorithms::Shape::nodes ||
      (info.alsoByNodes && shape.ranks == 0 && (topology.nodes > 1 || shape.gpusPerNode > 0));
  if (byNodes) {
    if (shape.ranks == 0) {
      if (shape.nodes == 0) shape.nodes = topology.nodes;
      if (shape.gpusPerNode == 0) shape.gpusPerNode = topology.node.devices;
    }
  } else {
    if (shape.gpusPerNode > 0) {
      throw OptionError(fmt::format(
          "'{}' takes --ranks, not --gpus-per-node; leave the shape out to use all {} devices "
          "of the topology",
          info.name, topology.ranks()));
    }
    if (shape.ranks == 0) shape.ranks = topology.ranks();
    shape.nodes = 0;  // --nodes only composed the topology
  }
  algorithms::BuildRequest request = makeBuildRequest(args.target, shape);
  const auto protocol = ir::parseProtocolName(args.protocol);
  if (!protocol) {
    throw OptionError(
        fmt::format("unknown --protocol '{}'; use simple, ll or ll128", args.protocol));
  }
  request.protocol = *protocol;
  const auto collective = ir::parseCollectiveName(info.collective);
  if (args.analytic && collective) {
    // The closed forms need the name, collective and rank count only: skip tracing and
    // compiling, which grow with the ring's p² steps, and the registry's 1024-rank bound
    // that exists for them.
    const int ranks = byNodes && shape.ranks == 0 ? shape.nodes * shape.gpusPerNode : shape.ranks;
    if (ranks < info.minRanks)
      throw OptionError(fmt::format("{} needs at least {} ranks, got {}; use more ranks", info.name,
                                    info.minRanks, ranks));
    Plan plan{.algorithm = {},
              .libraryName = info.name,
              .defaultParameters = args.shape.sets.empty() && args.shape.instances == 1,
              .unverifiedCollective = nullptr};
    plan.algorithm.name = info.name;
    plan.algorithm.collective = *collective;
    plan.algorithm.nranks = ranks;
    plan.algorithm.protocol = request.protocol;
    return plan;
  }
  compiler::CompileOptions compile;
  compile.verify = false;  // runSimulate verifies beside the simulation (PendingVerification)
  compiler::CompileResult compiled = algorithms::compileAlgorithm(request, compile);
  Plan plan{.algorithm = std::move(compiled.algorithm),
            .libraryName = info.name,
            .defaultParameters = args.shape.sets.empty() && args.shape.instances == 1,
            .unverifiedCollective = std::move(compiled.collective)};
  return plan;
}

std::vector<Plan> loadPlans(const SimulateArgs& args, const topology::Topology& topology) {
  if (args.target != "-" && !std::filesystem::exists(args.target))
    return {compileForTopology(args, topology)};
  if (!args.shape.sets.empty() || args.shape.instances != 1)
    throw OptionError("--set and --instances apply to library algorithms, not plan files");
  std::vector<Plan> plans;
  for (ir::Algorithm& algorithm : ir::readAlgorithmsFile(args.target)) {
    if (args.shape.ranks > 0 && algorithm.nranks != args.shape.ranks) {
      throw OptionError(fmt::format("'{}' is a plan for {} ranks, not --ranks {}", algorithm.name,
                                    algorithm.nranks, args.shape.ranks));
    }
    ir::requireStepEndpoints(algorithm, "simulated");  // the simulator reads tbs' peers only
    plans.push_back(Plan{.algorithm = std::move(algorithm),
                         .libraryName = {},
                         .defaultParameters = true,
                         .unverifiedCollective = nullptr});
  }
  return plans;
}

// α, β, γ of the topology as seen by ranks 0..p-1: the slowest route's latency plus the
// per-message latency, the narrowest route's bandwidth capped by a threadblock's copy rate,
// and the reduction rate; the one-port forms when a rank sends one message at a time.
sim::AlphaBetaGamma topologyCost(topology::Fabric& fabric, int p) {
  const topology::DeviceModel& device = fabric.topology().node.device;
  if (device.sendPorts > 1)
    throw OptionError(fmt::format(
        "--analytic has closed forms for one send port or unlimited ones, but topology '{}' "
        "gives each device {}; drop --analytic to run the event-driven simulation",
        fabric.topology().name, device.sendPorts));
  double latency = 0;
  double bandwidth = std::numeric_limits<double>::infinity();
  // A route's latency and bandwidth depend only on the two device indices and whether the
  // nodes differ (nodes are copies of one model); every such class among ranks [0, p) occurs
  // among the first two nodes' ranks, since node n holds a subset of node 0's devices.
  const int covered = std::min(p, 2 * fabric.topology().node.devices);
  for (int src = 0; src < covered; ++src) {
    for (int dst = 0; dst < covered; ++dst) {
      if (src == dst) continue;
      const topology::Route& route = fabric.route(src, dst);
      latency = std::max(latency, route.latency);
      bandwidth = std::min(bandwidth, route.bandwidth);
    }
  }
  if (device.copyRate > 0) bandwidth = std::min(bandwidth, device.copyRate);
  sim::AlphaBetaGamma cost;
  cost.alpha = latency + device.messageLatency;
  cost.beta = std::isfinite(bandwidth) && bandwidth > 0 ? 1 / bandwidth : 0;
  cost.gamma = device.reduceRate > 0 ? 1 / device.reduceRate : 0;
  cost.onePort = device.sendPorts == 1;
  return cost;
}

std::string joinedFormNames() {
  std::string out;
  for (std::string_view name : sim::closedFormNames())
    out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

Row analyticRow(const Plan& plan, std::uint64_t bytes, const sim::AlphaBetaGamma& cost) {
  const std::optional<double> seconds =
      sim::closedFormSeconds(plan.libraryName, plan.algorithm.nranks, bytes, cost);
  if (!seconds) {
    throw OptionError(fmt::format(
        "--analytic: no closed form for '{}' on {} ranks (forms exist for {}; the halving/"
        "doubling and binomial broadcast forms need a power of two); drop --analytic to run "
        "the event simulation",
        plan.libraryName, plan.algorithm.nranks, joinedFormNames()));
  }
  Row row;
  row.bytes = bytes;
  row.seconds = *seconds;
  row.algbw = *seconds > 0 ? static_cast<double>(bytes) / *seconds : 0;
  const std::optional<perf::Collective> collective =
      sim::benchCollective(plan.algorithm.collective);
  row.busbw =
      row.algbw * (collective ? perf::busBandwidthFactor(*collective, plan.algorithm.nranks) : 1);
  return row;
}

// nccl-tests' time format: fewer decimals for longer times.
std::string formatMicroseconds(double us) {
  if (us >= 10000) return fmt::format("{:.0f}", us);
  if (us >= 100) return fmt::format("{:.1f}", us);
  return fmt::format("{:.2f}", us);
}

std::string tableTitle(const Plan& plan, const topology::Topology& topology,
                       const SimulateArgs& args, const std::optional<sim::AlphaBetaGamma>& cost) {
  const ir::Algorithm& a = plan.algorithm;
  std::string title =
      fmt::format("# chorus simulate: {} ({}, {} ranks, {}) on {} ({} node{}, {} devices)", a.name,
                  collectiveLabel(a), a.nranks, ir::protocolName(a.protocol), topology.name,
                  topology.nodes, topology.nodes == 1 ? "" : "s", topology.ranks());
  if (cost) {
    title += fmt::format("; analytic: α {:.3f} us, 1/β {:.2f} GB/s, 1/γ {}", cost->alpha * 1e6,
                         cost->beta > 0 ? 1e-9 / cost->beta : 0.0,
                         cost->gamma > 0 ? fmt::format("{:.2f} GB/s", 1e-9 / cost->gamma)
                                         : std::string("unlimited"));
  } else if (ir::hasOneSidedOps(a)) {
    title += "; one-sided plan: each step moves its whole chunks (no FIFO slots)";
  } else if (args.noTiling) {
    title += "; tiling off";
  } else {
    title += fmt::format("; {} slots of {}", args.slots,
                         formatSize(args.slotBytes.empty() ? sim::SimOptions{}.slotBytes
                                                           : parseSize(args.slotBytes)));
  }
  return title + "\n";
}

std::string tableHeader() {
  return fmt::format("# {:>10}  {:>12}  {:>10}  {:>11}  {:>11}  {:>6}  {:>10}  {:>9}\n", "size",
                     "count", "time", "algbw", "busbw", "tiles", "events", "sim") +
         fmt::format("# {:>10}  {:>12}  {:>10}  {:>11}  {:>11}  {:>6}  {:>10}  {:>9}\n", "(B)",
                     "(elements)", "(us)", "(GB/s)", "(GB/s)", "", "", "(ms)");
}

std::string tableRow(const Row& row) {
  std::string out =
      fmt::format("  {:>10}  {:>12}  {:>10}  {:>11.2f}  {:>11.2f}", row.bytes, row.count,
                  formatMicroseconds(row.seconds * 1e6), row.algbw * 1e-9, row.busbw * 1e-9);
  if (row.result) {
    out += fmt::format("  {:>6}  {:>10}  {:>9.2f}\n", row.result->tiles, row.result->events,
                       row.result->simSeconds * 1e3);
  } else {
    out += fmt::format("  {:>6}  {:>10}  {:>9}\n", "-", "-", "-");
  }
  return out;
}

std::string linksTable(const Row& row, int limit) {
  const std::vector<sim::LinkUse>& links = row.result->links;
  const std::size_t shown = std::min(links.size(), static_cast<std::size_t>(limit));
  std::string out = fmt::format("# busiest links at {} ({} of {} carried data):\n",
                                formatSize(row.bytes), shown, links.size());
  if (shown == 0) return out;
  out += fmt::format("# {:>12}  {:>10}  {:>6}  {}\n", "bytes", "busy(us)", "util", "resource");
  for (std::size_t i = 0; i < shown; ++i) {
    const sim::LinkUse& link = links[i];
    out += fmt::format("  {:>12.0f}  {:>10}  {:>5.1f}%  {}\n", link.bytes,
                       formatMicroseconds(link.busy * 1e6), link.utilization * 100, link.name);
  }
  return out;
}

std::string criticalPathText(const Row& row) {
  const std::vector<sim::StepRecord>& path = row.result->criticalPath;
  std::string out =
      fmt::format("# critical path at {} ({} steps):\n", formatSize(row.bytes), path.size());
  out += fmt::format("# {:>10}  {:>10}  {:>4}  {:>3}  {:>4}  {:>4}  {:<18}  {:>4}  {:>10}  {}\n",
                     "start(us)", "end(us)", "rank", "tb", "step", "tile", "op", "peer", "bytes",
                     "waited for");
  for (const sim::StepRecord& step : path) {
    out += fmt::format(
        "  {:>10.3f}  {:>10.3f}  {:>4}  {:>3}  {:>4}  {:>4}  {:<18}  {:>4}  {:>10}  {}\n",
        step.start * 1e6, step.end * 1e6, step.rank, step.tb, step.step, step.tile,
        ir::opName(step.op), step.peer, step.bytes, step.waitedFor);
  }
  return out;
}

nlohmann::json rowJson(const Plan& plan, const Row& row, int links) {
  const ir::Algorithm& a = plan.algorithm;
  nlohmann::json out = {{"algorithm", a.name},    {"collective", collectiveLabel(a)},
                        {"ranks", a.nranks},      {"size", row.bytes},
                        {"count", row.count},     {"seconds", row.seconds},
                        {"algbw", row.algbw},     {"busbw", row.busbw},
                        {"analytic", !row.result}};
  if (!row.result) return out;
  const sim::SimResult& r = *row.result;
  out["tiles"] = r.tiles;
  out["tiles_simulated"] = r.tilesSimulated;
  out["extrapolated"] = r.extrapolated;
  out["steps"] = r.stepsExecuted;
  out["events"] = r.events;
  out["sim_seconds"] = r.simSeconds;
  nlohmann::json linkArray = nlohmann::json::array();
  const std::size_t shown = std::min(r.links.size(), static_cast<std::size_t>(links));
  for (std::size_t i = 0; i < shown; ++i) {
    linkArray.push_back({{"name", r.links[i].name},
                         {"bytes", r.links[i].bytes},
                         {"busy", r.links[i].busy},
                         {"utilization", r.links[i].utilization}});
  }
  out["links"] = std::move(linkArray);
  if (!r.criticalPath.empty()) {
    nlohmann::json path = nlohmann::json::array();
    for (const sim::StepRecord& step : r.criticalPath) {
      path.push_back({{"rank", step.rank},
                      {"tb", step.tb},
                      {"step", step.step},
                      {"tile", step.tile},
                      {"op", ir::opName(step.op)},
                      {"peer", step.peer},
                      {"bytes", step.bytes},
                      {"ready", step.ready},
                      {"start", step.start},
                      {"end", step.end},
                      {"waited_for", step.waitedFor}});
    }
    out["critical_path"] = std::move(path);
  }
  return out;
}

void checkArgs(const SimulateArgs& args, std::size_t sizes) {
  if (args.slots < 1) throw OptionError(fmt::format("--slots {} must be at least 1", args.slots));
  if (!args.slotBytes.empty() && parseSize(args.slotBytes) == 0)
    throw OptionError("--slot-bytes must be at least 1");
  if (args.links < -1) throw OptionError(fmt::format("--links {} must be at least 0", args.links));
  if (sizes > 1 && args.criticalPath)
    throw OptionError("--critical-path needs a single size: use --bytes SIZE instead of -b/-e");
  if (sizes > 1 && !args.tracePath.empty())
    throw OptionError("--trace needs a single size: use --bytes SIZE instead of -b/-e");
  if (args.analytic && (args.criticalPath || !args.tracePath.empty()))
    throw OptionError(
        "--critical-path and --trace come from the event simulation; drop "
        "--analytic");
}

ExitCode runSimulate(const SimulateArgs& args) {
  const std::vector<std::uint64_t> sizes = requestedSizes(args);
  checkArgs(args, sizes.size());
  const topology::Topology topology =
      topology::loadTopology(args.topology, args.shape.nodes > 0 ? args.shape.nodes : 0);
  topology::Fabric fabric(topology);
  const std::vector<Plan> plans = loadPlans(args, topology);

  sim::SimOptions options;
  options.elementSize = kElementSize;
  options.slots = args.slots;
  if (!args.slotBytes.empty()) options.slotBytes = parseSize(args.slotBytes);
  options.tiling = !args.noTiling;
  options.extrapolate = !args.everyTile;
  options.criticalPath = args.criticalPath;
  options.trace = !args.tracePath.empty();

  const int tableLinks = args.links >= 0 ? args.links : sizes.size() == 1 ? kDefaultLinksSingle : 0;
  const int jsonLinks = args.links >= 0 ? args.links : kDefaultLinksSingle;
  const bool jsonToStdout = args.json && (args.jsonPath.empty() || args.jsonPath == "-");
  nlohmann::json jsonRows = nlohmann::json::array();

  for (const Plan& plan : plans) {
    const ir::Algorithm& algorithm = plan.algorithm;
    std::optional<sim::AlphaBetaGamma> cost;
    if (args.analytic) {
      if (plan.libraryName.empty())
        throw OptionError("--analytic needs a library algorithm name, not a plan file");
      if (!plan.defaultParameters)
        throw OptionError("--analytic models the default parameters; drop --set/--instances");
      if (algorithm.nranks > fabric.ranks()) {
        throw OptionError(fmt::format("'{}' has {} ranks but topology '{}' has {} devices",
                                      algorithm.name, algorithm.nranks, topology.name,
                                      fabric.ranks()));
      }
      cost = topologyCost(fabric, algorithm.nranks);
      analyticRow(plan, sizes.front(), *cost);  // no form: fail before printing anything
    }
    const std::optional<perf::Collective> collective = sim::benchCollective(algorithm.collective);
    PendingVerification verification(plan);
    bool titled = false;
    for (const std::uint64_t requested : sizes) {
      // nccl-tests rounds the size to whole elements per rank; simulate exactly that size.
      std::uint64_t bytes = requested;
      std::size_t count = std::max<std::uint64_t>(1, requested / kElementSize);
      if (collective) {
        const perf::CollectiveShape shape =
            perf::shapeFor(*collective, requested, kElementSize, algorithm.nranks);
        bytes = shape.bytes;
        count = shape.elements;
      }
      Row row;
      if (cost) {
        row = analyticRow(plan, bytes, *cost);
      } else {
        options.bytes = bytes;
        sim::SimResult result;
        try {
          result = sim::simulate(algorithm, fabric, options);
        } catch (const std::exception&) {
          verification.wait();  // a plan that fails verification says so first
          throw;
        }
        verification.wait();  // before anything about the plan is written, the trace too
        row.bytes = bytes;
        row.seconds = result.seconds;
        row.algbw = result.algbw;
        row.busbw = result.busbw;
        if (options.trace) writeTextOutput(args.tracePath, sim::chromeTraceJson(algorithm, result));
        row.result = std::move(result);
      }
      row.count = count;
      if (!jsonToStdout && !titled) {
        writeTextOutput("-", tableTitle(plan, topology, args, cost) + "#\n" + tableHeader());
        titled = true;
      }
      if (!jsonToStdout) {
        std::string text = tableRow(row);
        if (row.result && sizes.size() > 1 && tableLinks > 0) text += linksTable(row, tableLinks);
        writeTextOutput("-", text);
      }
      if (args.json) jsonRows.push_back(rowJson(plan, row, jsonLinks));
      if (!jsonToStdout && sizes.size() == 1 && row.result) {
        std::string text;
        if (tableLinks > 0) text += "#\n" + linksTable(row, tableLinks);
        if (args.criticalPath) text += "#\n" + criticalPathText(row);
        writeTextOutput("-", text);
      }
    }
  }

  if (args.json) {
    const nlohmann::json document = {
        {"topology", topology.name},   {"nodes", topology.nodes},
        {"devices", topology.ranks()}, {"analytic", args.analytic},
        {"tiling", !args.noTiling},    {"every_tile", args.everyTile},
        {"slots", options.slots},      {"slot_bytes", options.slotBytes},
        {"rows", std::move(jsonRows)},
    };
    writeTextOutput(jsonToStdout ? "-" : args.jsonPath, document.dump(2) + "\n");
  }
  return ExitCode::ok;
}

}  // namespace

Command addSimulateCommand(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "simulate",
      "Predict the time of a plan file or library algorithm on a topology model (event-driven "
      "simulation, or the closed-form α-β-γ model with --analytic)");
  auto args = std::make_shared<SimulateArgs>();
  command
      ->add_option("target", args->target,
                   "Plan file (MSCCL XML, JSON, text; '-' = stdin) or algorithm name")
      ->required();
  command
      ->add_option("--topology", args->topology,
                   "Preset name (see 'chorus topology list') or topology JSON file")
      ->required();
  addShapeOptions(*command, args->shape);
  command->get_option("--nodes")->description(
      "Nodes of the topology to compose (and of a node-shaped algorithm); default: the "
      "topology's own");
  command->add_option("--protocol", args->protocol, "Protocol: simple, ll or ll128")
      ->check(CLI::IsMember({"simple", "ll", "ll128"}, CLI::ignore_case))
      ->capture_default_str();
  command->add_option("--bytes", args->bytes,
                      "One size (nccl-tests' size): 8, 64K, 1M, 1G; default 1M");
  command->add_option("-b,--minbytes", args->minBytes, "Smallest size of a sweep");
  command->add_option("-e,--maxbytes", args->maxBytes, "Largest size of a sweep");
  command->add_option("-f,--stepfactor", args->factor, "Multiply the size by this each step")
      ->capture_default_str();
  command->add_option("--slots", args->slots, "FIFO slots per connection")->capture_default_str();
  command->add_option("--slot-bytes", args->slotBytes, "Bytes per FIFO slot (default 256K)");
  command->add_flag("--no-tiling", args->noTiling,
                    "One message per chunk, unbounded FIFOs (the closed-form model)");
  command->add_flag("--every-tile", args->everyTile,
                    "Simulate every tile, not only those until the tiles' period repeats (the "
                    "steady-state extrapolation, docs/simulator.md)");
  command->add_flag("--analytic", args->analytic,
                    "Closed-form α-β-γ time with α, β, γ taken from the topology");
  command->add_flag("--critical-path", args->criticalPath,
                    "Print the chain of steps that decided the time (single size)");
  command
      ->add_option("--trace", args->tracePath,
                   "Write a Chrome trace (chrome://tracing, Perfetto) to FILE (single size)")
      ->type_name("FILE");
  command
      ->add_option("--links", args->links,
                   "Print the N busiest links (default 5 for one size, 0 for a sweep)")
      ->type_name("N");
  CLI::Option* json =
      command
          ->add_option("--json", args->jsonPath,
                       "Write {topology, ..., rows: [{size, seconds, algbw, busbw, tiles, steps, "
                       "events, sim_seconds, links, critical_path}]} to FILE ('-' or no value = "
                       "standard output, instead of the table)")
          ->expected(0, 1)
          ->type_name("[FILE]");
  return [args, json]() {
    args->json = json->count() > 0;
    return runSimulate(*args);
  };
}

}  // namespace chorus::cli
