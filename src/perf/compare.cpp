#include "perf/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace chorus::perf {

namespace {

using GroupKey = std::pair<std::string, int>;  // (collective, ranks)

// busbw of `set` for (group, bytes, inplace), if it ran.
std::optional<double> busbwOf(const RecordSet& set, const GroupKey& group, std::uint64_t bytes,
                              bool inplace) {
  for (const BenchRecord& record : set.records)
    if (record.collective == group.first && record.ranks == group.second && record.bytes == bytes &&
        record.inplace == inplace && record.supported && record.busbwGbps > 0)
      return record.busbwGbps;
  return std::nullopt;
}

// About three significant digits in fixed notation: 53.4, 5.38, 0.0344, 0.000495.
std::string formatBandwidth(double value) {
  if (value <= 0) return "0";
  const int decimals = std::clamp(2 - static_cast<int>(std::floor(std::log10(value))), 0, 6);
  return fmt::format("{:.{}f}", value, decimals);
}

std::string cell(std::optional<double> value, std::size_t width, bool ratio) {
  if (!value) return fmt::format("  {:>{}}", "-", width);
  const std::string text = ratio ? fmt::format("{:.2f}x", *value) : formatBandwidth(*value);
  return fmt::format("  {:>{}}", text, width);
}

std::string groupTable(std::span<const RecordSet> sets, std::size_t reference,
                       const GroupKey& group) {
  std::set<std::uint64_t> sizes;
  std::string dtype, op;
  for (const RecordSet& set : sets)
    for (const BenchRecord& record : set.records)
      if (record.collective == group.first && record.ranks == group.second) {
        sizes.insert(record.bytes);
        if (dtype.empty()) {
          dtype = record.dtype;
          op = record.op;
        }
      }

  struct Column {
    std::string heading;
    std::size_t set;
    bool inplace;
    bool ratio;
  };
  std::vector<Column> columns;
  for (std::size_t i = 0; i < sets.size(); ++i)
    for (bool inplace : {false, true})
      columns.push_back(
          {fmt::format("{} {}", sets[i].label, inplace ? "ip" : "oop"), i, inplace, false});
  for (std::size_t i = 0; i < sets.size(); ++i) {
    if (i == reference) continue;
    for (bool inplace : {false, true})
      columns.push_back(
          {fmt::format("{}/{} {}", sets[reference].label, sets[i].label, inplace ? "ip" : "oop"), i,
           inplace, true});
  }

  std::string out = fmt::format(
      "# {}, {} ranks, {} {}: busbw (GB/s); oop = out-of-place, "
      "ip = in-place\n",
      group.first, group.second, dtype, op == "none" ? "" : op);
  out += fmt::format("# {:>10}", "size (B)");
  std::vector<std::size_t> widths;
  for (const Column& column : columns) {
    widths.push_back(std::max<std::size_t>(column.heading.size(), 8));
    out += fmt::format("  {:>{}}", column.heading, widths.back());
  }
  out += "\n";

  std::vector<std::vector<double>> ratios(columns.size());
  for (std::uint64_t bytes : sizes) {
    out += fmt::format("{:>12}", bytes);
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const Column& column = columns[c];
      if (!column.ratio) {
        out += cell(busbwOf(sets[column.set], group, bytes, column.inplace), widths[c], false);
        continue;
      }
      const auto ours = busbwOf(sets[reference], group, bytes, column.inplace);
      const auto theirs = busbwOf(sets[column.set], group, bytes, column.inplace);
      std::optional<double> ratio;
      if (ours && theirs) {
        ratio = *ours / *theirs;
        ratios[c].push_back(*ratio);
      }
      out += cell(ratio, widths[c], true);
    }
    out += "\n";
  }
  for (std::size_t c = 0; c < columns.size(); ++c) {
    if (!columns[c].ratio || ratios[c].empty()) continue;
    double logSum = 0;
    for (double r : ratios[c])
      logSum += std::log(r);
    out += fmt::format("# geometric mean {}: {:.2f}x over {} sizes\n", columns[c].heading,
                       std::exp(logSum / static_cast<double>(ratios[c].size())), ratios[c].size());
  }
  return out;
}

}  // namespace

std::string comparisonTables(std::span<const RecordSet> sets) {
  if (sets.empty()) return {};
  std::size_t reference = 0;
  for (std::size_t i = 0; i < sets.size(); ++i)
    if (!sets[i].records.empty() && sets[i].records.front().library == "chorus") {
      reference = i;
      break;
    }
  std::vector<GroupKey> groups;
  for (const RecordSet& set : sets)
    for (const BenchRecord& record : set.records) {
      const GroupKey key{record.collective, record.ranks};
      if (std::find(groups.begin(), groups.end(), key) == groups.end()) groups.push_back(key);
    }
  std::string out;
  for (const GroupKey& group : groups) {
    if (!out.empty()) out += "\n";
    out += groupTable(sets, reference, group);
  }
  return out;
}

}  // namespace chorus::perf
