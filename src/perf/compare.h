// Side-by-side bus bandwidth of several libraries from their benchmark records (perf layer):
// one table per (collective, ranks) with busbw per series and chorus / peer ratios.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "perf/record.h"

namespace chorus::perf {

// The records of one benchmark run (one --json file) and the name its columns get.
struct RecordSet {
  std::string label;  // "chorus", "openmpi", "gloo"; made unique by the caller
  std::vector<BenchRecord> records;
};

// For each (collective, ranks) present, in order of first appearance: a '#' title line, then
// one row per size with "<label> oop" and "<label> ip" busbw columns (GB/s) for every set, and
// "<ref>/<label>" ratio columns (out-of-place, in-place) of the reference set against each
// other set, then a geometric-mean line per ratio. The reference is the first set whose
// records are library "chorus" (else the first set). "-" marks what a set did not run.
std::string comparisonTables(std::span<const RecordSet> sets);

}  // namespace chorus::perf
