// Ring ReduceScatter / AllGather helpers (GC3 Figure 3(b)).
#include "algorithms/ring_helpers.h"

#include "support/error.h"

namespace chorus::algorithms {
namespace {

lang::OpOptions hopOptions(const RingOptions& options, int ringIndex) {
  lang::OpOptions op;
  if (options.channelsPerRing > 1) {
    op.channel = (options.channel < 0 ? 0 : options.channel) + ringIndex % options.channelsPerRing;
  } else {
    op.channel = options.channel;
  }
  return op;
}

int blockStart(const RingOptions& options, int offset, int count, int ringIndex) {
  if (options.blockIndex.empty()) return offset + ringIndex * count;
  return options.blockIndex[static_cast<std::size_t>(ringIndex)];
}

}  // namespace

void ringReduceScatter(lang::Program& program, std::span<const int> ranks, int offset, int count,
                       const RingOptions& options) {
  const int size = static_cast<int>(ranks.size());
  CHORUS_INTERNAL_ASSERT(
      options.blockIndex.empty() || static_cast<int>(options.blockIndex.size()) == size,
      "ring blockIndex must name one block per ring position");
  for (int r = 0; r < size; ++r) {
    const int index = blockStart(options, offset, count, r);
    const lang::OpOptions op = hopOptions(options, r);
    lang::ChunkRef c = program.chunk(ranks[(r + 1) % size], options.buffer, index, count);
    for (int step = 1; step < size; ++step) {
      const int next = ranks[(step + r + 1) % size];
      c = program.chunk(next, options.buffer, index, count).reduce(c, op);
    }
  }
}

void ringAllGather(lang::Program& program, std::span<const int> ranks, int offset, int count,
                   const RingOptions& options) {
  const int size = static_cast<int>(ranks.size());
  CHORUS_INTERNAL_ASSERT(
      options.blockIndex.empty() || static_cast<int>(options.blockIndex.size()) == size,
      "ring blockIndex must name one block per ring position");
  for (int r = 0; r < size; ++r) {
    const int index = blockStart(options, offset, count, r);
    const lang::OpOptions op = hopOptions(options, r);
    lang::ChunkRef c = program.chunk(ranks[r], options.buffer, index, count);
    for (int step = 1; step < size; ++step) {
      const int next = ranks[(step + r) % size];
      c = c.copy(next, options.buffer, index, op);
    }
  }
}

}  // namespace chorus::algorithms
