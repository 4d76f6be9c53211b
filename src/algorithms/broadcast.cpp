// Bandwidth-oriented Broadcasts, any number of ranks, any root, out of place (the root copies
// its input to its own output first). Ranks are renumbered relative to the root:
// v = (rank - root) mod R.
//
// broadcast.chain (xCCL notes "Ring": data "split into multiple chunks and transferred one by
// one", the pipelined chain; GC3 §5.1 chunk pipelining):
//   chunk factor k = pipeline. Piece j travels v = 0 -> 1 -> ... -> R-1; every piece is its own
//   message, so while v forwards piece j it already receives piece j+1. R-1 hops fill the
//   pipeline, then one piece arrives per step: T = (R + k - 2)(α + n/k · β).
//
//      R = 4, k = 3:   step 1: 0 -p0-> 1
//                      step 2: 0 -p1-> 1 -p0-> 2
//                      step 3: 0 -p2-> 1 -p1-> 2 -p0-> 3     (then p1, p2 drain into 3)
//
// broadcast.scatter-allgather (xCCL notes "Binomial Tree" scatter + "Ring" All-Gather; van de
// Geijn's long-message Broadcast, MPICH's scatter_ring_allgather; costs in docs/sources.md
// "α-β-γ closed forms"):
//   chunk factor R; block b = chunk b belongs to relative rank b.
//   1. Binomial scatter: for mask = P/2, ..., 1 (P = the smallest power of two >= R) every v
//      that is a multiple of 2*mask sends blocks v+mask .. min(v+2*mask, R)-1 (one message) to
//      v + mask. Afterwards v holds at least its own block v.
//   2. Ring AllGather: block b travels v = b -> b+1 -> ... -> b-1 (mod R). A hop into a rank
//      that already holds block b (the root, or a scatter relay) is left out and the next hop
//      sends that rank's own copy, so no rank receives a block twice.
//   T = (⌈lg R⌉ + R - 1)α + 2(R-1)/R · nβ: the binomial tree's bandwidth term ⌈lg R⌉ · nβ
//   shrinks to about 2nβ.
//
//      R = 4:  scatter  0 =[b2 b3]=> 2        ring  0 -> 1 -> 2 -> 3 -> 0
//                       0 =[b1]=> 1, 2 =[b3]=> 3    (b0 from 0, b1 from 1, ...)
#include <algorithm>
#include <vector>

#include "algorithms/common.h"
#include "algorithms/families.h"

namespace chorus::algorithms {
namespace {

std::unique_ptr<lang::Program> buildBroadcastChain(const std::string& name, const BuildArgs& args) {
  const int size = args.ranks;
  const int root = rootOf(name, args);
  const int pieces = args.param("pipeline");
  auto program = std::make_unique<lang::Program>(name, lang::broadcast(size, pieces, root, false),
                                                 args.programOptions);
  auto rankOf = [&](int v) { return (v + root) % size; };
  program->chunk(root, lang::Buffer::input, 0, pieces).copy(root, lang::Buffer::output, 0);
  for (int piece = 0; piece < pieces; ++piece) {
    lang::ChunkRef held = program->chunk(root, lang::Buffer::input, piece);
    for (int v = 1; v < size; ++v)
      held = held.copy(rankOf(v), lang::Buffer::output, piece);
  }
  return program;
}

std::unique_ptr<lang::Program> buildBroadcastScatterAllGather(const std::string& name,
                                                              const BuildArgs& args) {
  const int size = args.ranks;
  const int root = rootOf(name, args);
  auto program = std::make_unique<lang::Program>(name, lang::broadcast(size, size, root, false),
                                                 args.programOptions);
  auto rankOf = [&](int v) { return (v + root) % size; };
  // Where relative rank v keeps its blocks: the root sends from its input.
  auto blocks = [&](int v, int first, int count) {
    return v == 0 ? program->chunk(root, lang::Buffer::input, first, count)
                  : program->chunk(rankOf(v), lang::Buffer::output, first, count);
  };
  program->chunk(root, lang::Buffer::input, 0, size).copy(root, lang::Buffer::output, 0);

  // holds[v][b]: relative rank v has block b once the scatter is done.
  std::vector<std::vector<bool>> holds(static_cast<std::size_t>(size),
                                       std::vector<bool>(static_cast<std::size_t>(size), false));
  holds[0].assign(static_cast<std::size_t>(size), true);
  for (int mask = powerOfTwoAtLeast(size) / 2; mask >= 1; mask /= 2) {
    for (int v = 0; v + mask < size; v += 2 * mask) {
      const int first = v + mask;
      const int count = std::min(v + 2 * mask, size) - first;
      blocks(v, first, count).copy(rankOf(first), lang::Buffer::output, first);
      for (int b = first; b < first + count; ++b)
        holds[static_cast<std::size_t>(first)][static_cast<std::size_t>(b)] = true;
    }
  }

  for (int b = 0; b < size; ++b) {
    int from = b;
    for (int step = 1; step < size; ++step) {
      const int to = (b + step) % size;
      if (!holds[static_cast<std::size_t>(to)][static_cast<std::size_t>(b)])
        blocks(from, b, 1).copy(rankOf(to), lang::Buffer::output, b);
      from = to;
    }
  }
  return program;
}

}  // namespace

std::vector<AlgorithmInfo> broadcastAlgorithms() {
  return {
      {.name = "broadcast.chain",
       .collective = "broadcast",
       .description = "pipelined chain root -> root+1 -> ...: the buffer in `pipeline` pieces",
       .citation = "xCCL notes Ring (pipelined chunks); GC3 §5.1",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {rootParam(),
                  {.name = "pipeline",
                   .defaultValue = 8,
                   .minValue = 1,
                   .maxValue = 64,
                   .description = "pieces the buffer is cut into; each is its own message"}},
       .build = &buildBroadcastChain,
       .steps = "p + k − 2 (k = pipeline pieces)",
       .bytesSent = "n (the last rank: 0)",
       .cost = "(p + k − 2)(α + n/k · β)",
       .winsWhen = "large buffers at small p or on a line: every link carries n exactly once"},
      {.name = "broadcast.scatter-allgather",
       .collective = "broadcast",
       .description = "binomial scatter of p blocks from the root, then a ring AllGather",
       .citation = "xCCL notes Binomial Tree + Ring All-Gather; docs/sources.md \"α-β-γ closed "
                   "forms\" (van de Geijn)",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {rootParam()},
       .build = &buildBroadcastScatterAllGather,
       .steps = "⌈lg p⌉ + p − 1",
       .bytesSent = "≤ 2(p−1)/p · n (the root sends the most)",
       .cost = "(⌈lg p⌉ + p − 1)α + 2(p−1)/p · nβ",
       .winsWhen = "large buffers at larger p: about 2nβ instead of ⌈lg p⌉ · nβ"},
  };
}

}  // namespace chorus::algorithms
