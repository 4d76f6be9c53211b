// Ring algorithms: allreduce.ring, allgather.ring, reducescatter.ring, built from the ring
// ReduceScatter / AllGather helpers of seed 000 Figure 3(b).
//
// Algorithm (ring AllReduce, seed 000 §7.1.1), R ranks, chunk factor R, in place:
//   1. ReduceScatter: chunk c starts on rank c+1 and is reduced into ranks c+2, ..., c
//      (R-1 hops); rank c then holds the full sum of chunk c.
//   2. AllGather: the sum of chunk c travels c -> c+1 -> ... -> c-1 (R-1 copies).
//
//      step:   1      2      3           (R = 4, chunk 0; '+' = reduce, '=' = copy)
//      RS:   r1 -+-> r2 -+-> r3 -+-> r0
//      AG:   r0 -=-> r1 -=-> r2 -=-> r3
//
// `channels` > 1 spreads the one logical ring over several channels: chunk c's hops use
// channel c % channels, so successive transfers on every link alternate channels, as the
// msccl-tools allreduce_a100_ring example does. `instances` replicates the whole program.
// AllGather is out of place (own input copied into the output first); ReduceScatter is out of
// place (ring reduce in the input buffer, then each rank copies its reduced block out), like
// msccl-tools' *_ring_outofplace examples.
#include <numeric>
#include <vector>

#include "algorithms/common.h"
#include "algorithms/families.h"
#include "algorithms/ring_helpers.h"

namespace chorus::algorithms {
namespace {

RingOptions ringOptions(const BuildArgs& args, lang::Buffer buffer) {
  RingOptions options;
  options.buffer = buffer;
  options.channelsPerRing = args.param("channels");
  return options;
}

std::unique_ptr<lang::Program> buildAllReduceRing(const std::string& name, const BuildArgs& args) {
  const int size = args.ranks;
  auto program =
      std::make_unique<lang::Program>(name, lang::allReduce(size, size, true), args.programOptions);
  const std::vector<int> ranks = allRanks(size);
  const RingOptions options = ringOptions(args, lang::Buffer::input);
  ringReduceScatter(*program, ranks, 0, 1, options);
  ringAllGather(*program, ranks, 0, 1, options);
  return program;
}

std::unique_ptr<lang::Program> buildAllGatherRing(const std::string& name, const BuildArgs& args) {
  const int size = args.ranks;
  auto program =
      std::make_unique<lang::Program>(name, lang::allGather(size, 1, false), args.programOptions);
  for (int r = 0; r < size; ++r) {
    program->chunk(r, lang::Buffer::input, 0).copy(r, lang::Buffer::output, r);
  }
  ringAllGather(*program, allRanks(size), 0, 1, ringOptions(args, lang::Buffer::output));
  return program;
}

std::unique_ptr<lang::Program> buildReduceScatterRing(const std::string& name,
                                                      const BuildArgs& args) {
  const int size = args.ranks;
  auto program = std::make_unique<lang::Program>(name, lang::reduceScatter(size, 1, false),
                                                 args.programOptions);
  ringReduceScatter(*program, allRanks(size), 0, 1, ringOptions(args, lang::Buffer::input));
  for (int r = 0; r < size; ++r) {
    program->chunk(r, lang::Buffer::input, r).copy(r, lang::Buffer::output, 0);
  }
  return program;
}

}  // namespace

std::vector<AlgorithmInfo> ringAlgorithms() {
  return {
      {.name = "allreduce.ring",
       .collective = "allreduce",
       .description = "ring ReduceScatter then ring AllGather, in place, R chunks per rank",
       .citation = "seed 000 §7.1.1, Figure 3(b)",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {channelsParam()},
       .build = &buildAllReduceRing,
       .steps = "2(p−1)",
       .bytesSent = "2(p−1)/p · n",
       .cost = "2(p−1)α + 2(p−1)/p · nβ + (p−1)/p · nγ",
       .winsWhen = "large buffers: bandwidth-optimal, one neighbour per step"},
      {.name = "allgather.ring",
       .collective = "allgather",
       .description = "ring AllGather, out of place (own input copied to the output first)",
       .citation = "seed 000 Figure 3(b) AllGather",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {channelsParam()},
       .build = &buildAllGatherRing,
       .steps = "p−1",
       .bytesSent = "(p−1)/p · n",
       .cost = "(p−1)α + (p−1)/p · nβ",
       .winsWhen = "large buffers"},
      {.name = "reducescatter.ring",
       .collective = "reducescatter",
       .description = "ring ReduceScatter in the input buffer, result copied to the output",
       .citation = "seed 000 Figure 3(b) ReduceScatter",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {channelsParam()},
       .build = &buildReduceScatterRing,
       .steps = "p−1",
       .bytesSent = "(p−1)/p · n",
       .cost = "(p−1)α + (p−1)/p · n(β + γ)",
       .winsWhen = "large buffers"},
  };
}

}  // namespace chorus::algorithms
