// Bruck algorithms (any number of ranks p, radix k = 2..8, out of place, chunk factor 1):
// alltoall.bruck and allgather.bruck, ⌈log_k p⌉ rounds of at most k−1 aggregated messages per
// rank instead of p−1 messages. MVAPICH all-to-all Table I (Bruck [13]); costs from
// docs/sources.md "α-β-γ closed forms".
//
// Algorithm (AllToAll), rank r, block i = r's chunk for rank r+i (the "local rotation"):
//   1. Rotation: block i starts at input[(r+i) mod p]. Nothing is copied; the program tracks
//      where each block lives, so the first round packs straight from the input.
//   2. For every digit position x (place k^x < p) and digit value d = 1..k−1 with d·k^x < p:
//      rank r packs the blocks whose base-k digit x equals d into a contiguous scratch range
//      (local copies; a single block is sent in place) and sends them as ONE message to rank
//      r + d·k^x, receiving the same block indices from rank r − d·k^x into fresh scratch.
//      The k−1 messages of one digit position are independent (one round).
//   3. Inverse rotation: block i now holds the chunk of rank r−i for r; copy it to
//      output[(r−i) mod p] (block 0 never moved: input[r] -> output[r]).
//
//      p = 5, k = 2, rank r's blocks 1..4 (distance to travel):
//      round 0 (+1): blocks 1, 3     -> r+1        block 3 then still needs +2
//      round 1 (+2): blocks 2, 3     -> r+2
//      round 2 (+4): block 4         -> r+4
//
// Algorithm (AllGather), rank r, work area W = scratch[0..p), W[i] = the chunk of rank r+i:
//   1. W[0] = input; the own chunk also goes to output[r].
//   2. With h = k^x chunks held: for d = 1..k−1 with d·h < p, send W[0 .. min(h, p − d·h)) as
//      ONE message to rank r − d·h, which stores it at its W[d·h ..]. Then h = k·h.
//   3. Final rotation, two contiguous local copies: W[1 .. p−r) -> output[r+1 ..] and
//      W[p−r .. p) -> output[0 .. r).
//
//      p = 6, k = 2:   held 1 -> 2 -> 4 -> 6 (the last round sends min(4, 6−4) = 2 chunks)
#include <algorithm>
#include <vector>

#include "algorithms/families.h"

namespace chorus::algorithms {
namespace {

ParamInfo radixParam() {
  return {.name = "radix",
          .defaultValue = 2,
          .minValue = 2,
          .maxValue = 8,
          .description = "k of k-ary Bruck: ⌈log_k p⌉ rounds of up to k−1 messages per rank"};
}

struct BlockLocation {
  lang::Buffer buffer = lang::Buffer::input;
  int index = 0;
};

// The references to `blocks` (in order) on `rank`: in place when they are contiguous in one
// buffer, else packed into fresh scratch at `scratchTop` with local copies.
lang::ChunkRef packBlocks(lang::Program& program, int rank,
                          const std::vector<BlockLocation>& blocks, int& scratchTop) {
  bool contiguous = true;
  for (std::size_t j = 1; j < blocks.size(); ++j) {
    contiguous = contiguous && blocks[j].buffer == blocks[0].buffer &&
                 blocks[j].index == blocks[0].index + static_cast<int>(j);
  }
  const int count = static_cast<int>(blocks.size());
  if (contiguous) return program.chunk(rank, blocks[0].buffer, blocks[0].index, count);
  const int base = scratchTop;
  scratchTop += count;
  for (int j = 0; j < count; ++j) {
    program.chunk(rank, blocks[j].buffer, blocks[j].index)
        .copy(rank, lang::Buffer::scratch, base + j);
  }
  return program.chunk(rank, lang::Buffer::scratch, base, count);
}

std::unique_ptr<lang::Program> buildAllToAllBruck(const std::string& name, const BuildArgs& args) {
  const int size = args.ranks;
  const int radix = args.param("radix");
  auto program =
      std::make_unique<lang::Program>(name, lang::allToAll(size, 1, false), args.programOptions);
  // where[r][i]: the current location, on rank r, of block i (r's data travelling i ranks on).
  std::vector<std::vector<BlockLocation>> where(size, std::vector<BlockLocation>(size));
  for (int r = 0; r < size; ++r) {
    for (int i = 0; i < size; ++i)
      where[r][i] = {lang::Buffer::input, (r + i) % size};
  }
  std::vector<int> scratchTop(size, 0);

  for (int place = 1; place < size; place *= radix) {
    for (int digit = 1; digit < radix && digit * place < size; ++digit) {
      std::vector<int> moving;
      for (int i = 1; i < size; ++i) {
        if ((i / place) % radix == digit) moving.push_back(i);
      }
      const int shift = digit * place;
      const int count = static_cast<int>(moving.size());
      // Every rank sends and receives the same block indices; read all old locations first.
      std::vector<std::vector<BlockLocation>> landed(size);
      for (int r = 0; r < size; ++r) {
        std::vector<BlockLocation> blocks;
        for (int i : moving)
          blocks.push_back(where[r][i]);
        const lang::ChunkRef packed = packBlocks(*program, r, blocks, scratchTop[r]);
        const int dst = (r + shift) % size;
        const int base = scratchTop[dst];
        scratchTop[dst] += count;
        packed.copy(dst, lang::Buffer::scratch, base);
        for (int j = 0; j < count; ++j)
          landed[dst].push_back({lang::Buffer::scratch, base + j});
      }
      for (int r = 0; r < size; ++r) {
        for (int j = 0; j < count; ++j)
          where[r][moving[j]] = landed[r][j];
      }
    }
  }

  for (int r = 0; r < size; ++r) {
    for (int i = 0; i < size; ++i) {
      program->chunk(r, where[r][i].buffer, where[r][i].index)
          .copy(r, lang::Buffer::output, (r - i + size) % size);
    }
  }
  return program;
}

std::unique_ptr<lang::Program> buildAllGatherBruck(const std::string& name, const BuildArgs& args) {
  const int size = args.ranks;
  const int radix = args.param("radix");
  auto program =
      std::make_unique<lang::Program>(name, lang::allGather(size, 1, false), args.programOptions);
  for (int r = 0; r < size; ++r) {
    const lang::ChunkRef own = program->chunk(r, lang::Buffer::input, 0);
    own.copy(r, lang::Buffer::output, r);
    own.copy(r, lang::Buffer::scratch, 0);
  }
  for (int held = 1; held < size; held *= radix) {
    for (int digit = 1; digit < radix && digit * held < size; ++digit) {
      const int offset = digit * held;
      const int count = std::min(held, size - offset);
      for (int r = 0; r < size; ++r) {
        program->chunk(r, lang::Buffer::scratch, 0, count)
            .copy((r - offset + size) % size, lang::Buffer::scratch, offset);
      }
    }
  }
  for (int r = 0; r < size; ++r) {
    if (size - r - 1 > 0) {
      program->chunk(r, lang::Buffer::scratch, 1, size - r - 1)
          .copy(r, lang::Buffer::output, r + 1);
    }
    if (r > 0)
      program->chunk(r, lang::Buffer::scratch, size - r, r).copy(r, lang::Buffer::output, 0);
  }
  return program;
}

}  // namespace

std::vector<AlgorithmInfo> bruckAlgorithms() {
  return {
      {.name = "allgather.bruck",
       .collective = "allgather",
       .description = "Bruck: ⌈log_k p⌉ rounds, rank r sends its first min(h, p−d·h) chunks to "
                      "r−d·h, then a local rotation; any p",
       .citation = "MVAPICH all-to-all Table I (Bruck [13]); xCCL notes / docs/sources.md \"α-β-γ "
                   "closed forms\" Allgather Bruck",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {radixParam()},
       .build = &buildAllGatherBruck,
       .steps = "⌈log_k p⌉ (⌈lg p⌉ for k = 2), up to k−1 messages each",
       .bytesSent = "(p−1)/p · n",
       .cost = "⌈lg p⌉α + (p−1)/p · nβ for k = 2; ⌈log_k p⌉α + (p−1)/p · nβ with k−1 ports, "
               "⌈log_k p⌉(k−1)α + (p−1)/p · nβ on one (+ a local rotation of n)",
       .winsWhen = "small buffers at any p, especially non-powers of two: fewest rounds, "
                   "every byte crosses the wire once"},
      {.name = "alltoall.bruck",
       .collective = "alltoall",
       .description = "Bruck: ⌈log_k p⌉ rounds, blocks whose base-k digit x is d packed and sent "
                      "to r+d·k^x; rotations tracked, inverse rotation into the output",
       .citation = "MVAPICH all-to-all Table I (Bruck [13]); xCCL notes / docs/sources.md \"α-β-γ "
                   "closed forms\" Alltoall Bruck",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {radixParam()},
       .build = &buildAllToAllBruck,
       .steps = "⌈log_k p⌉ (⌈lg p⌉ for k = 2), up to k−1 messages each",
       .bytesSent = "≤ (k−1)/k · n · ⌈log_k p⌉ (n/2 · ⌈lg p⌉ for k = 2)",
       .cost = "⌈lg p⌉α + n/2 · ⌈lg p⌉β for k = 2; ⌈log_k p⌉(k−1)α + (k−1)/k · n⌈log_k p⌉β on "
               "one port (+ local pack/unpack copies of about the same volume)",
       .winsWhen = "small buffers at large p: ⌈lg p⌉ instead of p−1 message latencies, paid for "
                   "with lg p / 2 times the bytes"},
  };
}

}  // namespace chorus::algorithms
