// alltonext: the custom AllToNext collective (seed 000 §7.4; rank i's input ends in rank
// i+1's output, the last rank sends nothing) for N nodes x G GPUs, chunk factor G, with the
// cross-node transfer spread over every GPU's network link like msccl-tools'
// alltonext_forward.
//
// Algorithm, rank = node*G + gpu:
//   1. Neighbours on one node: rank r copies its G input chunks to rank r+1's output directly.
//   2. Node boundary n -> n+1 (source s = n*G+G-1, destination d = (n+1)*G): part g of s's
//      input travels  s -> local GPU n*G+g (scratch) -> remote GPU (n+1)*G+g (scratch) -> d.
//      Hops that would stay on one rank are skipped: part G-1 leaves from s itself, part 0
//      lands on d itself.
//
//      node n:   g0    g1   ...  g(G-1)=s        s scatters its parts over node n's GPUs
//                 |     |          |             G parallel inter-node transfers
//      node n+1: g0=d  g1   ...  g(G-1)          the parts gather on d's output
//
// Relay scratch: slot 0 holds an outgoing part (on node n), slot 1 an incoming part (on node
// n+1) when the same GPU also relays outgoing; otherwise the incoming part uses slot 0.
#include <vector>

#include "algorithms/families.h"

namespace chorus::algorithms {
namespace {

std::unique_ptr<lang::Program> buildAllToNext(const std::string& name, const BuildArgs& args) {
  const int nodes = args.nodes;
  const int gpus = args.gpusPerNode;
  const int size = nodes * gpus;
  auto program =
      std::make_unique<lang::Program>(name, lang::allToNext(size, gpus), args.programOptions);
  // Whether GPU g of node n relays an outgoing part (node n is not last; g is not the sender).
  auto relaysOutgoing = [&](int n, int g) { return n + 1 < nodes && g != gpus - 1; };

  for (int src = 0; src + 1 < size; ++src) {
    const int node = src / gpus;
    if (src % gpus != gpus - 1) {
      program->chunk(src, lang::Buffer::input, 0, gpus).copy(src + 1, lang::Buffer::output, 0);
      continue;
    }
    const int dst = src + 1;
    for (int g = 0; g < gpus; ++g) {
      lang::ChunkRef part = program->chunk(src, lang::Buffer::input, g);
      const int localRelay = node * gpus + g;
      if (localRelay != src) part = part.copy(localRelay, lang::Buffer::scratch, 0);
      const int remoteRelay = (node + 1) * gpus + g;
      if (remoteRelay == dst) {
        part.copy(dst, lang::Buffer::output, g);
        continue;
      }
      const int slot = relaysOutgoing(node + 1, g) ? 1 : 0;
      part = part.copy(remoteRelay, lang::Buffer::scratch, slot);
      part.copy(dst, lang::Buffer::output, g);
    }
  }
  return program;
}

}  // namespace

std::vector<AlgorithmInfo> allToNextAlgorithms() {
  return {
      {.name = "alltonext",
       .collective = "alltonext",
       .description = "send to the next rank; node boundaries split over all G GPUs' links",
       .citation = "seed 000 §7.4",
       .shape = Shape::nodes,
       .minRanks = 2,
       .params = {},
       .build = &buildAllToNext,
       .steps = "1 inside a node, 3 at a node boundary",
       .bytesSent = "n",
       .cost = "α + nβ_i inside a node; 3α + n/G · (2β_i + β_e) at a boundary",
       .winsWhen = "pipeline-parallel sends between nodes with G network links"},
  };
}

}  // namespace chorus::algorithms
