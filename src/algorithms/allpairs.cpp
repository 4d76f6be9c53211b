// allreduce.allpairs: two-step all-pairs AllReduce for small buffers (GC3 §7.1.2; the
// same shape as msccl-tools' allreduce_a100_allpairs, whose 8-rank output has 64 chunks).
//
// Algorithm, R ranks, chunk factor R*R, in place. Rank r owns block r = chunks r*R .. r*R+R-1.
//   1. Scatter: every rank q sends its copy of block r (R chunks, one aggregated transfer) to
//      rank r's scratch, slot q' = (q < r ? q : q-1), at scratch chunks q'*R .. q'*R+R-1.
//   2. Local reduce: rank r adds the R-1 scratch copies into its own block r.
//   3. Broadcast: rank r sends its reduced block r (R chunks) to every other rank's block r.
//
//        step 1 (scatter to scratch)        step 3 (broadcast sums)
//      r0:[B0 B1 B2] --B1--> r1.scratch    r1:[.. S1 ..] --S1--> r0, r2
//                    --B2--> r2.scratch    (every rank does both, all pairs at once)
//
// Two communication steps instead of the ring's 2R-2, the same bytes on the wire.
#include <vector>

#include "algorithms/families.h"

namespace chorus::algorithms {
namespace {

std::unique_ptr<lang::Program> buildAllReduceAllPairs(const std::string& name,
                                                      const BuildArgs& args) {
  const int size = args.ranks;
  auto program = std::make_unique<lang::Program>(name, lang::allReduce(size, size * size, true),
                                                 args.programOptions);
  auto slotOf = [](int sender, int receiver) { return sender < receiver ? sender : sender - 1; };

  // 1. Every rank sends block `owner` of its input to the owner's scratch.
  for (int sender = 0; sender < size; ++sender) {
    for (int owner = 0; owner < size; ++owner) {
      if (sender == owner) continue;
      program->chunk(sender, lang::Buffer::input, owner * size, size)
          .copy(owner, lang::Buffer::scratch, slotOf(sender, owner) * size);
    }
  }
  // 2. Each owner reduces the R-1 received copies into its own block.
  for (int owner = 0; owner < size; ++owner) {
    for (int j = 0; j < size; ++j) {
      for (int slot = 0; slot + 1 < size; ++slot) {
        program->chunk(owner, lang::Buffer::input, owner * size + j)
            .reduce(program->chunk(owner, lang::Buffer::scratch, slot * size + j));
      }
    }
  }
  // 3. Each owner sends its reduced block to every other rank.
  for (int owner = 0; owner < size; ++owner) {
    for (int peer = 0; peer < size; ++peer) {
      if (peer == owner) continue;
      program->chunk(owner, lang::Buffer::input, owner * size, size)
          .copy(peer, lang::Buffer::input, owner * size);
    }
  }
  return program;
}

// allreduce.oneshot: every rank sends its whole buffer to every other rank, and every rank
// reduces all R copies itself (xCCL notes: the one-step "direct" AllReduce; NCCL's and MSCCL++'s
// one-shot kernels for small messages). One communication step: the least latency, at R-1
// times the ring's bytes, so it wins only for small buffers.
//
// Algorithm, R ranks, chunk factor 1, in place:
//   1. Rank q sends its input to scratch slot (q < r ? q : q-1) of every other rank r.
//   2. Rank r adds the R copies in rank order 0, 1, .., R-1 (its own input at position r), so
//      every rank performs the same additions in the same order and all ranks' results are
//      bitwise identical even for floating point.
//
//      r0:[x0] --x0--> r1.scratch, r2.scratch      every rank: x0 + x1 + x2 (in that order)
std::unique_ptr<lang::Program> buildAllReduceOneShot(const std::string& name,
                                                     const BuildArgs& args) {
  const int size = args.ranks;
  auto program =
      std::make_unique<lang::Program>(name, lang::allReduce(size, 1, true), args.programOptions);
  auto slotOf = [](int sender, int receiver) { return sender < receiver ? sender : sender - 1; };
  for (int sender = 0; sender < size; ++sender)
    for (int receiver = 0; receiver < size; ++receiver)
      if (sender != receiver)
        program->chunk(sender, lang::Buffer::input, 0)
            .copy(receiver, lang::Buffer::scratch, slotOf(sender, receiver));
  for (int r = 0; r < size; ++r) {
    auto operand = [&](int k) {
      return k == r ? program->chunk(r, lang::Buffer::input, 0)
                    : program->chunk(r, lang::Buffer::scratch, slotOf(k, r));
    };
    // The running sum lives where rank 0's copy is; it ends in this rank's input.
    auto sum = operand(0);
    for (int k = 1; k < size; ++k)
      sum = sum.reduce(operand(k));
    if (r != 0) sum.copy(r, lang::Buffer::input, 0);
  }
  return program;
}

}  // namespace

std::vector<AlgorithmInfo> allPairsAlgorithms() {
  return {
      {.name = "allreduce.allpairs",
       .collective = "allreduce",
       .description = "all-pairs: scatter blocks to owners' scratch, reduce locally, send back",
       .citation = "GC3 §7.1.2",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {},
       .build = &buildAllReduceAllPairs,
       .steps = "2",
       .bytesSent = "2(p−1)/p · n",
       .cost = "2α + 2(p−1)/p · nβ + (p−1)/p · nγ (p−1 links at once)",
       .winsWhen = "small and medium buffers on a fully connected fabric"},
      {.name = "allreduce.oneshot",
       .collective = "allreduce",
       .description = "one-shot: every rank sends its buffer to all, each reduces all copies",
       .citation = "xCCL notes (direct AllReduce)",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {},
       .build = &buildAllReduceOneShot,
       .steps = "1",
       .bytesSent = "(p−1) · n",
       .cost = "α + (p−1) · nβ + (p−1) · nγ (p−1 links at once)",
       .winsWhen = "tiny buffers: the least latency; results agree bitwise"},
  };
}

}  // namespace chorus::algorithms
