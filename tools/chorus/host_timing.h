// Times a compiled plan on this host (`chorus synth reduction --run`) with the benchmarks'
// method (perf/timing.h): one process per rank over shm, each pinned to a core as `chorus
// bench --bind core` does; warm-up, then batches separated by an untimed max-exchange (a
// library ring AllReduce over the same connections); the median over batches. Afterwards one
// more call from fresh inputs is checked exactly, so custom collectives (group reductions)
// are timed and checked too, which `chorus bench` cannot do.
#pragma once

#include <cstdint>
#include <string>

#include "ir/algorithm.h"

namespace chorus::cli {

struct HostTiming {
  double seconds = 0;      // median per-call time over batches (max over ranks)
  bool correct = true;     // the checked call's results were exact
  std::string firstWrong;  // the first wrong element, when not correct
};

// Runs `algorithm` on `bytes` of float32 per rank for about `budgetSeconds` of timed calls.
// Throws like runtime::runOnProcesses.
HostTiming timeOnHost(const ir::Algorithm& algorithm, std::uint64_t bytes, double budgetSeconds);

}  // namespace chorus::cli
