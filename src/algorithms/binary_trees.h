// Binary trees over an ordered list of ranks, as NCCL's double binary tree builds them (xCCL
// notes "Double Binary Trees"; Sanders, Speck and Träff's two-tree scheme), and the reduce-up /
// broadcast-down chunk operations over one. Shared by allreduce.double-binary-tree and the P²
// Tree lowering (synth/p2_lower.h).
#pragma once

#include <span>
#include <vector>

#include "chorus/lang.h"

namespace chorus::algorithms {

// One edge of a binary tree: `child` sends its partial sum to `parent` (reduce up) and later
// receives the result from it (broadcast down). `depth` is the child's depth (the root's is 0).
struct BinaryTreeEdge {
  int parent = 0;
  int child = 0;
  int depth = 0;
};

// A binary tree over some ranks. Edges are ordered shallowest child first, ties by child rank.
struct BinaryTree {
  int root = 0;
  std::vector<BinaryTreeEdge> edges;
};

// The tree shape of allreduce.double-binary-tree over `order` (at least one rank): the root of
// a range of list positions is the odd position nearest its middle (a single position is a
// leaf); the positions left and right of it form the two subtrees, so every interior node sits
// at an odd position and the tree is ⌊lg p⌋ deep.
BinaryTree shapeBinaryTree(std::span<const int> order);

// Tree `which` (0 or 1) of the double binary tree over `order`: tree 0 shapes `order`, tree 1
// the same list shifted by one (order[1], ..., order[p-1], order[0]). Every rank is interior in
// at most one of the two trees.
BinaryTree shapeDoubleBinaryTree(std::span<const int> order, int which);

// A binary tree rooted at order[0]: the rest of the list is shaped by shapeBinaryTree's rule
// below it, so the root has one child, as in NCCL's binary tree (ncclGetBtree's rank 0).
BinaryTree shapeRootedBinaryTree(std::span<const int> order);

// Orders `tree`'s edges as every shape above does: shallowest child first, ties by child rank.
// For callers that add edges of their own (the P² tree lowering's intra-node chains).
void sortShallowFirst(BinaryTree& tree);

// Adds every child's partial sum of input chunk `index` into its parent's, deepest first: the
// root ends with the sum over the tree. Precondition: every rank of the tree holds the chunk.
void reduceUpTree(lang::Program& program, const BinaryTree& tree, int index,
                  const lang::OpOptions& options = {});

// Copies input chunk `index` from every parent to its children, shallowest first: every rank
// ends with the root's chunk.
void broadcastDownTree(lang::Program& program, const BinaryTree& tree, int index,
                       const lang::OpOptions& options = {});

}  // namespace chorus::algorithms
