// allreduce.hierarchical: N nodes x G GPUs, exactly GC3's running example (§2,
// Figures 2-3; channels as in §5.1).
//
// Algorithm, rank = node*G + gpu, chunk factor N*G, in place:
//   1. Intra-node ring ReduceScatter per node over its G GPUs, N chunks per hop: GPU g ends
//      with the node's partial sum of chunks g*N .. g*N+N-1.
//   2. Inter-node ring ReduceScatter per GPU index g over the N ranks {n*G+g}, offset g*N,
//      count 1: rank n*G+g ends with the global sum of chunk g*N+n.
//   3. Inter-node ring AllGather, same rings: every rank n*G+g has global sums g*N..g*N+N-1.
//   4. Intra-node ring AllGather per node, N chunks per hop: every GPU has every sum.
//
//        node 0: g0 g1 g2   -- 1. ring RS within the node (N chunks per hop), channel 0
//                 |  |  |   -- 2./3. ring RS + AG across nodes per GPU index, channel 1
//        node 1: g0 g1 g2   -- 4. ring AG within the node, channel 2
//
// Parameter `schedule`: 1 (default) puts the phases on channels 0/1/2 as §5.1 does; 0 leaves
// every channel to the compiler.
//
// Parameter `channels` = k (default 1: the algorithm above, unchanged): k instances of it, each
// on 1/k of the data, so k threadblocks per GPU drive NVLink and every NIC (the inter-node
// rings already use every GPU's NIC, and each instance loads them equally).
//   schedule=1: chunk factor N*G*k; instance c runs steps 1-4 on chunks c*N*G .. (c+1)*N*G-1
//     (contiguous, so every transfer keeps its count) with its phases on channels 3c, 3c+1,
//     3c+2. The MSCCL XML format caps channels at 32, so XML export takes k <= 10.
//   schedule=0: parallelize(k) over the whole program (GC3 §5.1 chunk parallelization):
//     the compiler cuts every chunk into k parts and gives each replica its own channels.
#include <vector>

#include "algorithms/common.h"
#include "algorithms/families.h"
#include "algorithms/ring_helpers.h"

namespace chorus::algorithms {
namespace {

constexpr int kIntraReduceScatterChannel = 0;
constexpr int kInterNodeChannel = 1;
constexpr int kIntraAllGatherChannel = 2;
constexpr int kChannelsPerInstance = 3;

std::vector<int> nodeRanks(int node, int gpus) {
  std::vector<int> ranks;
  for (int g = 0; g < gpus; ++g)
    ranks.push_back(node * gpus + g);
  return ranks;
}

std::vector<int> crossRanks(int gpu, int nodes, int gpus) {
  std::vector<int> ranks;
  for (int n = 0; n < nodes; ++n)
    ranks.push_back(n * gpus + gpu);
  return ranks;
}

std::unique_ptr<lang::Program> buildHierarchical(const std::string& name, const BuildArgs& args) {
  const int nodes = args.nodes;
  const int gpus = args.gpusPerNode;
  const int block = nodes * gpus;
  const int channels = args.param("channels");
  const bool manual = args.param("schedule") == 1;
  const int instances = manual ? channels : 1;
  auto program = std::make_unique<lang::Program>(
      name, lang::allReduce(block, block * instances, true), args.programOptions);
  const lang::Program::ParallelScope parallel = program->parallelize(manual ? 1 : channels);

  for (int c = 0; c < instances; ++c) {
    const int base = c * block;
    auto onChannel = [manual, c](int channel) {
      RingOptions options;
      options.channel = manual ? c * kChannelsPerInstance + channel : -1;
      return options;
    };
    for (int n = 0; n < nodes; ++n) {
      ringReduceScatter(*program, nodeRanks(n, gpus), base, nodes,
                        onChannel(kIntraReduceScatterChannel));
    }
    for (int g = 0; g < gpus; ++g) {
      const std::vector<int> cross = crossRanks(g, nodes, gpus);
      ringReduceScatter(*program, cross, base + g * nodes, 1, onChannel(kInterNodeChannel));
      ringAllGather(*program, cross, base + g * nodes, 1, onChannel(kInterNodeChannel));
    }
    for (int n = 0; n < nodes; ++n) {
      ringAllGather(*program, nodeRanks(n, gpus), base, nodes, onChannel(kIntraAllGatherChannel));
    }
  }
  return program;
}

}  // namespace

std::vector<AlgorithmInfo> hierarchicalAlgorithms() {
  return {
      {.name = "allreduce.hierarchical",
       .collective = "allreduce",
       .description = "intra-node ring RS, inter-node ring RS+AG per GPU, intra-node ring AG",
       .citation = "GC3 §2 Figure 3, §5.1",
       .shape = Shape::nodes,
       .minRanks = 2,
       .params = {{.name = "schedule",
                   .defaultValue = 1,
                   .minValue = 0,
                   .maxValue = 1,
                   .description = "0 = compiler picks channels, 1 = channels 0/1/2 per phase"},
                  instanceChannelsParam(
                      "k instances, each on 1/k of the data; schedule=1: instance c on chunks "
                      "c·NG.., phases on channels 3c..3c+2; schedule=0: parallelize(k)")},
       .build = &buildHierarchical,
       .steps = "2(G−1) + 2(N−1)",
       .bytesSent = "2(G−1)/G · n intra + 2(N−1)/(NG) · n inter",
       .cost = "2(G−1)(α_i + n/G · β_i) + 2(N−1)(α_e + n/(NG) · β_e) + γ terms",
       .winsWhen = "several nodes: inter-node traffic is 1/G of the ring's"},
  };
}

}  // namespace chorus::algorithms
