// Direct algorithms: every block travels straight from its source to its destination rank in
// one hop. allgather.direct and reducescatter.direct send all p−1 messages of a rank at once
// (xCCL notes, the one-step "direct" collectives; ASTRA-sim's "direct" on a fully connected
// fabric); reducescatter.pairwise sends the same messages in p−1 ordered steps (xCCL
// notes "Ring" section: the Pairwise-Exchange Reduce-Scatter; Thakur, Rabenseifner & Gropp 2005).
// All are out of place, chunk factor 1 (one chunk per block) and work for any p.
#include <vector>

#include "algorithms/families.h"

namespace chorus::algorithms {
namespace {

using lang::Buffer;

// allgather.direct. Algorithm:
//   1. Rank r copies its input to its output block r.
//   2. Rank r sends its input to block r of every other rank's output (p−1 messages at once).
//
//      r0:[x0] --x0--> r1.out[0], r2.out[0]     (every rank at the same time)
std::unique_ptr<lang::Program> buildAllGatherDirect(const std::string& name,
                                                    const BuildArgs& args) {
  const int size = args.ranks;
  auto program =
      std::make_unique<lang::Program>(name, lang::allGather(size, 1, false), args.programOptions);
  for (int r = 0; r < size; ++r) {
    const lang::ChunkRef own = program->chunk(r, Buffer::input, 0);
    own.copy(r, Buffer::output, r);
    for (int peer = 0; peer < size; ++peer)
      if (peer != r) own.copy(peer, Buffer::output, r);
  }
  return program;
}

// reducescatter.direct. Algorithm:
//   1. Every rank q sends its block d to rank d (p−1 messages at once): rank 0's copy lands
//      in d's output, rank q >= 1 lands in d's scratch slot q−1, or q−2 when 0 < d < q. Rank 0
//      copies its own block 0 into its output.
//   2. Rank d adds the other copies to its output in rank order 1, 2, ..., p−1 (its own input
//      block at position d), so the sum is x0 + x1 + ... + x(p−1) in that order for every
//      block, the order allreduce.oneshot uses.
//
//      r1:[a b c] --a--> r0.scratch, --c--> r2.scratch     r0.out = a0 + a1 + a2
std::unique_ptr<lang::Program> buildReduceScatterDirect(const std::string& name,
                                                        const BuildArgs& args) {
  const int size = args.ranks;
  auto program = std::make_unique<lang::Program>(name, lang::reduceScatter(size, 1, false),
                                                 args.programOptions);
  // Scratch slot of sender q >= 1 on owner d: the senders 1..p−1 other than d, in order.
  auto slotOf = [](int sender, int owner) {
    return sender < owner || owner == 0 ? sender - 1 : sender - 2;
  };
  for (int sender = 0; sender < size; ++sender) {
    for (int owner = 0; owner < size; ++owner) {
      const lang::ChunkRef block = program->chunk(sender, Buffer::input, owner);
      if (sender == 0)
        block.copy(owner, Buffer::output, 0);
      else if (sender != owner)
        block.copy(owner, Buffer::scratch, slotOf(sender, owner));
    }
  }
  for (int owner = 0; owner < size; ++owner) {
    lang::ChunkRef sum = program->chunk(owner, Buffer::output, 0);
    for (int sender = 1; sender < size; ++sender)
      sum = sum.reduce(sender == owner
                           ? program->chunk(owner, Buffer::input, owner)
                           : program->chunk(owner, Buffer::scratch, slotOf(sender, owner)));
  }
  return program;
}

// reducescatter.pairwise. Algorithm (p−1 steps):
//   0. Rank r copies its own block r into its output.
//   s. Step s = 1..p−1: rank r sends block (r+s) mod p to rank r+s, which receive-reduces it
//      straight into its output; rank r receives block r from rank r−s the same way. Each step
//      is a permutation: every rank sends one message and receives one.
//
//      p = 4, step 1: r0 -b1-> r1 -b2-> r2 -b3-> r3 -b0-> r0
//             step 2: r0 -b2-> r2, r1 -b3-> r3, r2 -b0-> r0, r3 -b1-> r1
//             step 3: r0 -b3-> r3 -b2-> r2 -b1-> r1 -b0-> r0
//
// Schedule: step s runs on channel s−1 (OpOptions::channel), and the trace lists the steps in
// order. A threadblock has one channel, so every rank gets one threadblock per step, with send
// peer r+s and recv peer r−s. The runtime runs each threadblock's steps in order once per tile
// (src/runtime/interpreter.cpp), and a receive-reduce of step s waits for step s−1's (same
// output chunk), so with one threadblock per step the p−1 steps form a pipeline over the tiles:
// step s of tile t+1 runs while step s+1 reduces tile t. Without the hints, placement depends
// on trace order: traced rank by rank, assignChannels pairs the send to q with the receive from
// q on one threadblock (its bidirectional pairing, openSlotFor in
// src/compiler/assign_channels.cpp), which then holds step s's send and step p−s's receive, so
// the step-1 send of tile t+1 waits for the last receive-reduce of tile t and tiles no longer
// overlap. Manual threadblocks (sendTb = recvTb = s−1) would express the same placement, but
// the compiler keys them by (rank, id) across instances, so `--instances 2` would not compile;
// channel hints are renumbered per instance.
// Compared with reducescatter.direct, blocks are receive-reduced straight into the output as
// they arrive (no scratch, no separate reduction pass). The sends of one tile still start
// together (a threadblock's send has no dependency, so the list schedule puts it first), so
// the order buys the pipelined reduction, not fewer concurrent messages; the price is p−1
// dependent receive-reduces per tile instead of one round.
std::unique_ptr<lang::Program> buildReduceScatterPairwise(const std::string& name,
                                                          const BuildArgs& args) {
  const int size = args.ranks;
  auto program = std::make_unique<lang::Program>(name, lang::reduceScatter(size, 1, false),
                                                 args.programOptions);
  for (int r = 0; r < size; ++r)
    program->chunk(r, Buffer::input, r).copy(r, Buffer::output, 0);
  for (int step = 1; step < size; ++step) {
    const lang::OpOptions options{.channel = step - 1};
    for (int r = 0; r < size; ++r) {
      const int from = (r - step + size) % size;
      program->chunk(r, Buffer::output, 0).reduce(program->chunk(from, Buffer::input, r), options);
    }
  }
  return program;
}

}  // namespace

std::vector<AlgorithmInfo> directAlgorithms() {
  return {
      {.name = "allgather.direct",
       .collective = "allgather",
       .description = "every rank sends its block straight to every other rank, out of place",
       .citation = "xCCL notes (direct All-Gather, one step)",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {},
       .build = &buildAllGatherDirect,
       .steps = "1 (p−1 concurrent)",
       .bytesSent = "(p−1)/p · n",
       .cost = "α + (p−1)/p · nβ (p−1 links at once); (p−1)α + (p−1)/p · nβ on one port",
       .winsWhen = "small and medium buffers on a fully connected fabric"},
      {.name = "reducescatter.direct",
       .collective = "reducescatter",
       .description = "every rank sends block d straight to rank d, which sums in rank order",
       .citation = "xCCL notes (direct Reduce-Scatter, one step)",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {},
       .build = &buildReduceScatterDirect,
       .steps = "1 (p−1 concurrent)",
       .bytesSent = "(p−1)/p · n",
       .cost = "α + (p−1)/p · nβ + (p−1)/p · nγ (p−1 links at once); (p−1)α + … on one port",
       .winsWhen = "small buffers on a fully connected fabric; results in rank order"},
      {.name = "reducescatter.pairwise",
       .collective = "reducescatter",
       .description = "pairwise exchange: p−1 steps, step s sends block r+s to rank r+s",
       .citation = "xCCL notes Ring (Pairwise-Exchange Reduce-Scatter); Thakur, Rabenseifner & "
                   "Gropp 2005",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {},
       .build = &buildReduceScatterPairwise,
       .steps = "p−1",
       .bytesSent = "(p−1)/p · n",
       .cost = "(p−1)α + (p−1)/p · n(β + γ)",
       .winsWhen = "large buffers at any p: one send and one receive per step, no scratch"},
  };
}

}  // namespace chorus::algorithms
