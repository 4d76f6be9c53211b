#include "verify/fifo_depth.h"

#include <algorithm>

#include "verify/verify.h"

namespace chorus::verify {

namespace {

bool deadlockFreeAt(const ir::Algorithm& algorithm, int slots) {
  VerifyOptions options;
  options.fifoSlots = slots;
  options.checkPostcondition = false;
  options.checkRaces = false;
  options.checkWritesInput = false;
  const VerifyReport report = verifyAlgorithm(algorithm, options);
  return report.deadlockChecked &&
         std::none_of(report.findings.begin(), report.findings.end(),
                      [](const Finding& f) { return f.kind == FindingKind::deadlock; });
}

// The most messages one threadblock sends per tile: each threadblock sends on one connection.
int mostMessagesPerConnection(const ir::Algorithm& algorithm) {
  std::size_t most = 1;
  for (const ir::RankProgram& rank : algorithm.ranks)
    for (const ir::Threadblock& tb : rank.threadblocks)
      most = std::max<std::size_t>(
          most, static_cast<std::size_t>(
                    std::count_if(tb.steps.begin(), tb.steps.end(),
                                  [](const ir::Step& step) { return ir::opSends(step.op); })));
  return static_cast<int>(most);
}

}  // namespace

std::optional<int> minimumFifoSlots(const ir::Algorithm& algorithm) {
  const int limit = mostMessagesPerConnection(algorithm);
  if (!deadlockFreeAt(algorithm, limit)) return std::nullopt;
  int lo = 1;  // invariant: the answer lies in [lo, hi] and `hi` works
  int hi = limit;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (deadlockFreeAt(algorithm, mid))
      hi = mid;
    else
      lo = mid + 1;
  }
  return hi;
}

}  // namespace chorus::verify
