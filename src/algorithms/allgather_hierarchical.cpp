// allgather.hierarchical: hierarchical AllGather with overlap (seed 002 Algorithm 1, §III-A)
// for N nodes x G GPUs, rank (n,g) = n*G + g, out of place, chunk factor 1. Only the node
// leaders (GPU 0) cross nodes; node n's chunks sit contiguously at output[n·G ..).
//
// Algorithm:
//   1. Gather: every GPU copies its chunk into its own output and sends it to its leader; the
//      leader forwards the node's other chunks to each local GPU (at most two contiguous
//      ranges: below and above the GPU's own chunk).
//   2. Recursive doubling between leaders, any N: at level h = 1, 2, 4, … a leader holds the
//      node group [⌊n/h⌋·h, +h) ∩ [0, N) and receives the sibling group [base ^ h, +h) ∩ [0, N)
//      as ONE message from its partner n XOR h. When N is not a power of two the partner may
//      not exist; the lower half of a group is then served by sibling node
//      (base ^ h) + (n − base) mod |sibling|, which sends the same range to several nodes.
//      Every leader still finishes after ⌈lg N⌉ levels, and every level's range is contiguous.
//   3. Overlap: as each range arrives, the leader forwards it to each local GPU (one message
//      each), so the intra-node broadcast of level h runs beside the exchange of level 2h.
//
//      N = 3, G = 2:   level 1: L0 <-> L1          level 2: L2 -> L0, L2 -> L1 (no node 3),
//                               (L2 idle)                   L0 -> L2 (nodes 0-1)
//      every leader then forwards each received range to its GPU 1.
#include <vector>

#include "algorithms/families.h"

namespace chorus::algorithms {
namespace {

std::unique_ptr<lang::Program> buildAllGatherHierarchical(const std::string& name,
                                                          const BuildArgs& args) {
  const int nodes = args.nodes;
  const int gpus = args.gpusPerNode;
  auto program = std::make_unique<lang::Program>(name, lang::allGather(args.ranks, 1, false),
                                                 args.programOptions);
  auto rankOf = [gpus](int node, int gpu) { return node * gpus + gpu; };
  // Leader of node n forwards output chunks [first, first + count) to every other local GPU.
  auto forward = [&](int node, int first, int count) {
    const lang::ChunkRef range =
        program->chunk(rankOf(node, 0), lang::Buffer::output, first, count);
    for (int g = 1; g < gpus; ++g)
      range.copy(rankOf(node, g), lang::Buffer::output, first);
  };

  for (int n = 0; n < nodes; ++n) {
    for (int g = 0; g < gpus; ++g) {
      const lang::ChunkRef own = program->chunk(rankOf(n, g), lang::Buffer::input, 0);
      own.copy(rankOf(n, g), lang::Buffer::output, rankOf(n, g));
      if (g != 0) own.copy(rankOf(n, 0), lang::Buffer::output, rankOf(n, g));
    }
    const int base = rankOf(n, 0);
    for (int g = 1; g < gpus; ++g) {
      program->chunk(base, lang::Buffer::output, base, g)
          .copy(rankOf(n, g), lang::Buffer::output, base);
      if (g + 1 < gpus) {
        program->chunk(base, lang::Buffer::output, base + g + 1, gpus - g - 1)
            .copy(rankOf(n, g), lang::Buffer::output, base + g + 1);
      }
    }
  }

  for (int half = 1; half < nodes; half *= 2) {
    for (int n = 0; n < nodes; ++n) {
      const int groupBase = n / half * half;
      const int siblingBase = groupBase ^ half;
      if (siblingBase >= nodes) continue;
      const int siblingSize = std::min(siblingBase + half, nodes) - siblingBase;
      const int partner = n ^ half;
      const int sender = partner < nodes ? partner : siblingBase + (n - groupBase) % siblingSize;
      program
          ->chunk(rankOf(sender, 0), lang::Buffer::output, siblingBase * gpus, siblingSize * gpus)
          .copy(rankOf(n, 0), lang::Buffer::output, siblingBase * gpus);
      forward(n, siblingBase * gpus, siblingSize * gpus);
    }
  }
  return program;
}

}  // namespace

std::vector<AlgorithmInfo> hierarchicalAllGatherAlgorithms() {
  return {
      {.name = "allgather.hierarchical",
       .collective = "allgather",
       .description = "GPUs send to their node leader, leaders run recursive doubling across "
                      "nodes (any N) and forward each range to local GPUs as it arrives",
       .citation = "seed 002 Algorithm 1 (Hierarchical allgather + overlap), §III-A",
       .shape = Shape::nodes,
       .minRanks = 2,
       .params = {},
       .build = &buildAllGatherHierarchical,
       .steps = "⌈lg N⌉ inter-node + 2 intra-node (gather, last forward)",
       .bytesSent =
           "non-leader: n/p; leader: (N−1)/N · n inter (up to about twice that for some leaders "
           "when N is not a power of two) + (G−1)(p−1)/p · n intra",
       .cost = "2α_i + n/p · β_i + ⌈lg N⌉α_e + (N−1)/N · nβ_e + (p−1)/p · nβ_i per "
               "leader-GPU link, the forwarding overlapped with the exchange",
       .winsWhen = "many nodes with one NIC each, small and medium buffers: ⌈lg N⌉ inter-node "
                   "rounds and only leaders on the network"},
  };
}

}  // namespace chorus::algorithms
