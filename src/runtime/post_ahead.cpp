#include "runtime/post_ahead.h"

namespace chorus::runtime {

int postAheadStep(const ir::RankProgram& program, std::size_t tb, bool inPlace) {
  if (inPlace || tb >= program.threadblocks.size()) return -1;
  const auto& own = program.threadblocks[tb].steps;
  int k = -1;
  for (std::size_t j = 0; j < own.size(); ++j) {
    if (!ir::opReceives(own[j].op)) continue;
    if (k >= 0) return -1;  // more than one receiving step
    k = static_cast<int>(j);
  }
  if (k < 0) return -1;
  const ir::Step& w = own[static_cast<std::size_t>(k)];
  if (!ir::opLandsMessage(w.op)) return -1;
  const auto touches = [&](ir::BufferKind buffer, int index, int count) {
    return buffer == w.dstBuffer && index < w.dstIndex + w.count && w.dstIndex < index + count;
  };
  for (std::size_t u = 0; u < program.threadblocks.size(); ++u) {
    const auto& steps = program.threadblocks[u].steps;
    for (std::size_t j = 0; j < steps.size(); ++j) {
      if (u == tb && j >= static_cast<std::size_t>(k)) continue;  // k, and what follows it
      const ir::Step& s = steps[j];
      if (ir::opReadsSrc(s.op) && touches(s.srcBuffer, s.srcIndex, s.count)) return -1;
      if ((ir::opWritesDst(s.op) || ir::opReadsDst(s.op)) &&
          touches(s.dstBuffer, s.dstIndex, s.count))
        return -1;
    }
  }
  return k;
}

}  // namespace chorus::runtime
