// allgather.hierarchical: hierarchical AllGather with overlap (MVAPICH all-to-all Algorithm 1,
// §III-A)
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
//
// Parameter `channels` = k (default 1: the algorithm above, unchanged): chunk factor k, and k
// instances of steps 1-3 with their own leaders, so k NICs per node cross nodes instead of one
// (k = G: every rail). Node n's output block holds G·k parts, GPU-major (GPU i's part p at
// position i·k + p, the collective's layout); instance c owns positions [c·G, (c+1)·G) of
// every node's block, and its leader is GPU floor(c·G/k), the GPU holding the first of them
// (distinct GPUs for k <= G; at k = G each GPU leads the instance of its own parts, so
// nothing is gathered). Instance c's gather and leader exchange run on channel 2c, its
// forwards on channel 2c+1 (separate channels keep a forward from fusing with a receive).
// Instance c's share of consecutive nodes is not contiguous when k > 1, so each exchanged
// group and each forward is one message per node.
//
//      G = 2, k = 2, node block [a0 a1 | b0 b1]:  instance 0 = a0 a1 (leader GPU 0),
//      instance 1 = b0 b1 (leader GPU 1): GPU 0's NIC and GPU 1's NIC each carry half.
//
// Parameter `forward` (default chunk, the paper's Alg. 1 lines 13-19): every message of steps
// 1-3 carries ONE chunk (one part): the leader sends GPU j's chunk across nodes as soon as that
// chunk has arrived (line 15's MPI_Wait on it alone), receives the partner's h·G chunks as h·G
// messages and forwards each to the local GPUs as it lands, so chunk i is forwarded before
// chunk i+1 has arrived. forward=aggregated is the coarser form above: one message per contiguous
// range. Pairing is XOR at every level in both forms (Alg. 1 line 11, dst = node ^ offset).
#include <algorithm>
#include <utility>
#include <vector>

#include "algorithms/common.h"
#include "algorithms/families.h"

namespace chorus::algorithms {
namespace {

// The shape of one build: N x G GPUs, k parts per rank (= instances).
struct Layout {
  int nodes = 1;
  int gpus = 1;
  int parts = 1;
  bool perChunk = false;  // forward=chunk: one message per part
  int rank(int node, int gpu) const { return node * gpus + gpu; }
  // Output index of part `part` of GPU `gpu` of node `node`.
  int index(int node, int gpu, int part) const { return rank(node, gpu) * parts + part; }
  // Instance c's share of nodes [first, first + count) as (index, count) runs of the output,
  // one per node, merged where contiguous (always when k = 1).
  std::vector<std::pair<int, int>> runs(int instance, int first, int count) const {
    std::vector<std::pair<int, int>> result;
    for (int n = first; n < first + count; ++n) {
      const int index = n * gpus * parts + instance * gpus;
      if (!result.empty() && result.back().first + result.back().second == index)
        result.back().second += gpus;
      else
        result.emplace_back(index, gpus);
    }
    return perChunk ? splitRuns(result) : result;
  }
  // The messages of [lo, hi): one, or one per part with forward=chunk.
  std::vector<std::pair<int, int>> messages(int lo, int hi) const {
    if (lo >= hi) return {};
    return perChunk ? splitRuns({{lo, hi - lo}}) : std::vector<std::pair<int, int>>{{lo, hi - lo}};
  }

 private:
  static std::vector<std::pair<int, int>> splitRuns(const std::vector<std::pair<int, int>>& runs) {
    std::vector<std::pair<int, int>> result;
    for (const auto& [index, count] : runs)
      for (int i = index; i < index + count; ++i)
        result.emplace_back(i, 1);
    return result;
  }
};

// Channel hints of instance c: none with one instance (the compiler chooses, as before) and
// none with forward=chunk, whose per-chunk hops the compiler spreads over channels itself.
lang::OpOptions onChannel(const Layout& layout, int instance, int channel) {
  if (layout.parts == 1 || layout.perChunk) return {};
  return {.channel = 2 * instance + channel};
}

constexpr int kForwardChunk = 1;  // `forward` values: 0 aggregated, 1 chunk

constexpr int kLeaderChannel = 0;   // gather and exchange between leaders
constexpr int kForwardChannel = 1;  // leader to the other local GPUs

// Step 1 and its forwards for node n: own parts to the output, each instance's
// parts to its leader, each leader forwarding its share (less the receiver's own parts).
void gatherNode(lang::Program& program, const Layout& layout, int n) {
  const int gpus = layout.gpus;
  const int parts = layout.parts;
  for (int g = 0; g < gpus; ++g) {
    const int rank = layout.rank(n, g);
    const lang::ChunkRef own = program.chunk(rank, lang::Buffer::input, 0, parts);
    own.copy(rank, lang::Buffer::output, layout.index(n, g, 0));
    for (int c = 0; c < parts; ++c) {
      const int leader = instanceLeader(c, gpus, parts);
      const PartRange range = partsOfInstance(g, c, gpus, parts);
      if (g == leader || range.count == 0) continue;
      for (const auto& [first, count] : layout.messages(range.first, range.first + range.count))
        own.slice(first, count)
            .copy(layout.rank(n, leader), lang::Buffer::output, layout.index(n, g, first),
                  onChannel(layout, c, kLeaderChannel));
    }
  }
  for (int c = 0; c < parts; ++c) {
    const int leader = instanceLeader(c, gpus, parts);
    const int first = layout.index(n, 0, 0) + c * gpus;  // instance c's share: [first, last)
    const int last = first + gpus;
    for (int g = 0; g < gpus; ++g) {
      if (g == leader) continue;
      const int ownFirst = layout.index(n, g, 0);
      const int ownLast = ownFirst + parts;
      for (const auto& [lo, hi] : {std::pair{first, std::min(last, ownFirst)},
                                   std::pair{std::max(first, ownLast), last}}) {
        for (const auto& [index, count] : layout.messages(lo, hi))
          program.chunk(layout.rank(n, leader), lang::Buffer::output, index, count)
              .copy(layout.rank(n, g), lang::Buffer::output, index,
                    onChannel(layout, c, kForwardChannel));
      }
    }
  }
}

// Steps 2-3 for instance c: recursive doubling between the leaders, each forwarding what it
// receives to its local GPUs.
void exchangeLeaders(lang::Program& program, const Layout& layout, int c) {
  const int nodes = layout.nodes;
  const int leader = instanceLeader(c, layout.gpus, layout.parts);
  for (int half = 1; half < nodes; half *= 2) {
    for (int n = 0; n < nodes; ++n) {
      const int groupBase = n / half * half;
      const int siblingBase = groupBase ^ half;
      if (siblingBase >= nodes) continue;
      const int siblingSize = std::min(siblingBase + half, nodes) - siblingBase;
      const int partner = n ^ half;
      const int sender = partner < nodes ? partner : siblingBase + (n - groupBase) % siblingSize;
      const std::vector<std::pair<int, int>> runs = layout.runs(c, siblingBase, siblingSize);
      for (const auto& [index, count] : runs) {
        program.chunk(layout.rank(sender, leader), lang::Buffer::output, index, count)
            .copy(layout.rank(n, leader), lang::Buffer::output, index,
                  onChannel(layout, c, kLeaderChannel));
      }
      for (const auto& [index, count] : runs) {
        const lang::ChunkRef range =
            program.chunk(layout.rank(n, leader), lang::Buffer::output, index, count);
        for (int g = 0; g < layout.gpus; ++g)
          if (g != leader)
            range.copy(layout.rank(n, g), lang::Buffer::output, index,
                       onChannel(layout, c, kForwardChannel));
      }
    }
  }
}

std::unique_ptr<lang::Program> buildAllGatherHierarchical(const std::string& name,
                                                          const BuildArgs& args) {
  const Layout layout{.nodes = args.nodes,
                      .gpus = args.gpusPerNode,
                      .parts = args.param("channels"),
                      .perChunk = args.param("forward") == kForwardChunk};
  auto program = std::make_unique<lang::Program>(
      name, lang::allGather(args.ranks, layout.parts, false), args.programOptions);
  for (int n = 0; n < layout.nodes; ++n)
    gatherNode(*program, layout, n);
  for (int c = 0; c < layout.parts; ++c)
    exchangeLeaders(*program, layout, c);
  return program;
}

}  // namespace

std::vector<AlgorithmInfo> hierarchicalAllGatherAlgorithms() {
  return {
      {.name = "allgather.hierarchical",
       .collective = "allgather",
       .description = "GPUs send to their node leader, leaders run recursive doubling across "
                      "nodes (any N) and forward each range to local GPUs as it arrives",
       .citation = "MVAPICH all-to-all Algorithm 1 (Hierarchical allgather + overlap), §III-A",
       .shape = Shape::nodes,
       .minRanks = 2,
       .params = {instanceChannelsParam(
                      "k instances, each on 1/k of every rank's data with its own leader GPU "
                      "floor(c·G/k) per node, so k NICs cross nodes; channels 2c and 2c+1"),
                  forwardParam("chunk (Alg. 1): one message per chunk, each forwarded as it "
                               "arrives; aggregated: one message per contiguous range")},
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
