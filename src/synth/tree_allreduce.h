// Lowers topology-aware trees (synth/trees.h) to chorus DSL AllReduce programs, the way MXNet's
// CommDeviceTree uses them (seed 004; reference/sim-synth.md §1.7): one tree for the whole
// buffer, or the buffer split into one slice per tree. The programs compile like any library
// algorithm (compileTreeProgram) and run on the runtime or the simulator.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chorus/lang.h"
#include "compiler/pipeline.h"
#include "ir/algorithm.h"
#include "synth/trees.h"

namespace chorus::synth {

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

// The traced postcondition check (CompileError listing violations), then the compiler pipeline
// with its verifier: the finished ir::Algorithm.
ir::Algorithm compileTreeProgram(const lang::Program& program,
                                 const compiler::CompileOptions& options = {});

}  // namespace chorus::synth
