// AllToAll algorithms: alltoall.two-step (N nodes x G GPUs, seed 000 §7.3 Figure 8) and
// alltoall.direct (direct, any number of ranks). Both out of place, chunk factor 1.
//
// Algorithm (two-step), rank (n,g) = n*G + g; chunk (n,g) of every input goes to rank (n,g):
//   1. For a destination (n,g) on another node than the source (m,i), the source first copies
//      its chunk to its local peer (m,g), into scratch slot (n,i) of (m,g).
//   2. (m,g) then sends the G chunks gathered for node n as one aggregated count-G transfer to
//      (n,g)'s output at m*G: one inter-node message per GPU pair instead of G.
//   Destinations on the source's own node get a direct copy into their output.
//
//      node m: (m,0) (m,1) .. (m,G-1)  --gather chunks for (n,g) on (m,g)-->  (m,g).scratch
//      (m,g).scratch[n*G .. n*G+G)  ==one IB transfer==>  (n,g).output[m*G .. m*G+G)
//
// Figure 8 indexes (m,g)'s scratch by (n,i) = n*G+i; nodes n > m shift down by one slot here
// so the scratch holds only the (N-1)*G chunks that really pass through it.
//
// Algorithm (all-pairs): every rank r copies input chunk d straight to rank d's output r.
#include <vector>

#include "algorithms/families.h"

namespace chorus::algorithms {
namespace {

std::unique_ptr<lang::Program> buildTwoStep(const std::string& name, const BuildArgs& args) {
  const int nodes = args.nodes;
  const int gpus = args.gpusPerNode;
  auto program = std::make_unique<lang::Program>(name, lang::allToAll(nodes * gpus, 1, false),
                                                 args.programOptions);
  auto rankOf = [gpus](int node, int gpu) { return node * gpus + gpu; };
  // Scratch slot on a rank of node m for chunks headed to node n (n != m).
  auto slotOf = [](int n, int m) { return n < m ? n : n - 1; };

  for (int n = 0; n < nodes; ++n) {
    for (int g = 0; g < gpus; ++g) {
      for (int m = 0; m < nodes; ++m) {
        for (int i = 0; i < gpus; ++i) {
          lang::ChunkRef c = program->chunk(rankOf(m, i), lang::Buffer::input, rankOf(n, g));
          if (n == m) {
            c.copy(rankOf(n, g), lang::Buffer::output, rankOf(m, i));
          } else {
            c.copy(rankOf(m, g), lang::Buffer::scratch, slotOf(n, m) * gpus + i);
          }
        }
        if (n != m) {
          program->chunk(rankOf(m, g), lang::Buffer::scratch, slotOf(n, m) * gpus, gpus)
              .copy(rankOf(n, g), lang::Buffer::output, m * gpus);
        }
      }
    }
  }
  return program;
}

std::unique_ptr<lang::Program> buildAllPairs(const std::string& name, const BuildArgs& args) {
  const int size = args.ranks;
  auto program =
      std::make_unique<lang::Program>(name, lang::allToAll(size, 1, false), args.programOptions);
  for (int src = 0; src < size; ++src) {
    for (int dst = 0; dst < size; ++dst) {
      program->chunk(src, lang::Buffer::input, dst).copy(dst, lang::Buffer::output, src);
    }
  }
  return program;
}

}  // namespace

std::vector<AlgorithmInfo> allToAllAlgorithms() {
  return {
      {.name = "alltoall.two-step",
       .collective = "alltoall",
       .description = "gather per remote node in scratch, one aggregated transfer per GPU pair",
       .citation = "seed 000 §7.3 Figure 8",
       .shape = Shape::nodes,
       .minRanks = 2,
       .params = {},
       .build = &buildTwoStep,
       .steps = "2",
       .bytesSent = "(G−1)/G · n intra + (N−1)/N · n inter",
       .cost = "(G−1)α_i + (G−1)/G · nβ_i + (N−1)α_e + (N−1)/N · nβ_e",
       .winsWhen = "many nodes, small messages: N−1 instead of (N−1)G inter-node messages per GPU"},
      {.name = "alltoall.direct",
       .collective = "alltoall",
       .description = "direct: every rank copies chunk d straight to rank d's output",
       .citation = "seed 000 §7.3 (naive one-step AllToAll)",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {},
       .build = &buildAllPairs,
       .steps = "1 (p−1 concurrent)",
       .bytesSent = "(p−1)/p · n",
       .cost = "α + (p−1)/p · nβ (p−1 links at once); (p−1)α + (p−1)/p · nβ on one port",
       .winsWhen = "small and medium buffers, fully connected fabric"},
  };
}

}  // namespace chorus::algorithms
