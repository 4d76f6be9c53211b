// `chorus synth ...`: algorithm synthesis. A subcommand group: each entry of kSynthSubcommands
// adds one subcommand to `chorus synth`. Another subcommand (e.g. `synth reduction`) lives in its
// own file: declare its adder next to addSynthTreesCommand below and list it in
// kSynthSubcommands. This file holds `synth trees`: MXNet's topology-aware trees (MXNet trees)
// from a topology or a link matrix, their weights and link usage, MXNet's single-/multi-tree
// switch by array size (MXNET_KVSTORE_TREE_ARRAY_BOUND), and the single- and multi-tree
// AllReduce programs as MSCCL XML (--emit DIR, each with the size range the switch gives it)
// that `chorus run` executes and CHORUS_ALGO_DIR selects by size.
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli.h"
#include "ir/formats.h"
#include "msccl_options.h"
#include "support/error.h"
#include "support/size.h"
#include "synth/link_matrix.h"
#include "synth/tree_allreduce.h"
#include "synth/trees.h"
#include "topology/presets.h"

namespace chorus::cli {

// Adds `synth trees` to the `synth` group.
Command addSynthTreesCommand(CLI::App& synth);
// Adds `synth reduction` (cmd_synth_reduction.cpp).
Command addSynthReductionCommand(CLI::App& synth);

namespace {

using SynthSubcommandAdder = Command (*)(CLI::App& synth);

// The subcommands of `chorus synth`, in help order.
constexpr SynthSubcommandAdder kSynthSubcommands[] = {
    &addSynthTreesCommand,
    &addSynthReductionCommand,
};

struct TreesArgs {
  std::string topology;
  std::string matrix;
  int nodes = 0;
  double penalty = synth::TreeOptions{}.penalty;
  // MXNet's trees by default (MXNet trees reproduced as published); best is opt-in.
  std::string strategy = "mxnet";
  std::string prefer = "usage";
  std::string emitDir;
  int pipeline = 1;
  std::uint64_t arrayBound = synth::kMxnetTreeArrayBound;
  bool noPcieRule = false;
  bool backtrack = false;
  bool json = false;
  ir::MscclWriteOptions xml;
};

// Plan size ranges assume float32 elements, the type of MXNet's sweep (MXNet trees Figure 7).
constexpr std::uint64_t kElementBytes = 4;

// MXNet's switch by array size for these GPUs (synth::chooseTreeMode) as plan byte ranges.
struct ModeSwitch {
  std::uint64_t firstMultiElements = 0;  // the fewest elements that go multi-tree
  synth::TreeModeBytes single;
  synth::TreeModeBytes multi;
};

ModeSwitch describeModeSwitch(int ranks, std::uint64_t bound) {
  ModeSwitch mode;
  mode.single = synth::treeModeBytes(synth::TreeMode::single, ranks, bound, kElementBytes);
  mode.multi = synth::treeModeBytes(synth::TreeMode::multi, ranks, bound, kElementBytes);
  mode.firstMultiElements = mode.multi.minBytes / kElementBytes;
  return mode;
}

// A weight for the text report: 6 significant digits, so 1/n sums print as 49, not 48.99999...
std::string formatNumber(double value) {
  return fmt::format("{:.6g}", value);
}

// What the PCIe rule did, for the report; empty when it changed nothing.
std::string applyPcieRuleReport(synth::LinkMatrix& weights) {
  const bool hasPcie =
      std::find(weights.weights.begin(), weights.weights.end(), 1.0) != weights.weights.end();
  if (!hasPcie) return {};
  const bool connected = synth::isNvlinkConnected(weights);
  synth::applyPcieRule(weights);
  return connected ? "NVLink (weight > 1) connects every GPU, so PCIe links (1) become 0"
                   : fmt::format(
                         "NVLink (weight > 1) does not connect every GPU, so PCIe links "
                         "(1) become 1/{} (allowed, discouraged)",
                         weights.size);
}

struct TreesSource {
  std::string name;  // the preset or file
  synth::LinkMatrix classes;
};

TreesSource loadSource(const TreesArgs& args) {
  if (args.topology.empty() == args.matrix.empty()) {
    throw OptionError(
        "give the links with exactly one of --topology PRESET|FILE (e.g. dgx1) or --matrix FILE "
        "(one row of link weights per GPU)");
  }
  if (args.nodes != 0 && args.topology.empty())
    throw OptionError("--nodes composes a --topology; a --matrix already lists every GPU");
  if (args.nodes < 0) throw OptionError("--nodes must be at least 1");
  if (!args.topology.empty()) {
    const topology::Topology topology = topology::loadTopology(args.topology, args.nodes);
    synth::LinkMatrix classes = synth::linkMatrixFromTopology(topology);
    synth::validateLinkMatrix(classes, fmt::format("topology '{}'", args.topology));
    return {args.topology, std::move(classes)};
  }
  return {args.matrix == "-" ? "<stdin>" : args.matrix, synth::readLinkMatrixFile(args.matrix)};
}

std::string formatUsage(const std::vector<std::vector<int>>& usage) {
  synth::LinkMatrix matrix = synth::makeLinkMatrix(static_cast<int>(usage.size()));
  for (std::size_t a = 0; a < usage.size(); ++a)
    for (std::size_t b = 0; b < usage.size(); ++b)
      matrix.at(static_cast<int>(a), static_cast<int>(b)) = usage[a][b];
  return synth::formatLinkMatrix(matrix);
}

nlohmann::json treeJson(const synth::Tree& tree, double weight) {
  nlohmann::json edges = nlohmann::json::array();
  for (const synth::TreeEdge& edge : synth::listTreeEdges(tree))
    edges.push_back({edge.level, edge.parent, edge.child});
  return {{"root", tree.root},
          {"topo", tree.topo},
          {"scan", tree.scan},
          {"weight", weight},
          {"method", std::string(synth::treeMethodName(tree.method))},
          {"edges", std::move(edges)}};
}

// Writes the single-tree (tree 0) and multi-tree AllReduce as MSCCL XML into `dir`, each with
// the plan size range MXNet's switch gives it.
std::vector<std::string> emitPrograms(const synth::TreeSet& set, const TreesArgs& args) {
  std::error_code error;
  std::filesystem::create_directories(args.emitDir, error);
  if (error) {
    throw UserError(
        fmt::format("cannot create --emit directory '{}': {}", args.emitDir, error.message()));
  }
  synth::TreeAllReduceOptions options;
  options.pipeline = args.pipeline;
  const int ranks = set.weights.size;
  const ModeSwitch mode = describeModeSwitch(ranks, args.arrayBound);
  struct Emitted {
    std::string file;
    std::unique_ptr<lang::Program> program;
    synth::TreeModeBytes range;
  };
  const std::vector<Emitted> programs = [&] {
    std::vector<Emitted> list;
    list.push_back(
        {"allreduce_synth_tree.xml",
         synth::buildSingleTreeAllReduce(set.trees.front(), ranks, options, "allreduce.synth-tree"),
         mode.single});
    list.push_back(
        {"allreduce_synth_multitree.xml",
         synth::buildMultiTreeAllReduce(set.trees, ranks, options, "allreduce.synth-multitree"),
         mode.multi});
    return list;
  }();
  std::vector<std::string> written;
  for (const auto& [file, program, range] : programs) {
    compiler::CompileOptions compile;
    compile.minBytes = range.minBytes;
    compile.maxBytes = range.maxBytes;
    const ir::Algorithm algorithm = synth::compileTreeProgram(*program, compile);
    const std::string path = (std::filesystem::path(args.emitDir) / file).string();
    writeTextOutput(path, ir::writeAlgorithm(algorithm, ir::Format::xml, args.xml));
    written.push_back(path);
  }
  return written;
}

void printText(const TreesSource& source, const std::string& pcieRule, const synth::TreeSet& set,
               const synth::TreeSet& mxnet, const synth::TreeSet& best, const TreesArgs& args) {
  const int ranks = set.weights.size;
  fmt::print("# chorus synth trees: {} ({} GPUs), strategy {}{}, link-usage penalty {}\n",
             source.name, ranks, synth::treeStrategyName(set.strategy),
             set.strategy == synth::TreeStrategy::best ? fmt::format(" (prefer {})", args.prefer)
                                                       : std::string(),
             args.penalty);
  fmt::print("# link weights{}\n", args.topology.empty()
                                       ? ""
                                       : " (MXNet classes: 3 = two NVLinks, 2 = one NVLink, "
                                         "1 = PCIe or slower)");
  fmt::print("{}", synth::formatLinkMatrix(source.classes));
  if (!pcieRule.empty()) fmt::print("# PCIe rule: {}\n", pcieRule);
  fmt::print("\n");
  for (std::size_t r = 0; r < set.trees.size(); ++r) {
    const synth::Tree& tree = set.trees[r];
    fmt::print("tree {}: root {}, weight {}, {}\n", r, tree.root, formatNumber(set.treeWeights[r]),
               synth::treeMethodName(tree.method));
    std::string text = synth::formatTree(tree);
    std::string indented;
    for (std::size_t start = 0; start < text.size();) {
      const std::size_t end = text.find('\n', start);
      indented += "  " + text.substr(start, end - start) + "\n";
      start = end + 1;
    }
    fmt::print("{}", indented);
  }
  fmt::print("\ntotal weight (sum of link weights, no penalties): {}\n",
             formatNumber(set.totalWeight));
  fmt::print("link usage (trees using each link):\n{}", formatUsage(set.usage));
  fmt::print("most-used link: {}-{}, used by {} trees\n", set.mostUsed.a, set.mostUsed.b,
             set.mostUsed.count);
  fmt::print(
      "strategies: mxnet total weight {}, max link usage {}; best total weight {}, max "
      "link usage {}\n",
      formatNumber(mxnet.totalWeight), mxnet.mostUsed.count, formatNumber(best.totalWeight),
      best.mostUsed.count);
  const ModeSwitch mode = describeModeSwitch(ranks, args.arrayBound);
  fmt::print(
      "tree mode by array size (MXNET_KVSTORE_TREE_ARRAY_BOUND = {} elements): single-tree "
      "(tree 0) below {} elements, multi-tree ({} trees) from {}; float32 plan ranges: "
      "single-tree {}-{}, multi-tree {}-max\n",
      args.arrayBound, mode.firstMultiElements, set.trees.size(), mode.firstMultiElements,
      formatSize(mode.single.minBytes), formatSize(mode.single.maxBytes),
      formatSize(mode.multi.minBytes));
}

ExitCode runTrees(const TreesArgs& args) {
  if (args.pipeline < 1) throw OptionError("--pipeline must be at least 1");
  TreesSource source = loadSource(args);
  synth::LinkMatrix weights = source.classes;
  const std::string pcieRule = args.noPcieRule ? std::string() : applyPcieRuleReport(weights);
  synth::TreeOptions options;
  options.strategy = synth::parseTreeStrategy(args.strategy);
  options.prefer = synth::parseTreePreference(args.prefer);
  options.penalty = args.penalty;
  options.backtrackOnly = args.backtrack;
  synth::TreeOptions mxnetOptions = options;
  mxnetOptions.strategy = synth::TreeStrategy::mxnet;
  synth::TreeOptions bestOptions = options;
  bestOptions.strategy = synth::TreeStrategy::best;
  const synth::TreeSet mxnet = synth::computeTrees(weights, mxnetOptions);
  const synth::TreeSet best = synth::computeTrees(weights, bestOptions);
  const synth::TreeSet& set = options.strategy == synth::TreeStrategy::mxnet ? mxnet : best;

  std::vector<std::string> written;
  if (!args.emitDir.empty()) written = emitPrograms(set, args);

  if (args.json) {
    const ModeSwitch mode = describeModeSwitch(weights.size, args.arrayBound);
    nlohmann::json trees = nlohmann::json::array();
    for (std::size_t r = 0; r < set.trees.size(); ++r)
      trees.push_back(treeJson(set.trees[r], set.treeWeights[r]));
    nlohmann::json matrix = nlohmann::json::array();
    for (int a = 0; a < weights.size; ++a) {
      nlohmann::json row = nlohmann::json::array();
      for (int b = 0; b < weights.size; ++b)
        row.push_back(weights.at(a, b));
      matrix.push_back(std::move(row));
    }
    const nlohmann::json document = {
        {"source", source.name},
        {"ranks", weights.size},
        {"strategy", std::string(synth::treeStrategyName(set.strategy))},
        {"penalty", args.penalty},
        {"prefer", args.prefer},
        {"weights", std::move(matrix)},
        {"trees", std::move(trees)},
        {"link_usage", set.usage},
        {"most_used_link",
         {{"a", set.mostUsed.a}, {"b", set.mostUsed.b}, {"count", set.mostUsed.count}}},
        {"total_weight", set.totalWeight},
        {"strategies",
         {{"mxnet",
           {{"total_weight", mxnet.totalWeight}, {"max_link_usage", mxnet.mostUsed.count}}},
          {"best", {{"total_weight", best.totalWeight}, {"max_link_usage", best.mostUsed.count}}}}},
        {"tree_mode",
         {{"array_bound", args.arrayBound},
          {"first_multi_tree_elements", mode.firstMultiElements},
          {"element_bytes", kElementBytes},
          {"single_tree_bytes", {mode.single.minBytes, mode.single.maxBytes}},
          {"multi_tree_bytes", {mode.multi.minBytes, mode.multi.maxBytes}}}},
        {"emitted", written},
    };
    fmt::print("{}\n", document.dump(2));
    return ExitCode::ok;
  }
  printText(source, pcieRule, set, mxnet, best, args);
  for (const std::string& path : written)
    fmt::print("wrote {}\n", path);
  return ExitCode::ok;
}

}  // namespace

Command addSynthTreesCommand(CLI::App& synth) {
  CLI::App* command = synth.add_subcommand(
      "trees",
      "Topology-aware binary trees (MXNet's Kernighan-Lin trees, MXNet trees): one per root GPU, "
      "their weights and link usage; --emit writes tree AllReduce programs");
  auto args = std::make_shared<TreesArgs>();
  command
      ->add_option("--topology", args->topology,
                   "Preset name (see 'chorus topology list') or topology JSON file")
      ->type_name("T");
  command->add_option("--nodes", args->nodes,
                      "Nodes of the topology to compose (default: the preset's 1 or the file's)");
  command
      ->add_option("--matrix", args->matrix,
                   "Link-weight matrix file: JSON [[...], ...] or text rows ('-' = stdin)")
      ->type_name("FILE");
  command
      ->add_option("--penalty", args->penalty,
                   "Factor applied to a link's weight each time a tree uses it, in (0, 1]")
      ->capture_default_str();
  command
      ->add_option("--strategy", args->strategy,
                   "mxnet (default): MXNet's trees exactly; best: search for heavier trees that "
                   "reuse links less (never worse than mxnet on either)")
      ->check(CLI::IsMember({"mxnet", "best"}))
      ->capture_default_str();
  command
      ->add_option("--prefer", args->prefer,
                   "Strategy best: rank by lowest max link usage (usage) or highest total "
                   "weight (weight) first")
      ->check(CLI::IsMember({"usage", "weight"}))
      ->capture_default_str();
  command
      ->add_option("--emit", args->emitDir,
                   "Write the single-tree and multi-tree AllReduce as MSCCL XML into DIR")
      ->type_name("DIR");
  addMscclWriteOptions(*command, args->xml);
  command
      ->add_option("--array-bound", args->arrayBound,
                   "MXNET_KVSTORE_TREE_ARRAY_BOUND: arrays of more elements (and at least 2 per "
                   "GPU) use one tree per GPU, smaller ones tree 0; sets the emitted plans' "
                   "float32 size ranges")
      ->type_name("ELEMENTS")
      ->capture_default_str();
  command
      ->add_option("--pipeline", args->pipeline,
                   "Pieces per tree slice in the emitted programs (each its own message)")
      ->capture_default_str();
  command->add_flag("--no-pcie-rule", args->noPcieRule,
                    "Use the weights as given (by default weight-1 PCIe links become 0 when "
                    "NVLink connects every GPU, else 1/n, as MXNet does)");
  command->add_flag("--backtrack", args->backtrack,
                    "Skip Kernighan-Lin and search exhaustively (MXNET_KVSTORE_TREE_BACKTRACK=1)");
  command->add_flag("--json", args->json,
                    "Print {trees: [{root, topo, weight, ...}], link_usage: [[...]], ...}");
  return [args]() { return runTrees(*args); };
}

Command addSynthCommand(CLI::App& app) {
  CLI::App* synth =
      app.add_subcommand("synth", "Synthesize algorithms for a topology (see the subcommands)");
  synth->require_subcommand(1);
  std::vector<std::pair<CLI::App*, Command>> subcommands;
  for (const SynthSubcommandAdder add : kSynthSubcommands) {
    const std::size_t before = synth->get_subcommands([](CLI::App*) { return true; }).size();
    Command command = add(*synth);
    const std::vector<CLI::App*> all = synth->get_subcommands([](CLI::App*) { return true; });
    CHORUS_INTERNAL_ASSERT(all.size() == before + 1, "a synth adder adds exactly one subcommand");
    subcommands.emplace_back(all.back(), std::move(command));
  }
  return [subcommands]() {
    for (const auto& [subcommand, command] : subcommands)
      if (subcommand->parsed()) return command();
    return ExitCode::usage;
  };
}

}  // namespace chorus::cli
