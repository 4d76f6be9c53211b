// alltonext: the custom AllToNext collective (GC3 §7.4) for N nodes x G GPUs, chunk
// factor G, with the cross-node transfer spread over every GPU's network link like msccl-tools'
// alltonext_forward / alltonext_backward. direction=forward (the default): rank i's input ends
// in rank i+1's output, the last rank sends nothing. direction=backward (the
// "alltonext-backward" collective): rank i's input ends in rank i-1's output, rank 0 sends
// nothing.
//
// Algorithm, rank = node*G + gpu, next(r) = r+1 (forward) or r-1 (backward):
//   1. Neighbours on one node: rank r copies its G input chunks to next(r)'s output directly.
//   2. Node boundary n -> m = n±1 (source s: n's rank whose next is on m, destination d =
//      next(s)): part g of s's input travels  s -> local GPU n*G+g (scratch) -> remote GPU
//      m*G+g (scratch) -> d. Hops that would stay on one rank are skipped: the part whose local
//      GPU is s leaves from s itself, the one whose remote GPU is d lands on d itself.
//
//      forward                                   backward
//      node n:   g0    g1   ...  g(G-1)=s        node n-1: g0    g1   ...  g(G-1)=d
//                 |     |          |                        ^     ^          ^
//                 v     v          v                        |     |          |
//      node n+1: g0=d  g1   ...  g(G-1)          node n:   g0=s  g1   ...  g(G-1)
//      s scatters its parts over node n's GPUs, G parallel inter-node transfers, the parts
//      gather on d's output.
//
// Relay scratch: slot 0 holds an outgoing part (on the sending node), slot 1 an incoming part
// (on the receiving node) when the same GPU also relays outgoing; otherwise the incoming part
// uses slot 0.
#include <vector>

#include "algorithms/families.h"

namespace chorus::algorithms {
namespace {

constexpr int kForward = 0;
constexpr int kBackward = 1;

std::unique_ptr<lang::Program> buildAllToNext(const std::string& name, const BuildArgs& args) {
  const int nodes = args.nodes;
  const int gpus = args.gpusPerNode;
  const int size = nodes * gpus;
  const bool backward = args.param("direction") == kBackward;
  const int step = backward ? -1 : 1;
  auto program = std::make_unique<lang::Program>(
      name, backward ? lang::allToNextBackward(size, gpus) : lang::allToNext(size, gpus),
      args.programOptions);
  // The GPU of node n whose next rank is on the neighbouring node.
  auto boundarySender = [&](int n) { return backward ? n * gpus : n * gpus + gpus - 1; };
  // Whether GPU g of node n relays an outgoing part (node n has a next node; g is not the sender).
  auto relaysOutgoing = [&](int n, int g) {
    const int next = n + step;
    return next >= 0 && next < nodes && n * gpus + g != boundarySender(n);
  };

  for (int src = 0; src < size; ++src) {
    const int dst = src + step;
    if (dst < 0 || dst >= size) continue;
    const int node = src / gpus;
    const int dstNode = dst / gpus;
    if (dstNode == node) {
      program->chunk(src, lang::Buffer::input, 0, gpus).copy(dst, lang::Buffer::output, 0);
      continue;
    }
    for (int g = 0; g < gpus; ++g) {
      lang::ChunkRef part = program->chunk(src, lang::Buffer::input, g);
      const int localRelay = node * gpus + g;
      if (localRelay != src) part = part.copy(localRelay, lang::Buffer::scratch, 0);
      const int remoteRelay = dstNode * gpus + g;
      if (remoteRelay == dst) {
        part.copy(dst, lang::Buffer::output, g);
        continue;
      }
      const int slot = relaysOutgoing(dstNode, g) ? 1 : 0;
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
       .description = "send to the next rank (direction=backward: to the previous one, the "
                      "alltonext-backward collective); node boundaries split over all G GPUs' "
                      "links",
       .citation = "GC3 §7.4",
       .shape = Shape::nodes,
       .minRanks = 2,
       .params = {{.name = "direction",
                   .defaultValue = kForward,
                   .minValue = kForward,
                   .maxValue = kBackward,
                   .description = "forward: rank r sends to r+1 (alltonext); backward: rank r "
                                  "sends to r-1 (alltonext-backward)",
                   .valueNames = {"forward", "backward"}}},
       .build = &buildAllToNext,
       .steps = "1 inside a node, 3 at a node boundary",
       .bytesSent = "n",
       .cost = "α + nβ_i inside a node; 3α + n/G · (2β_i + β_e) at a boundary",
       .winsWhen = "pipeline-parallel sends between nodes with G network links"},
  };
}

}  // namespace chorus::algorithms
