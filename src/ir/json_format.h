// chorus JSON: the lossless, versioned serialization of ir::Algorithm ("format": "chorus-ir",
// "version": 1). Used by `chorus compile --format json` and plan files on disk.
#pragma once

#include <string>
#include <string_view>

#include "ir/algorithm.h"

namespace chorus::ir {

// The value of a chorus JSON file's top-level "format" member, by which readAlgorithms knows it.
inline constexpr std::string_view kChorusJsonFormat = "chorus-ir";

// Deterministic, 2-space indented JSON; each step is one line. A step's "peer" and "channel"
// (Step::peer, Step::channel) are written only when set (not -1). Thread-safe.
std::string writeJson(const Algorithm& algorithm);

// Parses one algorithm. Throws ParseError naming `sourceName` and the JSON path of the bad field
// (e.g. "ranks[2].threadblocks[0].steps[5].op"). Dependencies are sorted and deduplicated;
// hasDependents is kept as written.
Algorithm readJson(std::string_view text, const std::string& sourceName);

}  // namespace chorus::ir
