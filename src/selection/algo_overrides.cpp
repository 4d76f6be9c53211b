#include "selection/algo_overrides.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>

#include "algorithms/registry.h"
#include "support/error.h"
#include "support/size.h"
#include "support/strings.h"

namespace chorus::selection {
namespace {

constexpr const char* kSyntax =
    "CHORUS_ALGO takes COLL=NAME[{KEY=VALUE,...}][:MIN-MAX][,...] groups separated by ';', e.g. "
    "'allreduce=allpairs:0-64K,ring{channels=2}:64K-max;alltoall=two-step'";

constexpr ir::CollectiveKind kCollectives[] = {
    ir::CollectiveKind::allreduce, ir::CollectiveKind::allgather, ir::CollectiveKind::reducescatter,
    ir::CollectiveKind::alltoall,  ir::CollectiveKind::broadcast, ir::CollectiveKind::reduce,
};

ir::CollectiveKind parseCollective(std::string_view name, std::string_view group) {
  const std::optional<ir::CollectiveKind> kind = ir::parseCollectiveName(name);
  if (!kind || *kind == ir::CollectiveKind::custom) {
    std::vector<std::string_view> names;
    for (ir::CollectiveKind k : kCollectives)
      names.push_back(ir::collectiveName(k));
    throw OptionError(fmt::format("CHORUS_ALGO group '{}': unknown collective '{}'; use one of {}",
                                  group, name, fmt::join(names, ", ")));
  }
  return *kind;
}

bool isFileName(std::string_view name) {
  return name.find('/') != std::string_view::npos || name.ends_with(".xml") ||
         name.ends_with(".json") || name.ends_with(".txt");
}

std::uint64_t parseBound(std::string_view text, std::string_view entry) {
  if (text == "max" || text == "MAX") return kUnlimitedBytes;
  try {
    return parseSize(trim(text));
  } catch (const OptionError& error) {
    throw OptionError(fmt::format("CHORUS_ALGO entry '{}': {} (or 'max' for no upper bound)", entry,
                                  error.what()));
  }
}

SizeRange parseRange(std::string_view text, std::string_view entry) {
  const std::size_t dash = text.find('-');
  if (dash == std::string_view::npos) {
    throw OptionError(fmt::format(
        "CHORUS_ALGO entry '{}': the range '{}' needs the form MIN-MAX, e.g. 0-64K or 64K-max",
        entry, text));
  }
  SizeRange range;
  range.min = parseBound(text.substr(0, dash), entry);
  range.max = parseBound(text.substr(dash + 1), entry);
  if (range.min == kUnlimitedBytes || range.min >= range.max) {
    throw OptionError(fmt::format(
        "CHORUS_ALGO entry '{}': the range '{}' is empty; ranges are [MIN, MAX) with MIN < MAX",
        entry, text));
  }
  return range;
}

OverrideEntry parseEntry(std::string_view text, ir::CollectiveKind kind) {
  OverrideEntry entry;
  entry.text = std::string(text);
  std::string_view name = text;
  const std::size_t colon = text.rfind(':');
  if (colon != std::string_view::npos) {
    name = trim(text.substr(0, colon));
    entry.range = parseRange(trim(text.substr(colon + 1)), text);
  }
  if (name.empty()) {
    throw OptionError(fmt::format("CHORUS_ALGO entry '{}' names no algorithm; {}", text, kSyntax));
  }
  if (isFileName(name)) {
    entry.file = std::string(name);
  } else {
    entry.choice = parseAlgorithmChoice(name, kind, fmt::format("CHORUS_ALGO entry '{}'", text));
  }
  return entry;
}

void checkOverlaps(ir::CollectiveKind kind, std::vector<OverrideEntry>& entries) {
  std::stable_sort(entries.begin(), entries.end(),
                   [](const auto& a, const auto& b) { return a.range.min < b.range.min; });
  for (std::size_t i = 1; i < entries.size(); ++i) {
    const OverrideEntry& previous = entries[i - 1];
    if (previous.range.max == kUnlimitedBytes || previous.range.max > entries[i].range.min) {
      throw OptionError(fmt::format(
          "CHORUS_ALGO: the {} entries '{}' ({}) and '{}' ({}) overlap; give each size to one "
          "entry, e.g. 0-64K and 64K-max",
          ir::collectiveName(kind), previous.text, previous.range.describe(), entries[i].text,
          entries[i].range.describe()));
    }
  }
}

}  // namespace

std::string SizeRange::describe() const {
  return fmt::format("{}-{}", formatSize(min), max == kUnlimitedBytes ? "max" : formatSize(max));
}

AlgoOverrides parseAlgoOverrides(std::string_view text) {
  AlgoOverrides overrides;
  for (std::string_view group : split(text, ';')) {
    group = trim(group);
    if (group.empty()) continue;
    const std::size_t equals = group.find('=');
    if (equals == std::string_view::npos) {
      throw OptionError(fmt::format("CHORUS_ALGO group '{}' has no '='; {}", group, kSyntax));
    }
    const ir::CollectiveKind kind = parseCollective(trim(group.substr(0, equals)), group);
    std::vector<OverrideEntry>& entries = overrides[kind];
    bool any = false;
    for (std::string_view entry : split(group.substr(equals + 1), ',', true)) {
      entry = trim(entry);
      if (entry.empty()) continue;
      entries.push_back(parseEntry(entry, kind));
      any = true;
    }
    if (!any) {
      throw OptionError(
          fmt::format("CHORUS_ALGO group '{}' lists no algorithm; {}", group, kSyntax));
    }
  }
  for (auto& [kind, entries] : overrides)
    checkOverlaps(kind, entries);
  return overrides;
}

}  // namespace chorus::selection
