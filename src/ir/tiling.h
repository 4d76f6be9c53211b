// How a call's chunks are cut into tiles (ir stage). An executor runs the whole program once
// per tile, so phases pipeline (GC3 §6.2), and the simulator costs the call tile by tile;
// both take the tiling from here, so they agree on every message size.
#pragma once

#include <cstddef>

#include "ir/algorithm.h"
#include "support/host_device.h"

namespace chorus::ir {

struct Tiling {
  std::size_t tileElems = 0;      // elements of every chunk one tile covers (the last: fewer)
  std::size_t tiles = 0;          // tiles per call; 0 for empty chunks
  std::size_t lastTileElems = 0;  // elements the last tile covers
};

// The most pieces one message of `algorithm` carries: the largest count of a step that sends
// or receives, at least 1.
std::size_t largestMessageChunks(const Algorithm& algorithm);

// The most bytes one message may hold: the connection's slot, capped by the protocol's
// message size (protocolMessageCap).
std::size_t messageBytes(Protocol protocol, std::size_t slotBytes);

// Algorithm: every tile's largest message (`messageChunks` pieces of tileElems elements of
// `elemSize` bytes) fits `messageBytes`; a tile covers at least one element and at most the
// whole chunk; tiles = ceil(chunkElems / tileElems). Every rank derives the same tiling from
// the whole algorithm, so a sender's message is the size its receiver expects.
CHORUS_HD constexpr Tiling tileChunks(std::size_t chunkElems, std::size_t elemSize,
                                      std::size_t messageBytes, std::size_t messageChunks) {
  Tiling t;
  if (chunkElems == 0) return t;
  const std::size_t perElement = (messageChunks ? messageChunks : 1) * (elemSize ? elemSize : 1);
  t.tileElems = messageBytes / perElement;
  if (t.tileElems < 1) t.tileElems = 1;
  if (t.tileElems > chunkElems) t.tileElems = chunkElems;
  t.tiles = (chunkElems + t.tileElems - 1) / t.tileElems;
  t.lastTileElems = chunkElems - (t.tiles - 1) * t.tileElems;
  return t;
}

}  // namespace chorus::ir
