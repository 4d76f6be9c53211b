// Lowering of a synthesized P² reduction program (p2_program.h) to ONE chorus DSL program
// (lang::Program): every step's group collectives become ring / chain or tree chunk operations
// in a single trace, so the compiler can pipeline across phases (P² §4 lowers to a
// sequence of XLA collectives, i.e. NCCL calls, instead). The third stage of `chorus synth
// reduction`.
//
// Two lowerings, as P² §4 runs every program "with both NCCL ring reduction and tree
// reduction (Sanders et al., 2009), set by NCCL_ALGO" (Appendix A's Ring and Tree columns):
//   ring: every group collective over a ring (or a chain for Reduce / Broadcast).
//   tree: NCCL's tree (NCCL_ALGO=Tree): inside each node a chain through the group's members
//         in ring order; across nodes a binary tree over the nodes' first members (the trees
//         of allreduce.double-binary-tree, algorithms/binary_trees.h). AllReduce = the double
//         binary tree: two such trees (tree 1's node tree is tree 0's shifted by one node),
//         half of the group's chunks each, reduce up then broadcast down (a group inside
//         one node: both halves go along its chain, as NCCL's tree does). Reduce = reduce up
//         the tree whose node tree is rooted at the group's first member (shapeRootedBinary-
//         Tree: one child at the root, as NCCL's ncclGetBtree); Broadcast = down that tree.
//         ReduceScatter and AllGather stay ring: NCCL has no tree form of them
//         (NCCL_ALGO=Tree only changes AllReduce), so under P²'s Tree setting they ran as
//         NCCL rings too. Note: NCCL's own Reduce and Broadcast are ring (pipelined chain)
//         only as well, so the tree Reduce / Broadcast here go beyond what P² measured under
//         NCCL_ALGO=Tree; they are the halves of NCCL's tree AllReduce.
//         Why chains inside a node: a flat binary tree over a node's GPUs joins GPUs that are
//         not NVLink neighbours (gcp-v100: 16x slower than the ring inside a node, where P²
//         measured 0.40 s against 0.28 s); NCCL's intra-node chain follows the ring.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chorus/lang.h"
#include "synth/link_matrix.h"
#include "synth/p2_program.h"

namespace chorus::synth {

// The collective a reduction over `groups` implements, in place: output chunk k of device d is
// the sum of input chunk k over d's group. One group of every device is lang::allReduce;
// otherwise ir::makeGroupReduction (named "group-reduction:<groups>", so its MSCCL XML is
// checked by `chorus run`). Throws chorus::OptionError unless the groups partition
// 0..nranks-1.
std::shared_ptr<const ir::Collective> makeGroupReduction(int nranks, int chunkFactor,
                                                         std::vector<std::vector<int>> groups);

// How group collectives are lowered (see the top of this file).
enum class Lowering { ring, tree };
std::string_view loweringName(Lowering lowering);  // "ring", "tree"
// "ring" or "tree"; throws chorus::OptionError naming both.
Lowering parseLowering(std::string_view name);

struct LowerOptions {
  std::string name = "p2";
  Lowering lowering = Lowering::ring;
  lang::ProgramOptions program;
  // The link matrix of one node of the target topology: every ring and chain visits its
  // group in orderRing(nodeLinks, members) order (ring_order.h), as NCCL orders a
  // communicator's ring along NVLink. Empty: members in reduction-index order. The tree
  // lowering's chains and node order follow the same list.
  LinkMatrix nodeLinks;
  // Devices per node, for the tree lowering's intra-node chains (member d is on node
  // d / devicesPerNode). 0: nodeLinks.size; when that is 0 too, every member counts as its own
  // node, so the trees are flat binary trees over the ring order.
  int devicesPerNode = 0;
};

// Lowers `program` (valid on `hierarchy`) placed by `layout` to one DSL program on all of the
// layout's devices, with chunk factor R·F (R = synthesis devices, F the least refinement that
// lets every AllReduce group split its chunks evenly: over its g members (ring) or over its
// two trees (tree)). Throws like placeProgram.
//
// Algorithm:
//  1. Place the program (placeProgram) and replay the P² Figure 8 semantics on the whole
//     system to know, before each step, which chunks every member holds.
//  2. Per group, with semantic chunk k = DSL chunks k·F .. k·F+F-1 of the input buffer:
//     ReduceScatter = ring ReduceScatter whose block i (the i-th 1/g of the chunks) ends on
//     member i; AllGather = ring AllGather of each member's own chunks; AllReduce = ring
//     ReduceScatter then ring AllGather; Reduce = a chain toward the first member;
//     Broadcast = a chain from the first member (GC3 §2's ring helpers, on chunk lists).
//     Rings and chains visit the members in orderRing order (options.nodeLinks); each block
//     still ends on, or starts from, the member it belongs to. With Lowering::tree, AllReduce,
//     Reduce and Broadcast use NCCL's trees above over that order instead (AllReduce: the
//     first half of the chunks on tree 0, the second half on tree 1, each chunk reduced up
//     then broadcast down).
//  3. The collective is makeGroupReduction(layout.groups); the trace checks its postcondition.
std::unique_ptr<lang::Program> lowerProgram(const SynthesisHierarchy& hierarchy,
                                            const ReductionLayout& layout,
                                            const ReductionProgram& program,
                                            const LowerOptions& options = {});

}  // namespace chorus::synth
