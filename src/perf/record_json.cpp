#include "perf/record_json.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/error.h"

namespace chorus::perf {

namespace {

using nlohmann::json;

json toJson(const BenchRecord& record) {
  json out = json::object();
  out["library"] = record.library;
  out["collective"] = record.collective;
  out["algorithm"] = record.algorithm;
  out["ranks"] = record.ranks;
  out["transport"] = record.transport;
  out["bytes"] = record.bytes;
  out["count"] = record.count;
  out["dtype"] = record.dtype;
  out["op"] = record.op;
  out["root"] = record.root;
  out["inplace"] = record.inplace;
  out["supported"] = record.supported;
  out["note"] = record.note;
  out["time_us"] = record.timeUs;
  out["min_us"] = record.minUs;
  out["algbw_gbps"] = record.algbwGbps;
  out["busbw_gbps"] = record.busbwGbps;
  out["wrong"] = record.wrong < 0 ? json(nullptr) : json(record.wrong);
  out["iterations"] = record.iterations;
  out["batches"] = record.batches;
  return out;
}

// Reads `key` into `field`; missing keys keep the default unless `required`.
template <class T>
void readField(const json& object, const char* key, T& field, bool required,
               std::string_view source, std::size_t index) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    if (required)
      throw ParseError(fmt::format(
          "{}: record {}: missing \"{}\"; benchmark records are written by chorus bench --json, "
          "bench_mpi --json and bench_gloo --json",
          source, index, key));
    return;
  }
  try {
    field = it->get<T>();
  } catch (const json::exception& error) {
    throw ParseError(fmt::format("{}: record {}: \"{}\" has the wrong type: {}", source, index, key,
                                 error.what()));
  }
}

BenchRecord fromJson(const json& object, std::string_view source, std::size_t index) {
  if (!object.is_object())
    throw ParseError(fmt::format("{}: record {} is not a JSON object", source, index));
  BenchRecord record;
  readField(object, "library", record.library, true, source, index);
  readField(object, "collective", record.collective, true, source, index);
  readField(object, "algorithm", record.algorithm, false, source, index);
  readField(object, "ranks", record.ranks, true, source, index);
  readField(object, "transport", record.transport, false, source, index);
  readField(object, "bytes", record.bytes, true, source, index);
  readField(object, "count", record.count, false, source, index);
  readField(object, "dtype", record.dtype, false, source, index);
  readField(object, "op", record.op, false, source, index);
  readField(object, "root", record.root, false, source, index);
  readField(object, "inplace", record.inplace, true, source, index);
  readField(object, "supported", record.supported, false, source, index);
  readField(object, "note", record.note, false, source, index);
  readField(object, "time_us", record.timeUs, false, source, index);
  readField(object, "min_us", record.minUs, false, source, index);
  readField(object, "algbw_gbps", record.algbwGbps, false, source, index);
  readField(object, "busbw_gbps", record.busbwGbps, false, source, index);
  readField(object, "wrong", record.wrong, false, source, index);
  readField(object, "iterations", record.iterations, false, source, index);
  readField(object, "batches", record.batches, false, source, index);
  return record;
}

}  // namespace

std::string recordsToJson(std::span<const BenchRecord> records) {
  json out = json::array();
  for (const BenchRecord& record : records)
    out.push_back(toJson(record));
  return out.dump(2) + "\n";
}

std::vector<BenchRecord> recordsFromJson(std::string_view text, std::string_view source) {
  json parsed;
  try {
    parsed = json::parse(text);
  } catch (const json::exception& error) {  // parse_error, or out_of_range for huge numbers
    throw ParseError(fmt::format("{}: not valid JSON: {}", source, error.what()));
  }
  if (!parsed.is_array())
    throw ParseError(fmt::format(
        "{}: expected a JSON array of benchmark records (as written by chorus bench --json)",
        source));
  std::vector<BenchRecord> records;
  for (std::size_t i = 0; i < parsed.size(); ++i)
    records.push_back(fromJson(parsed[i], source, i));
  return records;
}

void writeRecordsFile(const std::string& path, std::span<const BenchRecord> records) {
  std::ofstream out(path);
  if (!out)
    throw UserError(fmt::format("cannot open '{}' for writing: {}", path, std::strerror(errno)));
  out << recordsToJson(records);
  if (!out) throw UserError(fmt::format("cannot write '{}'", path));
}

std::vector<BenchRecord> readRecordsFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ParseError(fmt::format("{}: cannot open file: {}", path, std::strerror(errno)));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ParseError(fmt::format("{}: cannot read file", path));
  return recordsFromJson(text.str(), path);
}

}  // namespace chorus::perf
