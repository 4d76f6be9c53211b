// Side-by-side bus bandwidth of several libraries from their benchmark records (perf layer):
// one table per (collective, ranks) with the median busbw over rounds per series and the median
// of the per-round chorus / peer ratios.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "perf/memory_ceiling.h"
#include "perf/record.h"

namespace chorus::perf {

// The records of one library, one benchmark run (one --json file) per round, and the name its
// columns get. Ratios pair round i of one set with round i of another, so runs that share an
// index must have run back to back (compare.sh --rounds does).
struct RecordSet {
  std::string label;  // "chorus", "openmpi", "gloo"; unique among the sets compared
  // rounds[i]: the records of round i + 1; empty when the library has no run of that round.
  std::vector<std::vector<BenchRecord>> rounds;
};

// One --json file as bench_compare read it.
struct RecordFile {
  std::string path;
  std::vector<BenchRecord> records;
};

// The round a file name carries: N when the name without its extension ends in ".r<N>"
// (1 <= N <= 9999; "out/chorus.r2.json" -> 2), else 0.
int roundOfFile(std::string_view path);

// Groups files into sets, in order of first appearance. Rule: the files whose names carry a
// round (roundOfFile > 0) form one set per library (the library of their first record), round
// N from the name; every other file is a set of one round labelled by its library, plus
// ":<stem>" when an earlier set or a set of rounds has that label. Files without records are
// left out. Throws UserError naming both files when two give the same library and round.
std::vector<RecordSet> groupRecordFiles(std::span<const RecordFile> files);

// One record per (collective, ranks, bytes, inplace) of `set`, in order of first appearance:
// the first round's record with timeUs, algbw and busbw replaced by their medians over the
// rounds that ran it and minUs by the best; for a chart of the same numbers as the tables.
std::vector<BenchRecord> medianRecords(const RecordSet& set);

// For each (collective, ranks) present, in order of first appearance: '#' title lines (with the
// rounds each set has), then one row per size with "<label> oop" and "<label> ip" columns for
// every set: the median busbw (GB/s) over its rounds. The reference set's columns are each
// followed by a "min-max" column when it has several rounds. Then "<ref>/<label>" ratio columns
// (out-of-place, in-place) of the reference set against each other set: the median over rounds
// of the ratio of the two sets' busbw in the same round (not the ratio of the medians), then a
// "plan" column when the reference records name their algorithm: round 1's (out-of-place, then
// in-place when it differs), with '*' when another round ran another plan. Last, a geometric
// mean of the median ratios per ratio column. The reference is the first set whose records are
// library "chorus" (else the first set). "-" marks what a set did not run. A median of an even
// count is the mean of the middle two. With `profile` (this machine's memory rates by working
// set, measured in the same run), each of the reference's busbw columns is followed by
// "% ceil": its median busbw as a percentage of the collective's memory-bandwidth ceiling at
// that cell's working set (memory_ceiling.h), for the collectives and rank counts the model
// covers.
std::string comparisonTables(std::span<const RecordSet> sets,
                             const std::optional<MemoryProfile>& profile = std::nullopt);

}  // namespace chorus::perf
