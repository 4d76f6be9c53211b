// allreduce.double-binary-tree: NCCL's double binary tree AllReduce (xCCL notes "Double
// Binary Trees": "the leaves of one binary tree can be used as the nodes of another"; Sanders,
// Speck and Träff's two-tree construction). Half of the buffer is reduced up and broadcast down
// each of two binary trees, pipelined in `pipeline` pieces per half, so each rank sends and
// receives about n in all while every tree stays ⌊lg p⌋ deep.
//
// Algorithm, R ranks, k = pipeline, chunk factor 2k, in place:
//   1. Tree shape over an ordered list of R ranks: the root of a range of list positions is the
//      odd position nearest its middle (a single position is a leaf); the positions left and
//      right of it form the two subtrees. Every interior node therefore sits at an odd position.
//   2. Tree 0 uses the list 0, 1, ..., R-1 (interior ranks are odd); tree 1 the same list shifted
//      by one, 1, 2, ..., R-1, 0 (interior ranks are even). So every rank is interior in at most
//      one tree, and the trees' heavy work (two children to reduce and feed) lands on disjoint
//      ranks, for odd and even R alike.
//   3. Tree t owns chunks t*k .. t*k+k-1 and runs on channel t. For each piece: every rank,
//      deepest first, adds its partial sum into its parent's (reduce up); then every rank,
//      shallowest first, copies the root's total to its children (broadcast down). Each piece
//      is its own message, so piece j+1 climbs while piece j is still on its way.
//
//      R = 8   tree 0 (chunks 0..k-1)          tree 1 (chunks k..2k-1)
//                     3                               4
//                   /   \                           /   \        each edge: reduce up,
//                  1     5                         2     6
//                 / \   / \                       / \   / \       then copy down
//                0   2 4   7                     1   3 5   0
//                         /                                /
//                        6                                7
#include <numeric>
#include <vector>

#include "algorithms/binary_trees.h"
#include "algorithms/families.h"

namespace chorus::algorithms {
namespace {

// Steps 1-3 above; the tree shapes and the reduce / broadcast passes are binary_trees.h's.
std::unique_ptr<lang::Program> buildAllReduceDoubleBinaryTree(const std::string& name,
                                                              const BuildArgs& args) {
  const int size = args.ranks;
  const int pieces = args.param("pipeline");
  auto program = std::make_unique<lang::Program>(name, lang::allReduce(size, 2 * pieces, true),
                                                 args.programOptions);
  std::vector<int> ranks(static_cast<std::size_t>(size));
  std::iota(ranks.begin(), ranks.end(), 0);
  for (int which = 0; which < 2; ++which) {
    const BinaryTree tree = shapeDoubleBinaryTree(ranks, which);
    const lang::OpOptions onTree{.channel = which};
    for (int piece = 0; piece < pieces; ++piece) {
      const int index = which * pieces + piece;
      reduceUpTree(*program, tree, index, onTree);
      broadcastDownTree(*program, tree, index, onTree);
    }
  }
  return program;
}

}  // namespace

std::vector<AlgorithmInfo> doubleBinaryTreeAlgorithms() {
  return {
      {.name = "allreduce.double-binary-tree",
       .collective = "allreduce",
       .description = "two complementary binary trees, half the buffer each: reduce up, "
                      "broadcast down, pipelined",
       .citation = "xCCL notes Double Binary Trees (NCCL); Sanders, Speck, Träff two-tree scheme",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {{.name = "pipeline",
                   .defaultValue = 4,
                   .minValue = 1,
                   .maxValue = 32,
                   .description = "pieces per half-buffer tree; each piece is its own message"}},
       .build = &buildAllReduceDoubleBinaryTree,
       .steps = "2⌊lg p⌋ + k − 1 (k = pipeline pieces per tree)",
       .bytesSent = "≤ 2n (n/2 up and ≤ 2 · n/2 down as interior, n/2 up as leaf)",
       .cost = "(2⌊lg p⌋ + k − 1)(α + n/(2k) · (2β + γ)), trees concurrent",
       .winsWhen = "medium buffers at larger p: ⌊lg p⌋ deep, about the ring's 2n bytes per rank"},
  };
}

}  // namespace chorus::algorithms
