#include "selection/tuning_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/error.h"
#include "support/size.h"

namespace chorus::selection {

std::string_view builtinTuningJson();  // generated from data/tuning/default.json

namespace {

constexpr std::string_view kFormat = "chorus-tuning/1";
constexpr int kMaxTableRanks = 256;

using Json = nlohmann::json;

[[noreturn]] void fail(std::string_view source, std::string_view where, std::string_view what) {
  throw ParseError(fmt::format("tuning file {}: {}: {}", source, where, what));
}

const Json& field(const Json& object, const char* key, std::string_view source,
                  std::string_view where) {
  if (!object.is_object()) fail(source, where, "expected a JSON object");
  const auto it = object.find(key);
  if (it == object.end()) fail(source, where, fmt::format("missing \"{}\"", key));
  return *it;
}

std::string stringField(const Json& object, const char* key, std::string_view source,
                        std::string_view where) {
  const Json& value = field(object, key, source, where);
  if (!value.is_string()) fail(source, where, fmt::format("\"{}\" must be a string", key));
  return value.get<std::string>();
}

std::uint64_t bytesField(const Json& object, const char* key, std::string_view source,
                         std::string_view where) {
  const Json& value = field(object, key, source, where);
  if (value.is_null()) return kUnlimitedBytes;
  if (!value.is_number_unsigned())
    fail(source, where, fmt::format("\"{}\" must be a byte count (or null: no bound)", key));
  return value.get<std::uint64_t>();
}

TuningEntry parseEntry(const Json& json, ir::CollectiveKind kind, std::string_view source,
                       const std::string& where) {
  TuningEntry entry;
  entry.range.min = bytesField(json, "min_bytes", source, where);
  entry.range.max = bytesField(json, "max_bytes", source, where);
  const std::string text = stringField(json, "algorithm", source, where);
  try {
    entry.choice = parseAlgorithmChoice(text, kind, fmt::format("algorithm '{}'", text));
  } catch (const OptionError& error) {
    fail(source, where, error.what());
  }
  return entry;
}

TuningMeasurement parseMeasurement(const Json& json, std::string_view source,
                                   const std::string& where) {
  TuningMeasurement m;
  m.bytes = bytesField(json, "bytes", source, where);
  m.algorithm = stringField(json, "algorithm", source, where);
  m.timeUs = json.value("time_us", 0.0);
  m.busbwGbps = json.value("busbw_gbps", 0.0);
  m.runnerUp = json.value("runner_up", std::string());
  m.runnerUpTimeUs = json.value("runner_up_time_us", 0.0);
  return m;
}

void checkCoverage(const TuningTable& table, std::string_view source, std::string_view where) {
  if (table.entries.empty()) fail(source, where, "\"entries\" is empty");
  std::uint64_t next = 0;
  for (const TuningEntry& entry : table.entries) {
    if (entry.range.min != next) {
      fail(source, where,
           fmt::format("entries must cover every size from 0 B in order; the entry for {} "
                       "starts at {} where {} was expected",
                       entry.choice.describe(), formatSize(entry.range.min), formatSize(next)));
    }
    if (entry.range.max != kUnlimitedBytes && entry.range.max <= entry.range.min) {
      fail(source, where,
           fmt::format("the entry for {} has an empty range {}", entry.choice.describe(),
                       entry.range.describe()));
    }
    next = entry.range.max;
  }
  if (next != kUnlimitedBytes) {
    fail(source, where,
         fmt::format("the last entry must have \"max_bytes\": null (no bound), not {}",
                     formatSize(next)));
  }
}

TuningTable parseTable(const Json& json, std::string_view source, std::size_t index) {
  std::string where = fmt::format("table {}", index);
  TuningTable table;
  const std::string collective = stringField(json, "collective", source, where);
  const auto kind = ir::parseCollectiveName(collective);
  if (!kind || *kind == ir::CollectiveKind::custom) {
    fail(source, where,
         fmt::format("unknown collective '{}'; use allreduce, allgather, reducescatter, "
                     "alltoall, broadcast or reduce",
                     collective));
  }
  table.collective = *kind;
  const Json& ranks = field(json, "ranks", source, where);
  if (!ranks.is_number_integer() || ranks.get<int>() < 1 || ranks.get<int>() > kMaxTableRanks)
    fail(source, where, fmt::format("\"ranks\" must be a whole number in 1..{}", kMaxTableRanks));
  table.ranks = ranks.get<int>();
  table.transport = stringField(json, "transport", source, where);
  where = fmt::format("table {} ({} {} ranks {})", index, collective, table.ranks, table.transport);
  const Json& entries = field(json, "entries", source, where);
  if (!entries.is_array()) fail(source, where, "\"entries\" must be an array");
  for (std::size_t i = 0; i < entries.size(); ++i)
    table.entries.push_back(
        parseEntry(entries[i], table.collective, source, fmt::format("{} entry {}", where, i)));
  checkCoverage(table, source, where);
  if (const auto measured = json.find("measured"); measured != json.end()) {
    if (!measured->is_array()) fail(source, where, "\"measured\" must be an array");
    for (std::size_t i = 0; i < measured->size(); ++i)
      table.measured.push_back(
          parseMeasurement((*measured)[i], source, fmt::format("{} measured {}", where, i)));
  }
  return table;
}

}  // namespace

const TuningEntry& TuningTable::entryFor(std::uint64_t bytes) const {
  for (const TuningEntry& entry : entries)
    if (entry.range.contains(bytes)) return entry;
  CHORUS_INTERNAL_ASSERT(false, "a checked tuning table covers every size");
  return entries.back();
}

const TuningTable* TuningFile::find(ir::CollectiveKind collective, int ranks,
                                    std::string_view transport) const {
  const TuningTable* other = nullptr;
  for (const TuningTable& table : tables) {
    if (table.collective != collective || table.ranks != ranks) continue;
    if (table.transport == transport) return &table;
    if (other == nullptr) other = &table;
  }
  return other;
}

void TuningFile::put(TuningTable table) {
  for (TuningTable& existing : tables) {
    if (existing.collective == table.collective && existing.ranks == table.ranks &&
        existing.transport == table.transport) {
      existing = std::move(table);
      return;
    }
  }
  tables.push_back(std::move(table));
  std::stable_sort(tables.begin(), tables.end(), [](const TuningTable& a, const TuningTable& b) {
    return std::tie(a.transport, a.ranks, a.collective) <
           std::tie(b.transport, b.ranks, b.collective);
  });
}

TuningFile parseTuningFile(std::string_view text, std::string_view source) {
  Json json;
  try {
    json = Json::parse(text);
  } catch (const Json::exception& error) {  // parse_error, or out_of_range for huge numbers
    throw ParseError(fmt::format("tuning file {}: not valid JSON: {}", source, error.what()));
  }
  const std::string format = stringField(json, "format", source, "top level");
  if (format != kFormat) {
    fail(source, "top level",
         fmt::format("\"format\" is '{}'; this chorus reads '{}' (rerun chorus tune)", format,
                     kFormat));
  }
  TuningFile file;
  file.source = std::string(source);
  file.machine = json.value("machine", std::string());
  file.command = json.value("command", std::string());
  const Json& tables = field(json, "tables", source, "top level");
  if (!tables.is_array()) fail(source, "top level", "\"tables\" must be an array");
  for (std::size_t i = 0; i < tables.size(); ++i) {
    TuningTable table = parseTable(tables[i], source, i);
    const TuningTable* same = file.find(table.collective, table.ranks, table.transport);
    if (same != nullptr && same->transport == table.transport) {
      fail(source, fmt::format("table {}", i),
           fmt::format("a second table for {} at {} ranks on {}; keep one",
                       ir::collectiveName(table.collective), table.ranks, table.transport));
    }
    file.tables.push_back(std::move(table));
  }
  return file;
}

TuningFile readTuningFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw OptionError(fmt::format(
        "cannot read the tuning file '{}' (CHORUS_TUNING_FILE); write one with chorus tune or "
        "unset the variable",
        path));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parseTuningFile(text.str(), path);
}

std::string tuningFileToJson(const TuningFile& file) {
  nlohmann::ordered_json json;
  json["format"] = kFormat;
  json["machine"] = file.machine;
  json["command"] = file.command;
  json["tables"] = nlohmann::ordered_json::array();
  for (const TuningTable& table : file.tables) {
    nlohmann::ordered_json entries = nlohmann::ordered_json::array();
    for (const TuningEntry& entry : table.entries) {
      nlohmann::ordered_json e;
      e["min_bytes"] = entry.range.min;
      if (entry.range.max == kUnlimitedBytes)
        e["max_bytes"] = nullptr;
      else
        e["max_bytes"] = entry.range.max;
      e["algorithm"] = entry.choice.describe();
      entries.push_back(std::move(e));
    }
    nlohmann::ordered_json measured = nlohmann::ordered_json::array();
    for (const TuningMeasurement& m : table.measured) {
      measured.push_back({{"bytes", m.bytes},
                          {"algorithm", m.algorithm},
                          {"time_us", m.timeUs},
                          {"busbw_gbps", m.busbwGbps},
                          {"runner_up", m.runnerUp},
                          {"runner_up_time_us", m.runnerUpTimeUs}});
    }
    json["tables"].push_back({{"collective", ir::collectiveName(table.collective)},
                              {"ranks", table.ranks},
                              {"transport", table.transport},
                              {"entries", std::move(entries)},
                              {"measured", std::move(measured)}});
  }
  return json.dump(2) + "\n";
}

const TuningFile& builtinTuning() {
  static const TuningFile file = parseTuningFile(builtinTuningJson(), "built-in tuning table");
  return file;
}

}  // namespace chorus::selection
