#include "ir/tiling.h"

#include <algorithm>

namespace chorus::ir {

std::size_t largestMessageChunks(const Algorithm& algorithm) {
  std::size_t chunks = 1;
  for (const auto& rank : algorithm.ranks)
    for (const auto& tb : rank.threadblocks)
      for (const auto& step : tb.steps)
        if (opSends(step.op) || opReceives(step.op))
          chunks = std::max(chunks, static_cast<std::size_t>(step.count));
  return chunks;
}

std::size_t messageBytes(Protocol protocol, std::size_t slotBytes) {
  return std::min(slotBytes, protocolMessageCap(protocol));
}

}  // namespace chorus::ir
