#include "synth/p2_lower.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <utility>

#include "algorithms/binary_trees.h"
#include "ir/group_reduction.h"
#include "support/error.h"
#include "support/index.h"
#include "synth/ring_order.h"

namespace chorus::synth {
namespace {

using lang::Buffer;

// DSL chunk indices of semantic chunks `chunks` refined by `factor`.
std::vector<int> expand(const std::vector<int>& chunks, int factor) {
  std::vector<int> out;
  for (int k : chunks)
    for (int f = 0; f < factor; ++f)
      out.push_back(k * factor + f);
  return out;
}

void reduceInto(lang::Program& p, int dst, int src, int index) {
  p.chunk(dst, Buffer::input, index).reduce(p.chunk(src, Buffer::input, index));
}

void copyTo(lang::Program& p, int src, int dst, int index) {
  p.chunk(src, Buffer::input, index).copy(dst, Buffer::input, index);
}

// Ring ReduceScatter: blocks[r] ends fully reduced on members[r].
void ringReduceScatter(lang::Program& p, const std::vector<int>& members,
                       const std::vector<std::vector<int>>& blocks) {
  const std::size_t g = members.size();
  for (std::size_t s = 1; s < g; ++s)
    for (std::size_t r = 0; r < g; ++r)
      for (int index : blocks[r])
        reduceInto(p, members[(r + s + 1) % g], members[(r + s) % g], index);
}

// Ring AllGather: blocks[r] starts on members[r] and reaches every member.
void ringAllGather(lang::Program& p, const std::vector<int>& members,
                   const std::vector<std::vector<int>>& blocks) {
  const std::size_t g = members.size();
  for (std::size_t s = 0; s + 1 < g; ++s)
    for (std::size_t r = 0; r < g; ++r)
      for (int index : blocks[r])
        copyTo(p, members[(r + s) % g], members[(r + s + 1) % g], index);
}

std::vector<std::vector<int>> evenBlocks(const std::vector<int>& indices, std::size_t g) {
  CHORUS_INTERNAL_ASSERT(indices.size() % g == 0, "chunks do not split evenly over a group");
  const std::size_t block = indices.size() / g;
  std::vector<std::vector<int>> blocks;
  for (std::size_t r = 0; r < g; ++r)
    blocks.emplace_back(indices.begin() + static_cast<std::ptrdiff_t>(r * block),
                        indices.begin() + static_cast<std::ptrdiff_t>((r + 1) * block));
  return blocks;
}

// `blocks[i]` (member i's) permuted to follow `ring`, a permutation of `members`.
std::vector<std::vector<int>> alongRing(const std::vector<int>& members,
                                        const std::vector<int>& ring,
                                        const std::vector<std::vector<int>>& blocks) {
  std::vector<std::vector<int>> out;
  for (int d : ring)
    out.push_back(blocks[ix(
        static_cast<int>(std::find(members.begin(), members.end(), d) - members.begin()))]);
  return out;
}

// NCCL's tree over a group (NCCL's graph search, src/graph/trees.cc / connect.cc): inside each
// node a chain through the node's members in ring order from the first one (the node's head);
// across nodes, a binary tree over the heads, nodes in ring order. `rooted`: the heads' tree is
// shapeRootedBinaryTree (its root is ring[0], for Reduce / Broadcast); otherwise tree `which`
// of the double binary tree (AllReduce). Member d is on node d / nodeSize; nodeSize 0 puts
// every member on its own node (a flat binary tree over the ring order).
algorithms::BinaryTree ncclTree(const std::vector<int>& ring, int nodeSize, bool rooted,
                                int which) {
  std::vector<std::vector<int>> nodes;  // members by node, nodes in ring order
  std::vector<int> nodeOf;
  for (int d : ring) {
    const int node = nodeSize > 0 ? d / nodeSize : d;
    const auto it = std::find(nodeOf.begin(), nodeOf.end(), node);
    if (it == nodeOf.end()) {
      nodeOf.push_back(node);
      nodes.push_back({d});
    } else {
      nodes[ix(static_cast<int>(it - nodeOf.begin()))].push_back(d);
    }
  }
  std::vector<int> heads;
  for (const std::vector<int>& node : nodes)
    heads.push_back(node.front());
  algorithms::BinaryTree tree = rooted ? algorithms::shapeRootedBinaryTree(heads)
                                       : algorithms::shapeDoubleBinaryTree(heads, which);
  std::vector<int> headDepth(heads.size(), 0);
  for (const algorithms::BinaryTreeEdge& e : tree.edges)
    headDepth[ix(static_cast<int>(std::find(heads.begin(), heads.end(), e.child) -
                                  heads.begin()))] = e.depth;
  for (std::size_t n = 0; n < nodes.size(); ++n)
    for (std::size_t i = 1; i < nodes[n].size(); ++i)
      tree.edges.push_back({nodes[n][i - 1], nodes[n][i], headDepth[n] + static_cast<int>(i)});
  algorithms::sortShallowFirst(tree);
  return tree;
}

// Step 2 of lowerProgram for one group.
void lowerGroup(lang::Program& p, Collective collective, const CollectiveGroup& group,
                const StateContext& before, int factor, const LowerOptions& options) {
  const std::vector<int>& m = group.devices;
  const std::vector<int> ring = orderRing(options.nodeLinks, m);
  const std::vector<int> indices = expand(group.chunks, factor);
  const bool tree = options.lowering == Lowering::tree;
  const int nodeSize = options.devicesPerNode > 0 ? options.devicesPerNode : options.nodeLinks.size;
  switch (collective) {
    case Collective::reduceScatter:  // ring in both lowerings: NCCL has no tree ReduceScatter
      ringReduceScatter(p, ring, alongRing(m, ring, evenBlocks(indices, m.size())));
      break;
    case Collective::allGather: {  // ring in both lowerings: NCCL has no tree AllGather
      std::vector<std::vector<int>> blocks;
      for (int d : ring)
        blocks.push_back(expand(nonEmptyRows(before[ix(d)]), factor));
      ringAllGather(p, ring, blocks);
      break;
    }
    case Collective::allReduce: {
      if (tree) {
        if (ring.size() < 2) break;
        const std::vector<std::vector<int>> halves = evenBlocks(indices, 2);
        for (int which = 0; which < 2; ++which) {
          const algorithms::BinaryTree t = ncclTree(ring, nodeSize, false, which);
          for (int index : halves[ix(which)]) {
            algorithms::reduceUpTree(p, t, index);
            algorithms::broadcastDownTree(p, t, index);
          }
        }
        break;
      }
      const std::vector<std::vector<int>> blocks =
          alongRing(m, ring, evenBlocks(indices, m.size()));
      ringReduceScatter(p, ring, blocks);
      ringAllGather(p, ring, blocks);
      break;
    }
    case Collective::reduce:  // toward ring[0] == m[0]
      if (tree) {
        const algorithms::BinaryTree t = ncclTree(ring, nodeSize, true, 0);
        for (int index : indices)
          algorithms::reduceUpTree(p, t, index);
        break;
      }
      for (std::size_t i = ring.size() - 1; i >= 1; --i)
        for (int index : indices)
          reduceInto(p, ring[i - 1], ring[i], index);
      break;
    case Collective::broadcast:  // from ring[0] == m[0]
      if (tree) {
        const algorithms::BinaryTree t = ncclTree(ring, nodeSize, true, 0);
        for (int index : indices)
          algorithms::broadcastDownTree(p, t, index);
        break;
      }
      for (std::size_t i = 0; i + 1 < ring.size(); ++i)
        for (int index : indices)
          copyTo(p, ring[i], ring[i + 1], index);
      break;
  }
}

}  // namespace

std::string_view loweringName(Lowering lowering) {
  return lowering == Lowering::tree ? "tree" : "ring";
}

Lowering parseLowering(std::string_view name) {
  if (name == "ring") return Lowering::ring;
  if (name == "tree") return Lowering::tree;
  throw OptionError(fmt::format(
      "lowering '{}' is not known; use ring (NCCL Ring) or tree (NCCL Tree: double binary tree "
      "AllReduce, binary tree Reduce / Broadcast)",
      name));
}

std::shared_ptr<const ir::Collective> makeGroupReduction(int nranks, int chunkFactor,
                                                         std::vector<std::vector<int>> groups) {
  if (groups.size() == 1 && static_cast<int>(groups[0].size()) == nranks && nranks >= 1)
    return lang::allReduce(nranks, chunkFactor, true);
  return ir::makeGroupReduction(nranks, chunkFactor, std::move(groups));
}

std::unique_ptr<lang::Program> lowerProgram(const SynthesisHierarchy& hierarchy,
                                            const ReductionLayout& layout,
                                            const ReductionProgram& program,
                                            const LowerOptions& options) {
  const std::vector<ProgramStep> steps = placeProgram(hierarchy, layout, program);
  const int chunks = synthesisDeviceCount(hierarchy);
  const int devices = static_cast<int>(layout.groups.size()) * chunks;
  int factor = 1;
  for (const ProgramStep& step : steps)
    if (step.collective == Collective::allReduce)
      for (const CollectiveGroup& group : step.groups) {
        const int g = static_cast<int>(group.devices.size());
        const int c = static_cast<int>(group.chunks.size());
        // Ring: g blocks; tree: two halves (a group of one does nothing).
        const int parts = options.lowering == Lowering::tree ? (g >= 2 ? 2 : 1) : g;
        factor = std::lcm(factor, parts / std::gcd(parts, c));
      }
  auto lowered = std::make_unique<lang::Program>(
      options.name, makeGroupReduction(devices, chunks * factor, layout.groups), options.program);
  StateContext context = makeInitialContext(chunks, devices);
  for (const ProgramStep& step : steps) {
    for (const CollectiveGroup& group : step.groups)
      lowerGroup(*lowered, step.collective, group, context, factor, options);
    GroupStep groupStep{step.collective, {}};
    for (const CollectiveGroup& group : step.groups)
      groupStep.groups.push_back(group.devices);
    StepResult applied = applyStep(context, groupStep);
    CHORUS_INTERNAL_ASSERT(applied.applies, "a placed valid program failed on replay");
    context = std::move(applied.after);
  }
  return lowered;
}

}  // namespace chorus::synth
