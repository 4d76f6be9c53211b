#include "algorithms/binary_trees.h"

#include <algorithm>

#include "support/error.h"

namespace chorus::algorithms {
namespace {

// Shapes the subtree over positions [lo, hi) of `order` below `parentRank`.
void shapeBinarySubtree(std::span<const int> order, int lo, int hi, int parentRank, int depth,
                        BinaryTree& tree) {
  if (lo >= hi) return;
  int mid = lo + (hi - lo - 1) / 2;
  if (hi - lo > 1 && mid % 2 == 0) mid = mid + 1 < hi ? mid + 1 : mid - 1;
  const int rank = order[static_cast<std::size_t>(mid)];
  if (parentRank < 0)
    tree.root = rank;
  else
    tree.edges.push_back({parentRank, rank, depth});
  shapeBinarySubtree(order, lo, mid, rank, depth + 1, tree);
  shapeBinarySubtree(order, mid + 1, hi, rank, depth + 1, tree);
}

}  // namespace

void sortShallowFirst(BinaryTree& tree) {
  std::sort(tree.edges.begin(), tree.edges.end(),
            [](const BinaryTreeEdge& a, const BinaryTreeEdge& b) {
              return a.depth != b.depth ? a.depth < b.depth : a.child < b.child;
            });
}

BinaryTree shapeBinaryTree(std::span<const int> order) {
  CHORUS_INTERNAL_ASSERT(!order.empty(), "a binary tree needs at least one rank");
  BinaryTree tree;
  shapeBinarySubtree(order, 0, static_cast<int>(order.size()), -1, 0, tree);
  sortShallowFirst(tree);
  return tree;
}

BinaryTree shapeDoubleBinaryTree(std::span<const int> order, int which) {
  CHORUS_INTERNAL_ASSERT(which == 0 || which == 1, "a double binary tree has trees 0 and 1");
  std::vector<int> shifted(order.begin(), order.end());
  if (which == 1 && !shifted.empty())
    std::rotate(shifted.begin(), shifted.begin() + 1, shifted.end());
  return shapeBinaryTree(shifted);
}

BinaryTree shapeRootedBinaryTree(std::span<const int> order) {
  CHORUS_INTERNAL_ASSERT(!order.empty(), "a binary tree needs at least one rank");
  BinaryTree tree;
  tree.root = order[0];
  // Positions of order.subspan(1) are shaped as if they started at 0, so interior nodes sit at
  // odd positions of the rest of the list, as in shapeBinaryTree.
  const std::span<const int> rest = order.subspan(1);
  shapeBinarySubtree(rest, 0, static_cast<int>(rest.size()), tree.root, 1, tree);
  sortShallowFirst(tree);
  return tree;
}

void reduceUpTree(lang::Program& program, const BinaryTree& tree, int index,
                  const lang::OpOptions& options) {
  for (auto it = tree.edges.rbegin(); it != tree.edges.rend(); ++it)
    program.chunk(it->parent, lang::Buffer::input, index)
        .reduce(program.chunk(it->child, lang::Buffer::input, index), options);
}

void broadcastDownTree(lang::Program& program, const BinaryTree& tree, int index,
                       const lang::OpOptions& options) {
  for (const BinaryTreeEdge& edge : tree.edges)
    program.chunk(edge.parent, lang::Buffer::input, index)
        .copy(edge.child, lang::Buffer::input, index, options);
}

}  // namespace chorus::algorithms
