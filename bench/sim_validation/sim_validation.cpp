// Simulator validation against published measurements (issue 18; results in docs/simulator.md):
// for every point of data/validation/published.json (a large AllReduce, AllGather, ReduceScatter
// or AllToAll that someone measured with nccl-tests on multi-node DGX A100 / DGX H100 class
// clusters), build chorus's closest library algorithm on the matching preset with the point's
// node count, simulate it at the point's size and report the busbw error per point, its median
// and its worst.
//
//   build/bench/bench_sim_validation [--data data/validation/published.json] [--max-nodes N]
//                                    [--channels C] [--json out.json] [--check pinned.json]
//
// Algorithm: NCCL's measured algorithm picks chorus's closest one.
//   1. NCCL ring (and "unknown": NCCL's default for large calls beyond 2 nodes is ring)
//      -> allreduce.ring / allgather.ring / reducescatter.ring with channels = C, by default the
//      preset's NICs per node (8 on dgx-a100 and dgx-h100): NCCL runs at least one ring channel
//      per NIC so that every rail carries a ring; chorus's rail-aware rings use one per NIC.
//   2. NCCL tree -> allreduce.double-binary-tree (NCCL's double binary tree).
//   3. AllToAll -> alltoall.direct: NCCL's AllToAll posts every peer's send and receive at once
//      (grouped ncclSend/ncclRecv), which is what alltoall.direct does.
// Points whose NCCL algorithm reduces in the network (NVLS, NVLSTree, CollNet / SHARP) are
// rejected: chorus does not model in-switch reduction.
//
// A benchmark: it asserts nothing about the errors unless --check names the pins
// (data/validation/pinned.json), which the test sim.validation_rows does. Bad input (a missing
// field, an unknown preset, a shape the preset does not have) is an error naming the point and the
// field.
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "chorus/error.h"
#include "perf/collective.h"
#include "sim/simulator.h"
#include "support/size.h"
#include "topology/presets.h"

namespace {

using namespace chorus;
using nlohmann::json;

struct Options {
  std::string data = CHORUS_VALIDATION_DATA;
  int maxNodes = 0;   // 0: every point; else points above this many nodes are listed, not run
  int channels = 0;   // 0: the preset's NICs per node
  std::string json;   // file for the JSON report; "-" for standard output
  std::string check;  // pinned predictions and error bounds (data/validation/pinned.json)
};

// One published measurement, as read from the JSON file.
struct Point {
  std::string id;
  std::string system;  // chorus preset
  int nodes = 0;
  int gpusPerNode = 0;
  int nics = 0;
  std::string collective;  // allreduce | allgather | reducescatter | alltoall
  std::string ncclAlgorithm;
  std::uint64_t bytes = 0;
  double measuredBusbw = 0;  // GB/s (converted from algbw when the source gives that)
  std::string measuredAs;    // "busbw" or "algbw"
};

struct Row {
  Point point;
  std::string algorithm;  // the chorus choice, with its parameters
  bool skipped = false;   // above --max-nodes
  double predictedBusbw = 0;
  double predictedUs = 0;
  double simSeconds = 0;  // wall time of the build and the simulation
  double error() const { return (predictedBusbw - point.measuredBusbw) / point.measuredBusbw; }
};

[[noreturn]] void badPoint(const std::string& where, const std::string& what) {
  throw OptionError(fmt::format("{}: {}", where, what));
}

const json& field(const json& object, const std::string& where, const char* name) {
  if (!object.is_object() || !object.contains(name))
    badPoint(where, fmt::format("missing field \"{}\"", name));
  return object.at(name);
}

std::string stringField(const json& object, const std::string& where, const char* name) {
  const json& value = field(object, where, name);
  if (!value.is_string() || value.get<std::string>().empty())
    badPoint(where, fmt::format("field \"{}\" must be a non-empty string", name));
  return value.get<std::string>();
}

std::int64_t integerField(const json& object, const std::string& where, const char* name) {
  const json& value = field(object, where, name);
  if (!value.is_number_integer() || value.get<std::int64_t>() <= 0)
    badPoint(where, fmt::format("field \"{}\" must be a positive integer", name));
  return value.get<std::int64_t>();
}

double numberField(const json& object, const std::string& where, const char* name) {
  const json& value = object.at(name);
  if (!value.is_number() || value.get<double>() <= 0)
    badPoint(where, fmt::format("field \"{}\" must be a positive number", name));
  return value.get<double>();
}

perf::Collective benchKind(const std::string& collective) {
  if (collective == "allreduce") return perf::Collective::allreduce;
  if (collective == "allgather") return perf::Collective::allgather;
  if (collective == "reducescatter") return perf::Collective::reducescatter;
  return perf::Collective::alltoall;
}

Point readPoint(const json& entry, std::size_t index) {
  Point p;
  std::string where = fmt::format("point {}", index);
  p.id = stringField(entry, where, "id");
  where = fmt::format("point {} (\"{}\")", index, p.id);
  p.system = stringField(entry, where, "system");
  p.nodes = static_cast<int>(integerField(entry, where, "nodes"));
  p.gpusPerNode = static_cast<int>(integerField(entry, where, "gpus_per_node"));
  p.nics = static_cast<int>(integerField(entry, where, "nics"));
  p.collective = stringField(entry, where, "collective");
  if (p.collective != "allreduce" && p.collective != "allgather" &&
      p.collective != "reducescatter" && p.collective != "alltoall")
    badPoint(where, fmt::format("field \"collective\" is \"{}\"; expected allreduce, allgather, "
                                "reducescatter or alltoall",
                                p.collective));
  p.ncclAlgorithm = stringField(entry, where, "nccl_algorithm");
  if (p.ncclAlgorithm != "ring" && p.ncclAlgorithm != "tree" && p.ncclAlgorithm != "unknown")
    badPoint(where, fmt::format("field \"nccl_algorithm\" is \"{}\"; expected ring, tree or "
                                "unknown (NVLS, NVLSTree and CollNet reduce in the network, which "
                                "chorus does not model: list such points under \"excluded\")",
                                p.ncclAlgorithm));
  if (p.ncclAlgorithm == "tree" && p.collective != "allreduce")
    badPoint(where, "field \"nccl_algorithm\" is \"tree\", which NCCL has for allreduce only");
  p.bytes = static_cast<std::uint64_t>(integerField(entry, where, "bytes"));
  const json& measured = field(entry, where, "measured");
  const std::string measuredWhere = where + " field \"measured\"";
  if (measured.is_object() && measured.contains("busbw_GBps")) {
    p.measuredBusbw = numberField(measured, measuredWhere, "busbw_GBps");
    p.measuredAs = "busbw";
  } else if (measured.is_object() && measured.contains("algbw_GBps")) {
    const double algbw = numberField(measured, measuredWhere, "algbw_GBps");
    p.measuredBusbw =
        algbw * perf::busBandwidthFactor(benchKind(p.collective), p.nodes * p.gpusPerNode);
    p.measuredAs = "algbw";
  } else {
    badPoint(measuredWhere, "needs \"busbw_GBps\" or \"algbw_GBps\"");
  }
  const json& source = field(entry, where, "source");
  const std::string sourceWhere = where + " field \"source\"";
  for (const char* name : {"locator", "quote"})
    stringField(source, sourceWhere, name);
  if (!source.contains("url") && !source.contains("citation"))
    badPoint(sourceWhere, "needs \"url\" or \"citation\"");
  stringField(source, sourceWhere, source.contains("url") ? "url" : "citation");
  return p;
}

// The chorus algorithm closest to the point's NCCL algorithm (the header's "Algorithm").
algorithms::BuildRequest closestAlgorithm(const Point& p, int channels) {
  algorithms::BuildRequest request;
  request.ranks = p.nodes * p.gpusPerNode;
  if (p.collective == "alltoall") {
    request.algorithm = "alltoall.direct";
  } else if (p.ncclAlgorithm == "tree") {
    request.algorithm = "allreduce.double-binary-tree";
  } else {
    // On the node shape, channel c's ring crosses nodes through GPU c - 1 and so its NIC
    // (algorithms/rail_rings.h): NCCL's one ring per channel, every rail busy.
    request.algorithm = p.collective + ".ring";
    request.params["channels"] = channels;
    request.ranks = 0;
    request.nodes = p.nodes;
    request.gpusPerNode = p.gpusPerNode;
  }
  return request;
}

std::string describe(const algorithms::BuildRequest& request) {
  std::string text = request.algorithm;
  if (!request.params.empty()) {
    text += "{";
    bool first = true;
    for (const auto& [name, value] : request.params) {
      text += fmt::format("{}{}={}", first ? "" : ",", name, value);
      first = false;
    }
    text += "}";
  }
  return text;
}

// A point checked against its preset, with the chorus algorithm that predicts it.
struct Plan {
  Point point;
  topology::Topology node;
  algorithms::BuildRequest request;
};

// Checks the point's shape against its preset (before anything is simulated, so bad input fails
// fast) and picks the closest algorithm.
Plan resolve(const Point& p, const Options& o) {
  const std::string where = fmt::format("point \"{}\"", p.id);
  Plan plan;
  plan.point = p;
  try {
    plan.node = topology::loadTopology(p.system);
  } catch (const UserError& e) {
    badPoint(where, fmt::format("field \"system\": {}", e.what()));
  }
  if (plan.node.node.devices != p.gpusPerNode)
    badPoint(where, fmt::format("field \"gpus_per_node\" is {} but preset {} has {} devices",
                                p.gpusPerNode, p.system, plan.node.node.devices));
  const int presetNics = static_cast<int>(plan.node.node.nics.size());
  if (presetNics != p.nics)
    badPoint(where, fmt::format("field \"nics\" is {} but preset {} has {} NICs per node", p.nics,
                                p.system, presetNics));
  plan.request = closestAlgorithm(p, o.channels > 0 ? o.channels : presetNics);
  return plan;
}

Row predict(const Plan& plan, const Options& o) {
  const Point& p = plan.point;
  Row row;
  row.point = p;
  row.algorithm = describe(plan.request);
  if (o.maxNodes > 0 && p.nodes > o.maxNodes) {
    row.skipped = true;
    return row;
  }
  const auto start = std::chrono::steady_clock::now();
  const ir::Algorithm algorithm = algorithms::compileAlgorithm(plan.request).algorithm;
  topology::Fabric fabric(topology::withNodes(plan.node, p.nodes));
  sim::SimOptions options;
  options.bytes = p.bytes;
  const sim::SimResult r = sim::simulate(algorithm, fabric, options);
  row.simSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  row.predictedBusbw = r.busbw / 1e9;
  row.predictedUs = r.seconds * 1e6;
  return row;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

void writeJson(const Options& o, const std::vector<Row>& rows, const std::vector<double>& errors) {
  json out;
  out["data"] = o.data;
  out["points"] = json::array();
  for (const Row& row : rows) {
    json entry = {{"id", row.point.id},
                  {"system", row.point.system},
                  {"nodes", row.point.nodes},
                  {"gpus_per_node", row.point.gpusPerNode},
                  {"collective", row.point.collective},
                  {"nccl_algorithm", row.point.ncclAlgorithm},
                  {"bytes", row.point.bytes},
                  {"chorus_algorithm", row.algorithm},
                  {"measured_busbw_GBps", row.point.measuredBusbw},
                  {"measured_as", row.point.measuredAs},
                  {"skipped", row.skipped}};
    if (!row.skipped) {
      entry["predicted_busbw_GBps"] = row.predictedBusbw;
      entry["predicted_time_us"] = row.predictedUs;
      entry["error"] = row.error();
      entry["sim_seconds"] = row.simSeconds;
    }
    out["points"].push_back(std::move(entry));
  }
  if (!errors.empty()) {
    out["median_abs_error"] = median(errors);
    out["max_abs_error"] = *std::max_element(errors.begin(), errors.end());
  }
  out["points_predicted"] = errors.size();
  if (o.json == "-") {
    fmt::print("{}\n", out.dump(2));
    return;
  }
  std::ofstream file(o.json);
  if (!file) throw OptionError(fmt::format("--json: cannot write {}", o.json));
  file << out.dump(2) << "\n";
}

// --check: every predicted point must match its pin in `path` within the file's relative
// tolerance (the pins are chorus's own earlier predictions: a regression pin of the model, not
// measurements), and each set's median |error| must stay within its bound. Prints the sets'
// medians; returns 1 naming every violation, else 0.
int checkPins(const std::string& path, const std::vector<Row>& rows) {
  std::ifstream file(path);
  if (!file) throw OptionError(fmt::format("--check: cannot read {}", path));
  json pins;
  try {
    pins = json::parse(file);
  } catch (const json::parse_error& e) {
    throw ParseError(fmt::format("{}: {}", path, e.what()));
  }
  const std::string where = path;
  const double tolerance = numberField(pins, where, "tolerance");
  const json& points = field(pins, where, "points");
  const json& bounds = field(pins, where, "median_abs_error_bounds");
  std::vector<std::string> violations;
  std::map<std::string, std::vector<double>> bySet;
  for (const Row& row : rows) {
    if (row.skipped) continue;
    const std::string id = row.point.id;
    if (!points.contains(id)) {
      violations.push_back(fmt::format("{}: no pin; add its prediction ({:.1f} GB/s) and its set",
                                       id, row.predictedBusbw));
      continue;
    }
    const std::string pinWhere = fmt::format("{}: points.\"{}\"", path, id);
    const double pinned = numberField(points[id], pinWhere, "predicted_busbw_GBps");
    const std::string set = stringField(points[id], pinWhere, "set");
    if (!bounds.contains(set))
      badPoint(pinWhere, fmt::format("set \"{}\" has no bound in median_abs_error_bounds", set));
    if (std::abs(row.predictedBusbw / pinned - 1) > tolerance)
      violations.push_back(fmt::format(
          "{}: predicted {:.2f} GB/s, pinned {:.2f} GB/s ({:+.2f}%, tolerance {:.2f}%); if the "
          "model change is meant, re-pin it and say so in the commit and docs/simulator.md",
          id, row.predictedBusbw, pinned, 100 * (row.predictedBusbw / pinned - 1),
          100 * tolerance));
    bySet[set].push_back(std::abs(row.error()));
  }
  for (const auto& [set, bound] : bounds.items()) {
    const auto it = bySet.find(set);
    if (it == bySet.end()) {
      fmt::print("# set {}: no points yet (median |error| bound {:.1f}%)\n", set,
                 100 * bound.get<double>());
      continue;
    }
    const double m = median(it->second);
    fmt::print("# set {}: {} points, median |error| {:.1f}% (bound {:.1f}%)\n", set,
               it->second.size(), 100 * m, 100 * bound.get<double>());
    if (m > bound.get<double>())
      violations.push_back(fmt::format("set {}: median |error| {:.1f}% exceeds its bound {:.1f}%",
                                       set, 100 * m, 100 * bound.get<double>()));
  }
  for (const std::string& v : violations)
    fmt::print(stderr, "sim_validation: check failed: {}\n", v);
  return violations.empty() ? 0 : 1;
}

int run(const Options& o) {
  std::ifstream file(o.data);
  if (!file) throw OptionError(fmt::format("--data: cannot read {}", o.data));
  json document;
  try {
    document = json::parse(file);
  } catch (const json::parse_error& e) {
    throw ParseError(fmt::format("{}: {}", o.data, e.what()));
  }
  if (!document.is_object() || !document.contains("points") || !document["points"].is_array())
    throw ParseError(fmt::format("{}: expected an object with a \"points\" array", o.data));
  std::vector<Plan> plans;
  for (std::size_t i = 0; i < document["points"].size(); ++i)
    plans.push_back(resolve(readPoint(document["points"][i], i), o));

  const bool table = o.json != "-";
  // The id column fits the longest id, so that every row lines up.
  std::size_t idWidth = 26;
  for (const Plan& plan : plans)
    idWidth = std::max(idWidth, plan.point.id.size());
  if (table) {
    fmt::print("# {} published points from {}; error = (predicted - measured) / measured busbw\n",
               plans.size(), o.data);
    fmt::print("# {:<{}} {:<9} {:>5} {:<13} {:<7} {:>7} {:<34} {:>9} {:>9} {:>8} {:>7}\n", "id",
               idWidth, "system", "nodes", "collective", "nccl", "size", "chorus algorithm",
               "meas GB/s", "pred GB/s", "error", "sim(s)");
  }
  std::vector<Row> rows;
  std::vector<double> errors;
  for (const Plan& plan : plans) {
    const Point& p = plan.point;
    Row row = predict(plan, o);
    if (table) {
      if (row.skipped)
        fmt::print("  {:<{}} {:<9} {:>5} {:<13} {:<7} {:>7} {:<34} {:>9.1f} {:>9} {:>8} {:>7}\n",
                   p.id, idWidth, p.system, p.nodes, p.collective, p.ncclAlgorithm,
                   formatSize(p.bytes), row.algorithm, p.measuredBusbw, "-", "skipped", "-");
      else
        fmt::print(
            "  {:<{}} {:<9} {:>5} {:<13} {:<7} {:>7} {:<34} {:>9.1f} {:>9.1f} {:>+7.1f}% "
            "{:>7.1f}\n",
            p.id, idWidth, p.system, p.nodes, p.collective, p.ncclAlgorithm, formatSize(p.bytes),
            row.algorithm, p.measuredBusbw, row.predictedBusbw, 100 * row.error(), row.simSeconds);
      std::fflush(stdout);
    }
    if (!row.skipped) errors.push_back(std::abs(row.error()));
    rows.push_back(std::move(row));
  }
  if (table) {
    if (errors.empty())
      fmt::print("# no point predicted (all above --max-nodes {})\n", o.maxNodes);
    else
      fmt::print("# {} of {} points predicted: median |error| {:.1f}%, max |error| {:.1f}%\n",
                 errors.size(), plans.size(), 100 * median(errors),
                 100 * *std::max_element(errors.begin(), errors.end()));
  }
  if (!o.json.empty()) writeJson(o, rows, errors);
  return o.check.empty() ? 0 : checkPins(o.check, rows);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Simulator busbw vs published nccl-tests measurements (issue 18)"};
  app.add_option("--data", o.data, "Published points (JSON)")->capture_default_str();
  app.add_option("--max-nodes", o.maxNodes,
                 "Simulate only points of at most this many nodes (0: all); the others are "
                 "listed as skipped")
      ->capture_default_str();
  app.add_option("--channels", o.channels,
                 "Ring channels for NCCL ring points (0: the preset's NICs per node)")
      ->capture_default_str();
  app.add_option("--json", o.json, "Also write the report as JSON to this file ('-': stdout only)");
  app.add_option("--check", o.check,
                 "Fail unless every prediction matches its pin in this file (a regression pin "
                 "of the model) and each set's median |error| is within its bound");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    fmt::print(stderr, "sim_validation: error: {}\n", e.what());
    return 1;
  }
}
