// Tuning tables (selection layer): which library algorithm, with which settings, is fastest
// for each collective, rank count, transport and size on a machine, as `chorus tune` measures
// and writes them and communicators load them (CHORUS_TUNING_FILE, then the table shipped with
// chorus). The JSON form ("format": "chorus-tuning/1") is documented in docs/tuning.md:
//
//   {"format": "chorus-tuning/1", "machine": "...", "command": "chorus tune --ranks 4 ...",
//    "tables": [{"collective": "allreduce", "ranks": 4, "transport": "shm",
//                "entries": [{"min_bytes": 0, "max_bytes": 24576,
//                             "algorithm": "allreduce.oneshot{protocol=ll}"}, ...],
//                "measured": [{"bytes": 8, "algorithm": "...", "time_us": 3.1,
//                              "busbw_gbps": 0.01, "runner_up": "...",
//                              "runner_up_time_us": 3.4}, ...]}]}
//
// "max_bytes": null means no upper bound; entries of a table cover [0, max) without gaps or
// overlaps. "measured" is informational (what the choice was based on).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "selection/algo_overrides.h"
#include "selection/algorithm_choice.h"

namespace chorus::selection {

struct TuningEntry {
  SizeRange range;
  AlgorithmChoice choice;
};

// One measured size: the winner and the runner-up (empty when there was only one candidate).
struct TuningMeasurement {
  std::uint64_t bytes = 0;
  std::string algorithm;
  double timeUs = 0;
  double busbwGbps = 0;
  std::string runnerUp;
  double runnerUpTimeUs = 0;
};

struct TuningTable {
  ir::CollectiveKind collective = ir::CollectiveKind::allreduce;
  int ranks = 0;
  std::string transport;             // "thread", "shm", ...
  std::vector<TuningEntry> entries;  // sorted, contiguous from 0 to no bound
  std::vector<TuningMeasurement> measured;
  // The entry whose range holds `bytes` (every size has one in a valid table).
  const TuningEntry& entryFor(std::uint64_t bytes) const;
};

struct TuningFile {
  std::string source;   // the path, or "built-in tuning table" for the shipped one
  std::string machine;  // free text: where it was measured
  std::string command;  // free text: the command that produced it
  std::vector<TuningTable> tables;
  // The table for (collective, ranks, transport); when there is none for the transport, one
  // for the same collective and rank count measured on another transport; else nullptr.
  const TuningTable* find(ir::CollectiveKind collective, int ranks,
                          std::string_view transport) const;
  // Replaces the table with the same (collective, ranks, transport), or adds it.
  void put(TuningTable table);
};

// Parses and checks a tuning file: the format tag, known collectives, ranks 1..256, algorithms
// and settings that exist for the collective (algorithm_choice.h), entries contiguous from 0 to
// no bound. Throws ParseError naming `source`, the table and the entry.
TuningFile parseTuningFile(std::string_view json, std::string_view source);
// Reads and parses `path`; OptionError when it cannot be read.
TuningFile readTuningFile(const std::string& path);
// The JSON text of `file` (what parseTuningFile reads back), two-space indented.
std::string tuningFileToJson(const TuningFile& file);

// The table shipped with chorus (data/tuning/default.json, compiled in).
const TuningFile& builtinTuning();

}  // namespace chorus::selection
