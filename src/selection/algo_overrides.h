// CHORUS_ALGO parsing (selection layer): "coll=entry[,entry...][;coll=...]" into per-collective
// override entries, each a library algorithm or a plan file with a byte range [min, max).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/algorithm.h"
#include "selection/algorithm_choice.h"

namespace chorus::selection {

inline constexpr std::uint64_t kUnlimitedBytes = UINT64_MAX;

// Bytes [min, max); max == kUnlimitedBytes means no upper bound.
struct SizeRange {
  std::uint64_t min = 0;
  std::uint64_t max = kUnlimitedBytes;
  bool contains(std::uint64_t bytes) const {
    return bytes >= min && (max == kUnlimitedBytes || bytes < max);
  }
  // "0 B-64 KiB", "64 KiB-max".
  std::string describe() const;
};

struct OverrideEntry {
  std::string text;        // the entry as written ("allpairs:0-64K"), for messages
  SizeRange range;         // the whole size axis when the entry has no range
  AlgorithmChoice choice;  // library entries; choice.algorithm is empty for a file
  std::string file;        // plan file path; empty for a library algorithm
};

// Entries per collective, sorted by range start; ranges of one collective never overlap.
using AlgoOverrides = std::map<ir::CollectiveKind, std::vector<OverrideEntry>>;

// Parses CHORUS_ALGO. Checks the syntax, the collective names (allreduce, allgather,
// reducescatter, alltoall, broadcast, reduce), that every library name exists for its collective
// (a full name "allreduce.ring" or the short "ring", optionally with settings
// "ring{channels=2,instances=2}", see algorithm_choice.h), the ranges (MIN < MAX, sizes like 64K or
// "max") and that no two ranges of one collective overlap. Does not open files or look at the
// rank count. A NAME containing '/' or ending in .xml, .json or .txt is a file; paths may not
// contain ':' ',' or ';'. Throws OptionError naming the entry and the accepted forms.
AlgoOverrides parseAlgoOverrides(std::string_view text);

}  // namespace chorus::selection
