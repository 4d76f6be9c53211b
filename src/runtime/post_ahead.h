// Which receive steps may have their later tiles posted ahead (Fifo::postRecv): the transport
// then writes tile i + 1's message into the step's destination while the rank still works on
// tile i, so that memory must be touched by nothing in between.
#pragma once

#include <cstddef>

#include "ir/algorithm.h"

namespace chorus::runtime {

// The receiving step of `program`'s threadblock `tb` whose later tiles may be posted ahead, or
// -1. It must be the threadblock's only receiving step, only land messages (recv,
// recvCopySend), and write chunks that no other step of the rank reads or writes, except the
// steps after it in its own threadblock (they run after it, tile by tile). Tiles are disjoint
// parts of every chunk, so then no step reads or writes a tile's destination before that tile's
// message is received. In-place plans (input aliasing output) never qualify.
int postAheadStep(const ir::RankProgram& program, std::size_t tb, bool inPlace);

}  // namespace chorus::runtime
