// Ring algorithms: allreduce.ring, allgather.ring, reducescatter.ring, built from the ring
// ReduceScatter / AllGather helpers of GC3 Figure 3(b).
//
// Algorithm (ring AllReduce, GC3 §7.1.1), R ranks, chunk factor R, in place:
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
//
// Rail rings: given a node shape (--nodes N --gpus-per-node G, N > 1) and channels = k > 1,
// each channel c instead runs its own ring railRing(c) (rail_rings.h) over a 1/k slice of the
// data, as NCCL's channels do: the ring enters every node at GPU c mod G and leaves it from
// GPU (c-1) mod G, so k <= G channels cross node boundaries through k distinct NICs, each
// carrying 1/k of the inter-node bytes. Chunk factor: AllReduce R·k (channel c owns chunks
// c·R .. c·R+R-1), AllGather and ReduceScatter k per rank (channel c owns index j = c of
// every rank's block). With --ranks, N = 1 or k = 1 the flat layout above runs unchanged.
// AllGather is out of place (own input copied into the output first); ReduceScatter is out of
// place (ring reduce in the input buffer, then each rank copies its reduced block out), like
// msccl-tools' *_ring_outofplace examples.
#include <numeric>
#include <vector>

#include "algorithms/common.h"
#include "algorithms/families.h"
#include "algorithms/rail_rings.h"
#include "algorithms/ring_helpers.h"

namespace chorus::algorithms {
namespace {

RingOptions ringOptions(const BuildArgs& args, lang::Buffer buffer) {
  RingOptions options;
  options.buffer = buffer;
  options.channelsPerRing = args.param("channels");
  return options;
}

// Channel c's rail ring, working on `buffer` on channel c; block p of the ring (rank ring[p])
// starts at blockIndex(ring[p], p).
template <typename BlockIndex>
RingOptions railRingOptions(lang::Buffer buffer, int channel, const std::vector<int>& ring,
                            BlockIndex blockIndex) {
  RingOptions options;
  options.buffer = buffer;
  options.channel = channel;
  for (std::size_t p = 0; p < ring.size(); ++p)
    options.blockIndex.push_back(blockIndex(ring[p], static_cast<int>(p)));
  return options;
}

std::unique_ptr<lang::Program> buildAllReduceRails(const std::string& name, const BuildArgs& args) {
  const int size = args.ranks;
  const int channels = args.param("channels");
  auto program = std::make_unique<lang::Program>(name, lang::allReduce(size, size * channels, true),
                                                 args.programOptions);
  for (int c = 0; c < channels; ++c) {
    const std::vector<int> ring = railRing(c, args.nodes, args.gpusPerNode);
    const RingOptions options =
        railRingOptions(lang::Buffer::input, c, ring, [&](int, int p) { return c * size + p; });
    ringReduceScatter(*program, ring, 0, 1, options);
    ringAllGather(*program, ring, 0, 1, options);
  }
  return program;
}

std::unique_ptr<lang::Program> buildAllGatherRails(const std::string& name, const BuildArgs& args) {
  const int size = args.ranks;
  const int channels = args.param("channels");
  auto program = std::make_unique<lang::Program>(name, lang::allGather(size, channels, false),
                                                 args.programOptions);
  for (int c = 0; c < channels; ++c) {
    // Each channel copies its own slice of the rank's input into the output in its own
    // threadblock: the k copies run side by side, and no ring waits for the whole input.
    for (int r = 0; r < size; ++r) {
      program->chunk(r, lang::Buffer::input, c)
          .copy(r, lang::Buffer::output, r * channels + c, {.channel = c});
    }
    const std::vector<int> ring = railRing(c, args.nodes, args.gpusPerNode);
    ringAllGather(*program, ring, 0, 1,
                  railRingOptions(lang::Buffer::output, c, ring,
                                  [&](int rank, int) { return rank * channels + c; }));
  }
  return program;
}

std::unique_ptr<lang::Program> buildReduceScatterRails(const std::string& name,
                                                       const BuildArgs& args) {
  const int size = args.ranks;
  const int channels = args.param("channels");
  auto program = std::make_unique<lang::Program>(name, lang::reduceScatter(size, channels, false),
                                                 args.programOptions);
  for (int c = 0; c < channels; ++c) {
    const std::vector<int> ring = railRing(c, args.nodes, args.gpusPerNode);
    ringReduceScatter(*program, ring, 0, 1,
                      railRingOptions(lang::Buffer::input, c, ring,
                                      [&](int rank, int) { return rank * channels + c; }));
  }
  for (int r = 0; r < size; ++r) {
    for (int c = 0; c < channels; ++c)
      program->chunk(r, lang::Buffer::input, r * channels + c).copy(r, lang::Buffer::output, c);
  }
  return program;
}

std::unique_ptr<lang::Program> buildAllReduceRing(const std::string& name, const BuildArgs& args) {
  if (usesRailRings(args)) return buildAllReduceRails(name, args);
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
  if (usesRailRings(args)) return buildAllGatherRails(name, args);
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
  if (usesRailRings(args)) return buildReduceScatterRails(name, args);
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
       .citation = "GC3 §7.1.1, Figure 3(b)",
       .shape = Shape::ranks,
       .alsoByNodes = true,
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
       .citation = "GC3 Figure 3(b) AllGather",
       .shape = Shape::ranks,
       .alsoByNodes = true,
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
       .citation = "GC3 Figure 3(b) ReduceScatter",
       .shape = Shape::ranks,
       .alsoByNodes = true,
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
