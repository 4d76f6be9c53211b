// BenchRecord <-> JSON (perf layer): an array of objects, one per record, with the keys
// library, collective, algorithm, ranks, transport, bytes, count, dtype, op, root, inplace,
// supported, note, time_us, min_us, algbw_gbps, busbw_gbps, wrong (null: not checked),
// iterations, batches. Written by `chorus bench --json` and the peer benchmarks.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "perf/record.h"

namespace chorus::perf {

std::string recordsToJson(std::span<const BenchRecord> records);
// Throws ParseError naming `source`, the record and the key when the text is not such an
// array (library, collective, ranks, bytes and inplace are required; the rest default).
std::vector<BenchRecord> recordsFromJson(std::string_view text, std::string_view source);

// Throws UserError when the file cannot be written / ParseError when it cannot be read.
void writeRecordsFile(const std::string& path, std::span<const BenchRecord> records);
std::vector<BenchRecord> readRecordsFile(const std::string& path);

}  // namespace chorus::perf
