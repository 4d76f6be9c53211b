// Lowers topology-aware trees (synth/trees.h) to chorus DSL AllReduce programs, the way MXNet's
// CommDeviceTree uses them (MXNet trees; docs/sources.md "MXNet tree backend"): one tree for the
// whole buffer, or the buffer split into one slice per tree. The programs compile like any library
// algorithm (compileTreeProgram) and run on the runtime or the simulator.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chorus/lang.h"
#include "compiler/pipeline.h"
#include "ir/algorithm.h"
#include "synth/trees.h"

namespace chorus::synth {

// MXNET_KVSTORE_TREE_ARRAY_BOUND's default, in elements: MXNet reduces an array of at most this
// many elements over one tree (tree 0) and a larger one over one tree per GPU
// (MXNET_KVSTORE_TREE_ARRAY_BOUND, default 10,000,000 elements, in MXNet's CommDeviceTree;
// docs/sources.md "MXNet tree backend"; MXNet trees Figure 7: "beyond 1M-10M float32's, multi-tree
// begins to do better than a single tree").
inline constexpr std::uint64_t kMxnetTreeArrayBound = 10'000'000;

enum class TreeMode {
  single,  // tree 0 carries the whole buffer (buildSingleTreeAllReduce)
  multi,   // one slice per tree (buildMultiTreeAllReduce)
};
std::string_view treeModeName(TreeMode mode);  // "single-tree", "multi-tree"

// MXNet's CommDeviceTree choice for an array of `elements` elements on `ranks` GPUs: multi-tree
// iff elements > bound and the first dimension (a chorus buffer is 1-D: elements) is at least
// 2·ranks; single-tree otherwise (MXNet comm_tree.h).
TreeMode chooseTreeMode(std::uint64_t elements, int ranks,
                        std::uint64_t bound = kMxnetTreeArrayBound);

// The buffer sizes in bytes a mode serves under chooseTreeMode, for elements of `elementBytes`
// bytes, as a plan's size range [minBytes, maxBytes) (maxBytes 0 = no limit; ir::Algorithm's
// convention): single-tree [0, m·elementBytes), multi-tree [m·elementBytes, no limit), with
// m = max(bound + 1, 2·ranks) the fewest elements that go multi-tree. Runtime selection
// (CHORUS_ALGO_DIR) picks by these ranges, so the emitted pair switches like MXNet.
struct TreeModeBytes {
  std::uint64_t minBytes = 0;
  std::uint64_t maxBytes = 0;
};
TreeModeBytes treeModeBytes(TreeMode mode, int ranks, std::uint64_t bound,
                            std::uint64_t elementBytes);

struct TreeAllReduceOptions {
  // Pieces per slice (single tree: per buffer); each piece is its own message, so a piece climbs
  // the tree while the previous one is still being broadcast.
  int pipeline = 1;
  // Multi-tree: tree i runs on channel i (mod 32), so the trees' transfers between one pair of
  // GPUs do not queue behind each other. false lets the compiler choose.
  bool channelPerTree = true;
  lang::ProgramOptions program;
};

// In-place AllReduce over one tree, chunk factor `pipeline`: for every piece, each level from
// the leaves up adds every child's partial sum into its parent (reduce), then each level from the
// root down copies the parent's result to the child (broadcast): 2·depth hops. Throws
// CompileError naming the tree's defect when describeTreeProblem(tree, ranks) is not empty, and
// OptionError for pipeline < 1.
std::unique_ptr<lang::Program> buildSingleTreeAllReduce(const Tree& tree, int ranks,
                                                        const TreeAllReduceOptions& options = {},
                                                        const std::string& name = "allreduce.tree");

// In-place AllReduce over trees.size() trees (MXNet's multi-tree mode): the buffer is split into
// one slice per tree (chunk factor trees.size() · pipeline); slice i is reduced into the root of
// trees[i] along trees[i] and broadcast back along it. Together the trees act as a
// reduce-scatter followed by an all-gather. Throws like buildSingleTreeAllReduce.
std::unique_ptr<lang::Program> buildMultiTreeAllReduce(
    const std::vector<Tree>& trees, int ranks, const TreeAllReduceOptions& options = {},
    const std::string& name = "allreduce.multitree");

// MXNet's tree AllReduce for an array of `elements` elements: buildSingleTreeAllReduce over
// trees.front() or buildMultiTreeAllReduce over all trees, as chooseTreeMode(elements,
// ranks, bound) says. Throws like those, and OptionError when `trees` is empty.
std::unique_ptr<lang::Program> buildTreeAllReduceFor(std::uint64_t elements,
                                                     const std::vector<Tree>& trees, int ranks,
                                                     const TreeAllReduceOptions& options = {},
                                                     std::uint64_t bound = kMxnetTreeArrayBound);

// The traced postcondition check (CompileError listing violations), then the compiler pipeline
// with its verifier: the finished ir::Algorithm.
ir::Algorithm compileTreeProgram(const lang::Program& program,
                                 const compiler::CompileOptions& options = {});

}  // namespace chorus::synth
