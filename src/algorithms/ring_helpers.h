// Ring ReduceScatter and AllGather over an arbitrary list of ranks, exactly as GC3's helper
// functions (GC3 §2, Figure 3(b)); reused by the ring and hierarchical algorithms.
#pragma once

#include <span>
#include <vector>

#include "chorus/lang.h"

namespace chorus::algorithms {

struct RingOptions {
  lang::Buffer buffer = lang::Buffer::input;  // buffer the ring works in, on every rank
  // Channel of every hop; -1 lets the compiler choose. With channelsPerRing > 1 the ring's
  // chunk r runs on channel (channel < 0 ? 0 : channel) + r % channelsPerRing, so successive
  // transfers on each link alternate channels (GC3 §7.1.1).
  int channel = -1;
  int channelsPerRing = 1;
  // First chunk of ring position r's block; empty means offset + r*count. Lets a ring whose
  // rank order is permuted (rail rings) keep every block at its rank's index.
  std::vector<int> blockIndex = {};
};

// Ring ReduceScatter (Figure 3(b) lines 4-11): for the ring of R = ranks.size() ranks, block r
// (chunks offset + r*count ..+count, or options.blockIndex[r] ..+count) is reduced along
// ranks[r+1], ranks[r+2], ... and ends, fully reduced, on ranks[r]. Precondition: every rank holds
// those chunks in options.buffer.
void ringReduceScatter(lang::Program& program, std::span<const int> ranks, int offset, int count,
                       const RingOptions& options = {});

// Ring AllGather (Figure 3(b) lines 13-20): block r starts on ranks[r] and is copied along
// ranks[r+1], ranks[r+2], ... until every rank of the ring has it at the same index.
void ringAllGather(lang::Program& program, std::span<const int> ranks, int offset, int count,
                   const RingOptions& options = {});

}  // namespace chorus::algorithms
