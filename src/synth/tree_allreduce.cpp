// Tree AllReduce programs from synthesized trees (MXNet trees; MXNet comm_tree.h CommDeviceTree).
//
// Algorithm, for a tree of depth d over the in-place buffer's chunks [first, first + pieces):
//   for each piece p:
//     1. reduce: for level = d .. 1, for each transfer (parent, child) of that level:
//        parent[p] += child[p]. A child's own children sit at deeper levels, so its partial sum
//        is complete when it is read (describeTreeProblem guarantees it).
//     2. broadcast: for level = 1 .. d, for each transfer: child[p] = parent[p].
//   Single tree: one tree over chunks [0, pipeline). Multi-tree: tree i over chunks
//   [i·pipeline, (i+1)·pipeline), on channel i mod 32 when channelPerTree.
//   Which of the two runs is MXNet's switch by array size (chooseTreeMode): one tree up to
//   MXNET_KVSTORE_TREE_ARRAY_BOUND = 10^7 elements, one tree per GPU above it.
//
//      tree (d = 2)    reduce: level 2  0 <+ 1, 3 <+ 2     broadcast: level 1  0 => 3
//          0                   level 1  0 <+ 3                        level 2  0 => 1, 3 => 2
//        0   3
//       0 1 3 2
#include "synth/tree_allreduce.h"

#include <fmt/format.h>

#include <algorithm>

#include "algorithms/registry.h"
#include "support/error.h"

namespace chorus::synth {
namespace {

constexpr int kChannels = 32;  // MSCCL channels 0..31

void requireLowerable(const Tree& tree, int index, int ranks) {
  const std::string problem = describeTreeProblem(tree, ranks);
  if (!problem.empty()) {
    throw CompileError(fmt::format(
        "tree {} (root {}) cannot be lowered to an AllReduce over {} ranks: {}; rebuild it with "
        "computeTrees or fix its array",
        index, tree.root, ranks, problem));
  }
}

void requirePipeline(const TreeAllReduceOptions& options) {
  if (options.pipeline < 1) {
    throw OptionError(
        fmt::format("pipeline is {}; use 1 or more pieces per tree slice", options.pipeline));
  }
}

// Steps 1-2 for chunks [first, first + pieces).
void traceTree(lang::Program& program, const Tree& tree, int first, int pieces,
               const lang::OpOptions& onTree) {
  const std::vector<TreeEdge> edges = listTreeEdges(tree);
  const int depth = treeDepth(tree);
  for (int piece = 0; piece < pieces; ++piece) {
    const int index = first + piece;
    for (int level = depth; level >= 1; --level) {
      for (const TreeEdge& edge : edges) {
        if (edge.level != level) continue;
        program.chunk(edge.parent, lang::Buffer::input, index)
            .reduce(program.chunk(edge.child, lang::Buffer::input, index), onTree);
      }
    }
    for (const TreeEdge& edge : edges) {  // edges are ordered by level
      program.chunk(edge.parent, lang::Buffer::input, index)
          .copy(edge.child, lang::Buffer::input, index, onTree);
    }
  }
}

}  // namespace

std::unique_ptr<lang::Program> buildSingleTreeAllReduce(const Tree& tree, int ranks,
                                                        const TreeAllReduceOptions& options,
                                                        const std::string& name) {
  requirePipeline(options);
  requireLowerable(tree, 0, ranks);
  auto program = std::make_unique<lang::Program>(
      name, lang::allReduce(ranks, options.pipeline, /*inPlace=*/true), options.program);
  traceTree(*program, tree, 0, options.pipeline, lang::OpOptions{});
  return program;
}

std::unique_ptr<lang::Program> buildMultiTreeAllReduce(const std::vector<Tree>& trees, int ranks,
                                                       const TreeAllReduceOptions& options,
                                                       const std::string& name) {
  requirePipeline(options);
  if (trees.empty()) throw OptionError("a multi-tree AllReduce needs at least one tree");
  for (std::size_t i = 0; i < trees.size(); ++i)
    requireLowerable(trees[i], static_cast<int>(i), ranks);
  const int count = static_cast<int>(trees.size());
  auto program = std::make_unique<lang::Program>(
      name, lang::allReduce(ranks, count * options.pipeline, /*inPlace=*/true), options.program);
  for (int i = 0; i < count; ++i) {
    lang::OpOptions onTree;
    if (options.channelPerTree) onTree.channel = i % kChannels;
    traceTree(*program, trees[static_cast<std::size_t>(i)], i * options.pipeline, options.pipeline,
              onTree);
  }
  return program;
}

std::string_view treeModeName(TreeMode mode) {
  return mode == TreeMode::single ? "single-tree" : "multi-tree";
}

TreeMode chooseTreeMode(std::uint64_t elements, int ranks, std::uint64_t bound) {
  const bool big = elements > bound;
  const bool splits = elements >= 2 * static_cast<std::uint64_t>(std::max(ranks, 0));
  return big && splits ? TreeMode::multi : TreeMode::single;
}

TreeModeBytes treeModeBytes(TreeMode mode, int ranks, std::uint64_t bound,
                            std::uint64_t elementBytes) {
  const std::uint64_t firstMulti =
      std::max(bound + 1, 2 * static_cast<std::uint64_t>(std::max(ranks, 0)));
  const std::uint64_t edge = firstMulti * elementBytes;
  return mode == TreeMode::single ? TreeModeBytes{0, edge} : TreeModeBytes{edge, 0};
}

std::unique_ptr<lang::Program> buildTreeAllReduceFor(std::uint64_t elements,
                                                     const std::vector<Tree>& trees, int ranks,
                                                     const TreeAllReduceOptions& options,
                                                     std::uint64_t bound) {
  if (trees.empty()) throw OptionError("a tree AllReduce needs at least one tree");
  if (chooseTreeMode(elements, ranks, bound) == TreeMode::single)
    return buildSingleTreeAllReduce(trees.front(), ranks, options);
  return buildMultiTreeAllReduce(trees, ranks, options);
}

ir::Algorithm compileTreeProgram(const lang::Program& program,
                                 const compiler::CompileOptions& options) {
  algorithms::requirePostcondition(program, program.dag().name);
  return compiler::compileProgram(program.dag(), options).algorithm;
}

}  // namespace chorus::synth
