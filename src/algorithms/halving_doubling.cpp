// Halving/doubling algorithms (xCCL notes "Recursive-Doubling" and "Recursive-Halving"; costs and
// the non-power-of-two handling of Thakur, Rabenseifner & Gropp 2005 as in MPICH):
// allreduce.recursive-doubling, allreduce.rabenseifner, reducescatter.recursive-halving,
// reducescatter.recursive-doubling, allgather.recursive-doubling and reduce.rabenseifner, for
// any number of ranks p.
//
// Non-power-of-two p (all six): P = 2^⌊lg p⌋ ranks form a power-of-two core and e = p − P ranks
// are extras. The first 2e ranks pair up as (2i, 2i+1); one of each pair (2i+1, or 2i when it is
// the reduce root) is core member v = i, the other is its extra; rank r >= 2e is core member
// r − e. Core member v owns a contiguous range of chunks: one chunk when the buffer is cut into
// P chunks (allreduce.rabenseifner, reduce.rabenseifner), or its pair's blocks 2v, 2v+1 (v < e)
// and its own block v + e otherwise when the buffer has one block per rank (reducescatter,
// allgather), so every message below is one contiguous aggregated transfer.
//   pre:  an extra folds its buffer into its core partner (reduce) or hands it its block.
//   core: the power-of-two algorithm among the P core members, on their ranges.
//   post: the core partner sends the extra its result (allreduce, allgather) or block
//         (reducescatter); reduce needs no post step because the root is always in the core.
//
// Recursive halving (ReduceScatter, distance and vector halving), core member v, masks
// m = P/2, P/4, ..., 1: v and u = v XOR m hold the range of their aligned group of 2m members;
// each sends u's half to u (into u's scratch) and reduces the half it keeps. Afterwards v holds
// the full reduction of its own range.
// Recursive doubling (AllGather, distance and vector doubling), m = 1, 2, ..., P/2: v sends the
// range of its aligned group of m members to v XOR m at the same buffer indices.
//
//      recursive halving, P = 4, blocks B0..B3 (r0 keeps B0B1, then B0)
//        m=2: r0 --B2B3--> r2, r2 --B0B1--> r0;   r1 <-> r3 likewise
//        m=1: r0 --B1--> r1,   r1 --B0--> r0;     r2 <-> r3 likewise
//      recursive doubling, P = 4 (r0 holds B0, then B0B1, then all four)
//        m=1: r0 --B0--> r1,   r1 --B1--> r0;     r2 <-> r3 likewise
//        m=2: r0 --B0B1--> r2, r2 --B2B3--> r0;   r1 <-> r3 likewise
//
// Recursive-doubling ReduceScatter (xCCL notes: "In step 1 of Reduce-Scatter, the data needed for
// their result in each process is not exchanged [...] (n − n/p); in step 2, the data required by
// themselves and by the processes communicated in the previous step [...] (n − 2n/p)"; MPICH's
// reduce_scatter recursive doubling), core member v, masks m = 1, 2, ..., P/2, g = v's aligned
// group of m members: v sends u = v XOR m its partial sums of every block outside g (one
// message) and adds what u sends it. Blocks of u's own group still travel and are reduced, as in
// the seed and MPICH, though u no longer needs them; afterwards v holds the full reduction of
// its own blocks. To make each message one contiguous range, every member first copies its
// buffer into a working area W rotated to start at its own first block: the blocks outside g
// are then W[first(g + m) − first(v) ..] without wrapping (first(v) lies in g).
//        P = 4, blocks B0..B3: m=1: r0 --B1B2B3--> r1, r1 --B2B3B0--> r0 (3n/4 each)
//                              m=2: r0 --B2B3-->   r2, r2 --B0B1-->   r0 (n/2 each)
//
// Buffers: AllReduce works in place in the input (received halves land in scratch and are
// reduced into the input). The out-of-place collectives never write their input: every halving
// round reduces the received half into a fresh scratch range (the last round straight into the
// output where the result belongs there), the recursive-doubling ReduceScatter reduces into its
// rotated scratch copy W (received ranges land in fresh scratch first), and the allgather
// assembles in the output.
#include <algorithm>
#include <optional>
#include <vector>

#include "algorithms/common.h"
#include "algorithms/families.h"
#include "support/error.h"

namespace chorus::algorithms {
namespace {

using lang::Buffer;

// The power-of-two core of p ranks and which chunks each core member owns.
struct Core {
  int size = 0;              // P = 2^⌊lg p⌋
  std::vector<int> rankOf;   // core member v -> rank
  std::vector<int> extraOf;  // core member v -> its folded extra rank, or -1
  std::vector<int> firstOf;  // P+1 entries: member v owns chunks firstOf[v] .. firstOf[v+1]-1
  int chunks(int v, int m) const { return firstOf[v + m] - firstOf[v]; }  // members v..v+m-1
};

enum class Ownership {
  onePerMember,  // the buffer has P chunks; member v owns chunk v
  blockPerRank,  // the buffer has p blocks; member v owns the blocks of its ranks
};

// `keep` (or -1) is a rank that must be a core member (the reduce root).
Core makeCore(int ranks, Ownership ownership, int keep = -1) {
  Core core;
  core.size = powerOfTwoAtMost(ranks);
  const int extras = ranks - core.size;
  for (int v = 0; v < core.size; ++v) {
    if (v < extras) {
      const bool evenStays = keep == 2 * v;
      core.rankOf.push_back(evenStays ? 2 * v : 2 * v + 1);
      core.extraOf.push_back(evenStays ? 2 * v + 1 : 2 * v);
    } else {
      core.rankOf.push_back(v + extras);
      core.extraOf.push_back(-1);
    }
  }
  for (int v = 0; v <= core.size; ++v) {
    if (ownership == Ownership::onePerMember)
      core.firstOf.push_back(v);
    else
      core.firstOf.push_back(v < extras ? 2 * v : v + extras);
  }
  return core;
}

// Where a core member's working chunks live: chunk c at (buffer, offset + c) on its rank.
struct Region {
  Buffer buffer = Buffer::input;
  int offset = 0;
};

// Hands out fresh scratch chunks per rank, so no scratch range is ever reused.
class ScratchAllocator {
 public:
  explicit ScratchAllocator(int ranks) : next_(static_cast<std::size_t>(ranks), 0) {}
  int take(int rank, int count) {
    const int base = next_[static_cast<std::size_t>(rank)];
    next_[static_cast<std::size_t>(rank)] += count;
    return base;
  }

 private:
  std::vector<int> next_;
};

lang::ChunkRef chunksAt(lang::Program& program, const Core& core, int v, const Region& region,
                        int first, int count) {
  return program.chunk(core.rankOf[v], region.buffer, region.offset + first, count);
}

// Pre step of the reducing collectives: every extra folds its whole buffer (`chunks` chunks of
// its input) into its core partner. In place: the partner receive-reduces into its input.
// Otherwise the extra's buffer lands in the partner's scratch, where the partner adds its own
// input. Returns each member's region.
std::vector<Region> foldExtras(lang::Program& program, const Core& core, int chunks, bool inPlace,
                               ScratchAllocator& scratch) {
  std::vector<Region> regions(static_cast<std::size_t>(core.size));
  for (int v = 0; v < core.size; ++v) {
    const int rank = core.rankOf[v], extra = core.extraOf[v];
    if (extra < 0) continue;
    if (inPlace) {
      program.chunk(rank, Buffer::input, 0, chunks)
          .reduce(program.chunk(extra, Buffer::input, 0, chunks));
    } else {
      const int base = scratch.take(rank, chunks);
      program.chunk(extra, Buffer::input, 0, chunks)
          .copy(rank, Buffer::scratch, base)
          .reduce(program.chunk(rank, Buffer::input, 0, chunks));
      regions[v] = {Buffer::scratch, base};
    }
  }
  return regions;
}

// Recursive halving ReduceScatter over the core (distance and vector halving). In place, each
// member reduces the received half into its region. Otherwise the half lands in a fresh scratch
// range (in the last round in finalRegions[v] when given) and the member adds its own copy
// there, so its input is never written. Afterwards member v holds the full reduction of its own
// chunks in regions[v].
void recursiveHalving(lang::Program& program, const Core& core, std::vector<Region>& regions,
                      bool inPlace, ScratchAllocator& scratch,
                      const std::vector<std::optional<Region>>& finalRegions = {}) {
  for (int mask = core.size / 2; mask >= 1; mask /= 2) {
    // 1. Every member sends its partner the half the partner keeps (one message).
    std::vector<Region> landing(static_cast<std::size_t>(core.size));
    for (int v = 0; v < core.size; ++v) {
      const int half = v & ~(mask - 1);  // first member of the half v keeps
      const int first = core.firstOf[half], count = core.chunks(half, mask);
      if (!inPlace && mask == 1 && !finalRegions.empty() && finalRegions[v])
        landing[v] = *finalRegions[v];
      else
        landing[v] = {Buffer::scratch, scratch.take(core.rankOf[v], count) - first};
      chunksAt(program, core, v ^ mask, regions[v ^ mask], first, count)
          .copy(core.rankOf[v], landing[v].buffer, landing[v].offset + first);
    }
    // 2. Every member reduces the received half with its own copy.
    for (int v = 0; v < core.size; ++v) {
      const int half = v & ~(mask - 1);
      const int first = core.firstOf[half], count = core.chunks(half, mask);
      const lang::ChunkRef incoming = chunksAt(program, core, v, landing[v], first, count);
      const lang::ChunkRef own = chunksAt(program, core, v, regions[v], first, count);
      if (inPlace) {
        own.reduce(incoming);
      } else {
        incoming.reduce(own);
        regions[v] = landing[v];
      }
    }
  }
}

// Recursive doubling AllGather over the core (distance and vector doubling) in `buffer`, where
// member v holds its own chunks at their own indices; afterwards every member holds all of them.
void recursiveDoubling(lang::Program& program, const Core& core, Buffer buffer) {
  for (int mask = 1; mask < core.size; mask *= 2) {
    for (int v = 0; v < core.size; ++v) {
      const int group = v & ~(mask - 1);
      const int first = core.firstOf[group], count = core.chunks(group, mask);
      program.chunk(core.rankOf[v], buffer, first, count)
          .copy(core.rankOf[v ^ mask], buffer, first);
    }
  }
}

// Post step: every core partner sends the extra its whole `buffer` (`chunks` chunks).
void unfoldExtras(lang::Program& program, const Core& core, Buffer buffer, int chunks) {
  for (int v = 0; v < core.size; ++v)
    if (core.extraOf[v] >= 0)
      program.chunk(core.rankOf[v], buffer, 0, chunks).copy(core.extraOf[v], buffer, 0);
}

// allreduce.recursive-doubling, chunk factor 1, in place. Round m: every core member sends its
// whole buffer to member v XOR m's scratch, then adds the partner's buffer to its own.
//
//      P = 4:  m=1: r0 <-x-> r1, r2 <-x-> r3      every rank: x0+x1+x2+x3 after lg P rounds
//              m=2: r0 <-x-> r2, r1 <-x-> r3
std::unique_ptr<lang::Program> buildAllReduceRecursiveDoubling(const std::string& name,
                                                               const BuildArgs& args) {
  const int size = args.ranks;
  auto program =
      std::make_unique<lang::Program>(name, lang::allReduce(size, 1, true), args.programOptions);
  const Core core = makeCore(size, Ownership::onePerMember);
  ScratchAllocator scratch(size);
  foldExtras(*program, core, 1, true, scratch);
  for (int mask = 1; mask < core.size; mask *= 2) {
    std::vector<int> received(static_cast<std::size_t>(core.size));
    for (int v = 0; v < core.size; ++v) {
      received[v] = scratch.take(core.rankOf[v], 1);
      program->chunk(core.rankOf[v ^ mask], Buffer::input, 0)
          .copy(core.rankOf[v], Buffer::scratch, received[v]);
    }
    for (int v = 0; v < core.size; ++v)
      program->chunk(core.rankOf[v], Buffer::input, 0)
          .reduce(program->chunk(core.rankOf[v], Buffer::scratch, received[v]));
  }
  unfoldExtras(*program, core, Buffer::input, 1);
  return program;
}

// allreduce.rabenseifner, chunk factor P, in place: fold, recursive-halving ReduceScatter (core
// member v ends with the sum of chunk v), recursive-doubling AllGather, unfold.
std::unique_ptr<lang::Program> buildAllReduceRabenseifner(const std::string& name,
                                                          const BuildArgs& args) {
  const int size = args.ranks;
  const Core core = makeCore(size, Ownership::onePerMember);
  auto program = std::make_unique<lang::Program>(name, lang::allReduce(size, core.size, true),
                                                 args.programOptions);
  ScratchAllocator scratch(size);
  std::vector<Region> regions = foldExtras(*program, core, core.size, true, scratch);
  recursiveHalving(*program, core, regions, true, scratch);
  recursiveDoubling(*program, core, Buffer::input);
  unfoldExtras(*program, core, Buffer::input, core.size);
  return program;
}

// reducescatter.recursive-halving, chunk factor 1, out of place: fold, recursive halving on
// blocks (member v ends with the sums of its ranks' blocks), then each block goes to its rank's
// output (a member with one block reduces it straight into its output in the last round).
std::unique_ptr<lang::Program> buildReduceScatterRecursiveHalving(const std::string& name,
                                                                  const BuildArgs& args) {
  const int size = args.ranks;
  auto program = std::make_unique<lang::Program>(name, lang::reduceScatter(size, 1, false),
                                                 args.programOptions);
  const Core core = makeCore(size, Ownership::blockPerRank);
  ScratchAllocator scratch(size);
  std::vector<Region> regions = foldExtras(*program, core, size, false, scratch);
  std::vector<std::optional<Region>> finalRegions(static_cast<std::size_t>(core.size));
  for (int v = 0; v < core.size; ++v)
    if (core.extraOf[v] < 0) finalRegions[v] = Region{Buffer::output, -core.firstOf[v]};
  recursiveHalving(*program, core, regions, false, scratch, finalRegions);
  for (int v = 0; v < core.size; ++v) {
    if (core.extraOf[v] < 0) continue;
    for (int block = core.firstOf[v]; block < core.firstOf[v + 1]; ++block)
      chunksAt(*program, core, v, regions[v], block, 1).copy(block, Buffer::output, 0);
  }
  return program;
}

// reducescatter.recursive-doubling, chunk factor 1, out of place: fold, rotated copy W on every
// core member, lg P recursive-doubling rounds of one message each (see the header), then each
// block goes from its member's W to its rank's output (the extra's block is the post step).
std::unique_ptr<lang::Program> buildReduceScatterRecursiveDoubling(const std::string& name,
                                                                   const BuildArgs& args) {
  const int size = args.ranks;
  auto program = std::make_unique<lang::Program>(name, lang::reduceScatter(size, 1, false),
                                                 args.programOptions);
  const Core core = makeCore(size, Ownership::blockPerRank);
  ScratchAllocator scratch(size);
  std::vector<Region> regions = foldExtras(*program, core, size, false, scratch);
  // W of member v: W[i] = block (firstOf[v] + i) mod size, at scratch[work[v] + i].
  std::vector<int> work(static_cast<std::size_t>(core.size));
  auto position = [&](int v, int block) { return (block - core.firstOf[v] + size) % size; };
  for (int v = 0; v < core.size; ++v) {
    const int rank = core.rankOf[v], first = core.firstOf[v];
    work[v] = scratch.take(rank, size);
    chunksAt(*program, core, v, regions[v], first, size - first)
        .copy(rank, Buffer::scratch, work[v]);
    if (first > 0)
      chunksAt(*program, core, v, regions[v], 0, first)
          .copy(rank, Buffer::scratch, work[v] + size - first);
  }
  for (int mask = 1; mask < core.size; mask *= 2) {
    // 1. Every member sends its partner the blocks outside its own group, as one message.
    std::vector<int> landing(static_cast<std::size_t>(core.size));
    std::vector<int> startBlock(static_cast<std::size_t>(core.size));
    std::vector<int> count(static_cast<std::size_t>(core.size));
    for (int v = 0; v < core.size; ++v) {
      const int group = v & ~(mask - 1);
      const int u = v ^ mask;
      startBlock[v] = core.firstOf[group + mask] % size;
      count[v] = size - core.chunks(group, mask);
      const int from = position(v, startBlock[v]);
      CHORUS_INTERNAL_ASSERT(from + count[v] <= size,
                             "a recursive-doubling range wraps around the rotated buffer");
      landing[v] = scratch.take(core.rankOf[u], count[v]);
      program->chunk(core.rankOf[v], Buffer::scratch, work[v] + from, count[v])
          .copy(core.rankOf[u], Buffer::scratch, landing[v]);
    }
    // 2. Every member adds the received range into its W: at most two pieces, split where the
    //    range wraps around the member's rotation.
    for (int v = 0; v < core.size; ++v) {
      const int u = v ^ mask;
      for (int done = 0; done < count[u];) {
        const int at = position(v, (startBlock[u] + done) % size);
        const int piece = std::min(count[u] - done, size - at);
        program->chunk(core.rankOf[v], Buffer::scratch, work[v] + at, piece)
            .reduce(program->chunk(core.rankOf[v], Buffer::scratch, landing[u] + done, piece));
        done += piece;
      }
    }
  }
  for (int v = 0; v < core.size; ++v)
    for (int block = core.firstOf[v]; block < core.firstOf[v + 1]; ++block)
      program->chunk(core.rankOf[v], Buffer::scratch, work[v] + position(v, block))
          .copy(block, Buffer::output, 0);
  return program;
}

// allgather.recursive-doubling, chunk factor 1, out of place: extras hand their block to their
// core partner's output, core members gather all blocks by recursive doubling in the output,
// and every partner sends the whole output to its extra.
std::unique_ptr<lang::Program> buildAllGatherRecursiveDoubling(const std::string& name,
                                                               const BuildArgs& args) {
  const int size = args.ranks;
  auto program =
      std::make_unique<lang::Program>(name, lang::allGather(size, 1, false), args.programOptions);
  const Core core = makeCore(size, Ownership::blockPerRank);
  for (int v = 0; v < core.size; ++v) {
    const int rank = core.rankOf[v];
    program->chunk(rank, Buffer::input, 0).copy(rank, Buffer::output, rank);
    const int extra = core.extraOf[v];
    if (extra >= 0) program->chunk(extra, Buffer::input, 0).copy(rank, Buffer::output, extra);
  }
  recursiveDoubling(*program, core, Buffer::output);
  unfoldExtras(*program, core, Buffer::output, size);
  return program;
}

// reduce.rabenseifner, chunk factor P, out of place, root kept in the core: fold, recursive
// halving (member v reduces chunk v straight into its output in the last round), then a
// binomial gather of the chunks to the root. Gather round m = 1, 2, ..., P/2: in every aligned
// group of 2m members the half without the root's bit m sends its m chunks (one message) from
// its member w with w mod m == root mod m to the other half's such member; at the end the root
// holds all P chunks.
//
//      gather, P = 4, root member 0:   m=1: 1 -> 0 (chunk 1), 3 -> 2 (chunk 3)
//                                      m=2: 2 -> 0 (chunks 2, 3)
std::unique_ptr<lang::Program> buildReduceRabenseifner(const std::string& name,
                                                       const BuildArgs& args) {
  const int size = args.ranks;
  const int root = rootOf(name, args);
  const Core core = makeCore(size, Ownership::onePerMember, root);
  auto program = std::make_unique<lang::Program>(name, lang::reduce(size, core.size, root, false),
                                                 args.programOptions);
  ScratchAllocator scratch(size);
  std::vector<Region> regions = foldExtras(*program, core, core.size, false, scratch);
  const std::vector<std::optional<Region>> finalRegions(static_cast<std::size_t>(core.size),
                                                        Region{Buffer::output, 0});
  recursiveHalving(*program, core, regions, false, scratch, finalRegions);
  int rootMember = 0;
  while (core.rankOf[rootMember] != root)
    ++rootMember;
  for (int mask = 1; mask < core.size; mask *= 2) {
    for (int group = 0; group < core.size; group += 2 * mask) {
      const bool upperReceives = (rootMember & mask) != 0;
      const int receiving = upperReceives ? group + mask : group;
      const int sending = upperReceives ? group : group + mask;
      const int offset = rootMember & (mask - 1);
      program
          ->chunk(core.rankOf[sending + offset], Buffer::output, core.firstOf[sending],
                  core.chunks(sending, mask))
          .copy(core.rankOf[receiving + offset], Buffer::output, core.firstOf[sending]);
    }
  }
  return program;
}

}  // namespace

std::vector<AlgorithmInfo> halvingDoublingAlgorithms() {
  return {
      {.name = "allreduce.rabenseifner",
       .collective = "allreduce",
       .description =
           "recursive-halving ReduceScatter + recursive-doubling AllGather, in place, any p",
       .citation = "xCCL notes Recursive-Halving + Recursive-Doubling (Rabenseifner); MPICH "
                   "non-power-of-two pre/post steps (Thakur, Rabenseifner & Gropp 2005)",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {},
       .build = &buildAllReduceRabenseifner,
       .steps = "2 lg p; 2⌊lg p⌋ + 2 when p is not a power of two",
       .bytesSent = "2(p−1)/p · n; p ≠ 2^k: 2(p'−1)/p' · n, + n on the 2(p−p') paired ranks "
                    "(p' = 2^⌊lg p⌋)",
       .cost = "2 lg p·α + 2(p−1)/p · nβ + (p−1)/p · nγ; p ≠ 2^k: (2⌊lg p⌋ + 2)α + "
               "(2(p'−1)/p' + 2) · nβ + (1 + (p'−1)/p') · nγ",
       .winsWhen = "medium and large buffers: ring bandwidth in lg p rounds (best at p = 2^k)"},
      {.name = "allreduce.recursive-doubling",
       .collective = "allreduce",
       .description = "whole-buffer exchange with rank XOR 2^k for lg p rounds, in place, any p",
       .citation = "xCCL notes Recursive-Doubling (All-Reduce); MPICH non-power-of-two pre/post "
                   "steps (Thakur, Rabenseifner & Gropp 2005)",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {},
       .build = &buildAllReduceRecursiveDoubling,
       .steps = "lg p; ⌊lg p⌋ + 2 when p is not a power of two",
       .bytesSent = "⌊lg p⌋ · n, + n on the 2(p−2^⌊lg p⌋) paired ranks",
       .cost = "⌊lg p⌋(α + nβ + nγ), + 2α + 2nβ + nγ when p is not a power of two",
       .winsWhen = "small buffers: fewest rounds, latency-bound"},
      {.name = "allgather.recursive-doubling",
       .collective = "allgather",
       .description = "recursive doubling in the output (distance and vector doubling), any p",
       .citation = "xCCL notes Recursive-Doubling (All-Gather); non-power-of-two pre/post steps "
                   "as in MPICH (Thakur, Rabenseifner & Gropp 2005)",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {},
       .build = &buildAllGatherRecursiveDoubling,
       .steps = "lg p; ⌊lg p⌋ + 2 when p is not a power of two",
       .bytesSent = "(p−1)/p · n; p ≠ 2^k: ≤ n in the core, + n on the ranks paired with an "
                    "extra (n/p on the extras)",
       .cost = "lg p·α + (p−1)/p · nβ; p ≠ 2^k: (⌊lg p⌋ + 2)α + ≤ (2 + 1/p) · nβ",
       .winsWhen = "small and medium buffers at p = 2^k: lg p rounds instead of the ring's p−1"},
      {.name = "reduce.rabenseifner",
       .collective = "reduce",
       .description = "recursive-halving ReduceScatter, then binomial gather to the root, any p",
       .citation = "xCCL notes Recursive-Halving (Reduce-Scatter) + Binomial Tree (gather), "
                   "Rabenseifner; MPICH non-power-of-two pre step (Thakur, Rabenseifner & "
                   "Gropp 2005)",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {rootParam()},
       .build = &buildReduceRabenseifner,
       .steps = "2 lg p; 2⌊lg p⌋ + 1 when p is not a power of two",
       .bytesSent = "(p−1)/p · n + ≤ n/2 (root: (p−1)/p · n); p ≠ 2^k: p' = 2^⌊lg p⌋ in place "
                    "of p, extras send n",
       .cost = "2 lg p·α + 2(p−1)/p · nβ + (p−1)/p · nγ; p ≠ 2^k: + α + nβ + nγ with "
               "p' = 2^⌊lg p⌋ in place of p",
       .winsWhen = "large buffers: 2(p−1)/p · nβ instead of the binomial tree's ⌈lg p⌉ · nβ"},
      {.name = "reducescatter.recursive-doubling",
       .collective = "reducescatter",
       .description = "lg p rounds with rank XOR 2^k, each sending all blocks outside the "
                      "rank's group (n − 2^k·n/p), any p",
       .citation = "xCCL notes Recursive-Doubling (Reduce-Scatter); Thakur, Rabenseifner & Gropp "
                   "2005 and MPICH (non-commutative operators), with MPICH's non-power-of-two "
                   "pre/post steps",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {},
       .build = &buildReduceScatterRecursiveDoubling,
       .steps = "lg p; ⌊lg p⌋ + 2 when p is not a power of two",
       .bytesSent = "(lg p − (p−1)/p) · n; p ≠ 2^k: ≤ (⌊lg p⌋ − (p'−1)/p) · n in the core "
                    "(p' = 2^⌊lg p⌋), + n/p on the ranks paired with an extra (n on the extras)",
       .cost = "lg p·α + (lg p − (p−1)/p) · n(β + γ); p ≠ 2^k: (⌊lg p⌋ + 2)α + ≤ (⌊lg p⌋ + 1 − "
               "(p'−2)/p) · nβ + ≤ (⌊lg p⌋ + 1 − (p'−1)/p) · nγ",
       .winsWhen = "tiny buffers only (xCCL notes: < 32 B): lg p rounds like recursive halving, "
                   "which moves less; MPICH uses it for non-commutative operators, which "
                   "chorus's reductions are not"},
      {.name = "reducescatter.recursive-halving",
       .collective = "reducescatter",
       .description = "recursive halving (distance and vector halving) on blocks, any p",
       .citation = "xCCL notes Recursive-Halving (Reduce-Scatter); MPICH non-power-of-two "
                   "pre/post steps (Thakur, Rabenseifner & Gropp 2005)",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {},
       .build = &buildReduceScatterRecursiveHalving,
       .steps = "lg p; ⌊lg p⌋ + 2 when p is not a power of two",
       .bytesSent = "(p−1)/p · n; p ≠ 2^k: ≤ n in the core, + n/p on the ranks paired with an "
                    "extra (n on the extras)",
       .cost = "lg p·α + (p−1)/p · n(β + γ); p ≠ 2^k: (⌊lg p⌋ + 2)α + ≤ (2 + 1/p) · nβ + "
               "≤ 2nγ",
       .winsWhen = "small and medium buffers at p = 2^k: lg p rounds instead of the ring's p−1"},
  };
}

}  // namespace chorus::algorithms
