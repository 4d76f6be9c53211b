// Flat AllToAll algorithms (any number of ranks p, out of place, chunk factor 1): alltoall.direct,
// alltoall.pairwise and alltoall.scatter-destination (MVAPICH all-to-all Table I). All three move
// the same p(p−1) chunks straight from source to destination; they differ only in the schedule,
// which is what a chorus program can say about them. Node-shaped AllToAlls are in
// alltoall_hierarchical.cpp.
//
// What a schedule is on chorus's runtime (docs/compiler.md, docs/runtime.md): a threadblock has
// one send peer and one receive peer and runs its steps in order, once per tile; a rank's
// executor visits its threadblocks in id order and runs each as far as its FIFOs allow; every
// (sender, receiver, channel) connection is its own FIFO. So the only levers are which send
// and which receive share a threadblock, and the order of the threadblocks.
//
// Algorithm (direct): rank r copies input chunk d straight to rank d's output r. Threadblocks
// are placed automatically: one per peer d, holding the send to d and the receive from d, in
// ascending d, so every rank but 0 starts with rank 0 (the first visits all hit one receiver).
//
// Algorithm (pairwise, p−1 steps; Thakur et al., docs/sources.md "α-β-γ closed forms"):
//   step s = 1..p−1: rank r sends chunk r+s to rank r+s and receives from rank r−s (mod p);
//   with `xor` = 1 (p a power of two) both partners are r XOR s, a true exchange.
//   Step s is threadblock s−1 on every rank (sendTb = recvTb = s−1): in each step every rank
//   sends one message and receives one, a permutation, so no receiver is a hot spot. Inside a
//   threadblock the send of tile t+1 waits for the receive of tile t, so each step proceeds in
//   lock-step; the steps themselves overlap (a step blocked on its receive lets the executor run
//   the next step's threadblock), like pairwise with non-blocking requests.
//
//      rank:     0    1    2    3          (p = 4, shift pairing)
//      step 1:   0->1 1->2 2->3 3->0
//      step 2:   0->2 1->3 2->0 3->1
//      step 3:   0->3 1->0 2->1 3->2
//
// Algorithm (scatter-destination; MPICH's medium-size AllToAll via MVAPICH all-to-all Table I): the
// same staggered destinations r+1, r+2, …, r+p−1 (and sources r−1, r−2, …), but sends and receives
// live in separate threadblocks (sends 0..p−2, receives p−1..2p−3), so a rank pushes all its
// chunks as fast as the FIFOs take them and never holds a send back behind a receive.
// Its `window` (MPICH's block of posted requests) cannot be expressed: a threadblock has a
// single send peer (compiler/assign_channels.cpp SlotTable::place), so a bound over several
// destinations would need a cross-threadblock wait, and the DSL creates waits only from data
// hazards between chunks (lang/program.cpp Program::record); a send completes once its message
// is in the peer's FIFO (runtime/interpreter.cpp tryStep), so even a staging-slot hazard would
// bound posted sends, not messages in flight. Per-connection FIFOs (8 slots) are the only bound.
#include <vector>

#include <fmt/format.h>

#include "algorithms/common.h"
#include "algorithms/families.h"
#include "support/error.h"

namespace chorus::algorithms {
namespace {

std::unique_ptr<lang::Program> newAllToAll(const std::string& name, const BuildArgs& args) {
  return std::make_unique<lang::Program>(name, lang::allToAll(args.ranks, 1, false),
                                         args.programOptions);
}

std::unique_ptr<lang::Program> buildDirect(const std::string& name, const BuildArgs& args) {
  const int size = args.ranks;
  auto program = newAllToAll(name, args);
  for (int src = 0; src < size; ++src) {
    for (int dst = 0; dst < size; ++dst) {
      program->chunk(src, lang::Buffer::input, dst).copy(dst, lang::Buffer::output, src);
    }
  }
  return program;
}

std::unique_ptr<lang::Program> buildPairwise(const std::string& name, const BuildArgs& args) {
  const int size = args.ranks;
  const bool exchange = args.param("xor") != 0;
  if (exchange && powerOfTwoAtMost(size) != size) {
    throw OptionError(fmt::format(
        "{}: xor pairing needs a power-of-two number of ranks, got {}; use --set xor=0 (shift "
        "pairing, any rank count) or {} or {} ranks",
        name, size, powerOfTwoAtMost(size), powerOfTwoAtLeast(size)));
  }
  auto program = newAllToAll(name, args);
  for (int r = 0; r < size; ++r)
    program->chunk(r, lang::Buffer::input, r).copy(r, lang::Buffer::output, r);
  for (int step = 1; step < size; ++step) {
    const lang::OpOptions placement{.sendTb = step - 1, .recvTb = step - 1};
    for (int r = 0; r < size; ++r) {
      const int dst = exchange ? (r ^ step) : (r + step) % size;
      program->chunk(r, lang::Buffer::input, dst).copy(dst, lang::Buffer::output, r, placement);
    }
  }
  return program;
}

std::unique_ptr<lang::Program> buildScatterDestination(const std::string& name,
                                                       const BuildArgs& args) {
  const int size = args.ranks;
  auto program = newAllToAll(name, args);
  for (int r = 0; r < size; ++r)
    program->chunk(r, lang::Buffer::input, r).copy(r, lang::Buffer::output, r);
  for (int step = 1; step < size; ++step) {
    const lang::OpOptions placement{.sendTb = step - 1, .recvTb = size - 2 + step};
    for (int r = 0; r < size; ++r) {
      const int dst = (r + step) % size;
      program->chunk(r, lang::Buffer::input, dst).copy(dst, lang::Buffer::output, r, placement);
    }
  }
  return program;
}

}  // namespace

std::vector<AlgorithmInfo> allToAllAlgorithms() {
  return {
      {.name = "alltoall.direct",
       .collective = "alltoall",
       .description = "direct: every rank copies chunk d straight to rank d's output",
       .citation = "GC3 §7.3 (naive one-step AllToAll); MVAPICH all-to-all Table I (Direct)",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {},
       .build = &buildDirect,
       .steps = "1 (p−1 concurrent)",
       .bytesSent = "(p−1)/p · n",
       .cost = "α + (p−1)/p · nβ (p−1 links at once); (p−1)α + (p−1)/p · nβ on one port",
       .winsWhen = "small and medium buffers, fully connected fabric"},
      {.name = "alltoall.pairwise",
       .collective = "alltoall",
       .description = "p−1 steps, step s sends to r+s and receives from r−s (or exchanges with r "
                      "XOR s), one threadblock per step",
       .citation = "MVAPICH all-to-all Table I (Pairwise [15]); xCCL notes / docs/sources.md "
                   "\"α-β-γ closed forms\" pairwise exchange",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {{.name = "xor",
                   .defaultValue = 0,
                   .minValue = 0,
                   .maxValue = 1,
                   .description = "1: step s exchanges with rank r XOR s (p a power of two); 0: "
                                  "sends to r+s, receives from r−s"}},
       .build = &buildPairwise,
       .steps = "p−1",
       .bytesSent = "(p−1)/p · n",
       .cost = "(p−1)α + (p−1)/p · nβ",
       .winsWhen = "medium and large buffers on one port per rank: every step is a permutation, "
                   "so no receiver is a hot spot"},
      {.name = "alltoall.scatter-destination",
       .collective = "alltoall",
       .description = "all p−1 sends posted at once to staggered destinations r+1, r+2, …; "
                      "sends and receives in separate threadblocks",
       .citation = "MVAPICH all-to-all Table I (Scatter Destination [14])",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {},
       .build = &buildScatterDestination,
       .steps = "1 (p−1 concurrent, staggered)",
       .bytesSent = "(p−1)/p · n",
       .cost = "α + (p−1)/p · nβ (p−1 links at once); (p−1)α + (p−1)/p · nβ on one port",
       .winsWhen = "medium buffers: sends never wait for receives, and the staggered order keeps "
                   "the first messages of all ranks on distinct receivers"},
  };
}

}  // namespace chorus::algorithms
