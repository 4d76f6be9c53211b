// The nccl-tests style result table every benchmark program prints (perf layer): one row per
// size with time, algbw, busbw and #wrong for out-of-place then in-place, then the algorithm.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "perf/record.h"

namespace chorus::perf {

// '#'-prefixed lines: `title`, then the column headings.
std::string tableHeader(std::string_view title);
// One row, newline-terminated. A variant that did not run shows "n/a"; an unchecked one shows
// "N/A" under #wrong (as nccl-tests with -c 0).
std::string tableRow(const BenchRecord& outOfPlace, const BenchRecord& inPlace);
// '#'-prefixed summary: total wrong elements, average busbw over the rows that ran (as
// nccl-tests), and why any variant did not run.
std::string tableFooter(std::span<const BenchRecord> records);

// Total wrong elements over checked records (0 when none was checked).
std::int64_t totalWrong(std::span<const BenchRecord> records);

}  // namespace chorus::perf
