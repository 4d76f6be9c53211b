#include "verify/check_writes_input.h"

#include <string>

#include <fmt/format.h>

#include "verify/step_access.h"

namespace chorus::verify {

namespace {

// True when no chunk of input[index..index+count) on `rank` holds a value the collective reads
// (a broadcast's non-root inputs): still the caller's buffer, but worth saying so.
bool unusedByCollective(const ir::Collective& collective, int rank, int index, int count) {
  for (int i = index; i < index + count; ++i)
    if (collective.initialInput(rank, i).initialized()) return false;
  return true;
}

}  // namespace

void checkWritesInput(const ir::Algorithm& algorithm, const ir::Collective& collective,
                      FindingSink& sink) {
  if (collective.inPlace()) return;
  for (const ir::RankProgram& program : algorithm.ranks) {
    for (int t = 0; t < static_cast<int>(program.threadblocks.size()); ++t) {
      const ir::Threadblock& tb = program.threadblocks[t];
      for (int s = 0; s < static_cast<int>(tb.steps.size()); ++s) {
        const ir::Step& step = tb.steps[s];
        for (const StepAccess& access : localAccesses(step)) {
          if (!access.writes || access.buffer != ir::BufferKind::input) continue;
          if (sink.full()) {
            sink.markTruncated();
            return;
          }
          const std::string unused =
              unusedByCollective(collective, program.rank, access.index, access.count)
                  ? fmt::format(" (the {} never reads it, but it is still the caller's buffer)",
                                collective.name())
                  : "";
          sink.add(
              FindingKind::writesInput, program.rank, t, s,
              fmt::format("{} ({}) {} {} of rank {}{}, but this {} is out-of-place: an "
                          "out-of-place collective must leave its input unchanged (the caller's "
                          "send buffer is const); write into output or scratch instead, or mark "
                          "the plan in-place if it is one",
                          describeStepRef(program.rank, t, s), describeOp(tb, step),
                          access.reads ? "updates" : "writes",
                          describeRange(access.buffer, access.index, access.count), program.rank,
                          unused, collective.name()));
        }
      }
    }
  }
}

}  // namespace chorus::verify
