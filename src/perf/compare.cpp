#include "perf/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <optional>
#include <set>
#include <utility>

#include "support/error.h"
#include "support/size.h"

namespace chorus::perf {

namespace {

using GroupKey = std::pair<std::string, int>;  // (collective, ranks)

constexpr int kMaxRound = 9999;  // a larger ".rN" is not taken for a round

// The record of `records` for (group, bytes, inplace) that ran, if any.
const BenchRecord* findRecord(const std::vector<BenchRecord>& records, const GroupKey& group,
                              std::uint64_t bytes, bool inplace) {
  for (const BenchRecord& record : records)
    if (record.collective == group.first && record.ranks == group.second && record.bytes == bytes &&
        record.inplace == inplace && record.supported && record.busbwGbps > 0)
      return &record;
  return nullptr;
}

// busbw of round `round` of `set` for (group, bytes, inplace), if it ran.
std::optional<double> busbwOf(const RecordSet& set, std::size_t round, const GroupKey& group,
                              std::uint64_t bytes, bool inplace) {
  if (round >= set.rounds.size()) return std::nullopt;
  const BenchRecord* record = findRecord(set.rounds[round], group, bytes, inplace);
  if (record == nullptr) return std::nullopt;
  return record->busbwGbps;
}

// busbw of every round of `set` that ran (group, bytes, inplace), in round order.
std::vector<double> busbwOverRounds(const RecordSet& set, const GroupKey& group,
                                    std::uint64_t bytes, bool inplace) {
  std::vector<double> values;
  for (std::size_t round = 0; round < set.rounds.size(); ++round)
    if (auto value = busbwOf(set, round, group, bytes, inplace)) values.push_back(*value);
  return values;
}

// The median; of an even count, the mean of the middle two. Precondition: not empty.
double medianOf(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  if (values.size() % 2 == 1) return values[middle];
  return (values[middle - 1] + values[middle]) / 2;
}

std::optional<double> medianOrNone(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  return medianOf(values);
}

// How many rounds of `set` have a record of `group`.
std::size_t roundsWith(const RecordSet& set, const GroupKey& group) {
  std::size_t count = 0;
  for (const std::vector<BenchRecord>& round : set.rounds)
    count += std::any_of(round.begin(), round.end(), [&](const BenchRecord& record) {
      return record.collective == group.first && record.ranks == group.second;
    });
  return count;
}

const BenchRecord* firstRecord(const RecordSet& set) {
  for (const std::vector<BenchRecord>& round : set.rounds)
    if (!round.empty()) return &round.front();
  return nullptr;
}

// About three significant digits in fixed notation: 53.4, 5.38, 0.0344, 0.000495.
std::string formatBandwidth(double value) {
  if (value <= 0) return "0";
  const int decimals = std::clamp(2 - static_cast<int>(std::floor(std::log10(value))), 0, 6);
  return fmt::format("{:.{}f}", value, decimals);
}

// The plan cell for (group, bytes) of the reference set: round 1's plan (the first round that
// ran the cell), the in-place one after it when it differs, '*' when another round ran another.
std::string planCell(const RecordSet& set, const GroupKey& group, std::uint64_t bytes) {
  std::string plans[2];
  bool differed = false;
  for (bool inplace : {false, true})
    for (const std::vector<BenchRecord>& round : set.rounds) {
      const BenchRecord* record = findRecord(round, group, bytes, inplace);
      if (record == nullptr) continue;
      std::string& plan = plans[inplace ? 1 : 0];
      if (plan.empty())
        plan = record->algorithm;
      else if (plan != record->algorithm)
        differed = true;
    }
  std::string text = plans[0].empty() ? plans[1] : plans[0];
  if (!plans[0].empty() && !plans[1].empty() && plans[1] != plans[0])
    text += " (ip " + plans[1] + ")";
  if (text.empty()) return "-";
  return differed ? text + " *" : text;
}

// "256K 80.1/40.2, 1M ..." : each probe point's working set and rates.
std::string profileText(const MemoryProfile& profile) {
  std::string text;
  for (const MemoryRates& point : profile.points)
    text += fmt::format("{}{} {}/{}", text.empty() ? "" : ", ",
                        point.workingSetBytes ? formatSize(point.workingSetBytes) : "?",
                        formatBandwidth(point.addTrafficGbps), formatBandwidth(point.copyGbps));
  return text;
}

std::string groupTable(std::span<const RecordSet> sets, std::size_t reference,
                       const GroupKey& group, const std::optional<MemoryProfile>& profile) {
  // Whether the model has a ceiling for this group.
  const bool ceiling = profile && !profile->points.empty() &&
                       ceilingWorkingSetBytes(group.first, group.second, 1, false).has_value();
  std::set<std::uint64_t> sizes;
  std::string dtype, op;
  bool havePlans = false;
  for (const RecordSet& set : sets)
    for (const std::vector<BenchRecord>& round : set.rounds)
      for (const BenchRecord& record : round)
        if (record.collective == group.first && record.ranks == group.second) {
          sizes.insert(record.bytes);
          if (dtype.empty()) {
            dtype = record.dtype;
            op = record.op;
          }
          if (&set == &sets[reference] && !record.algorithm.empty()) havePlans = true;
        }

  enum class Kind { busbw, range, ceiling, ratio, plan };
  struct Column {
    std::string heading;
    std::size_t set;
    bool inplace;
    Kind kind;
  };
  const bool ranges = roundsWith(sets[reference], group) > 1;
  std::vector<Column> columns;
  for (std::size_t i = 0; i < sets.size(); ++i)
    for (bool inplace : {false, true}) {
      columns.push_back(
          {fmt::format("{} {}", sets[i].label, inplace ? "ip" : "oop"), i, inplace, Kind::busbw});
      if (i == reference && ranges) columns.push_back({"min-max", i, inplace, Kind::range});
      if (i == reference && ceiling) columns.push_back({"% ceil", i, inplace, Kind::ceiling});
    }
  for (std::size_t i = 0; i < sets.size(); ++i) {
    if (i == reference) continue;
    for (bool inplace : {false, true})
      columns.push_back(
          {fmt::format("{}/{} {}", sets[reference].label, sets[i].label, inplace ? "ip" : "oop"), i,
           inplace, Kind::ratio});
  }
  if (havePlans) columns.push_back({"plan", reference, false, Kind::plan});

  // The cells first, so that each column is as wide as its widest cell.
  std::vector<std::vector<std::string>> rows;
  std::vector<std::vector<double>> medianRatios(columns.size());
  for (std::uint64_t bytes : sizes) {
    std::vector<std::string> row{fmt::format("{}", bytes)};
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const Column& column = columns[c];
      const RecordSet& set = sets[column.set];
      std::string text = "-";
      if (column.kind == Kind::busbw) {
        if (auto value = medianOrNone(busbwOverRounds(set, group, bytes, column.inplace)))
          text = formatBandwidth(*value);
      } else if (column.kind == Kind::range) {
        const std::vector<double> values = busbwOverRounds(set, group, bytes, column.inplace);
        if (!values.empty()) {
          const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
          text = formatBandwidth(*lo) + "-" + formatBandwidth(*hi);
        }
      } else if (column.kind == Kind::ceiling) {
        const auto value = medianOrNone(busbwOverRounds(set, group, bytes, column.inplace));
        const auto top = ceilingBusbw(group.first, group.second, bytes, column.inplace, *profile);
        if (value && top) text = fmt::format("{:.0f}%", *value / *top * 100);
      } else if (column.kind == Kind::ratio) {
        std::vector<double> perRound;  // ours / theirs, both measured in the same round
        for (std::size_t round = 0; round < sets[reference].rounds.size(); ++round) {
          const auto ours = busbwOf(sets[reference], round, group, bytes, column.inplace);
          const auto theirs = busbwOf(set, round, group, bytes, column.inplace);
          if (ours && theirs) perRound.push_back(*ours / *theirs);
        }
        if (!perRound.empty()) {
          const double ratio = medianOf(perRound);
          medianRatios[c].push_back(ratio);
          text = fmt::format("{:.2f}x", ratio);
        }
      } else {
        text = planCell(set, group, bytes);
      }
      row.push_back(std::move(text));
    }
    rows.push_back(std::move(row));
  }

  std::string out = fmt::format(
      "# {}, {} ranks, {} {}: busbw (GB/s); oop = out-of-place, "
      "ip = in-place\n",
      group.first, group.second, dtype, op == "none" ? "" : op);
  std::string counts;
  bool severalRounds = false;
  for (const RecordSet& set : sets) {
    const std::size_t count = roundsWith(set, group);
    severalRounds = severalRounds || count > 1;
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", set.label, count);
  }
  out += fmt::format("# rounds: {}{}\n", counts,
                     severalRounds ? "; busbw = median over rounds; ratio = median over rounds "
                                     "of the ratio within one round"
                                   : "");
  if (ranges) out += fmt::format("# min-max: {}'s busbw over its rounds\n", sets[reference].label);
  if (ceiling)
    out += fmt::format(
        "# % ceil: {}'s busbw against the memory ceiling of {} at its working set "
        "(perf/memory_ceiling.h); probed, 2 threads, working set a+=b traffic/copy GB/s: "
        "{}\n",
        sets[reference].label, group.first, profileText(*profile));
  if (havePlans)
    out += fmt::format("# plan: what {} ran{}\n", sets[reference].label,
                       severalRounds ? " in round 1; *: another round ran another plan" : "");

  std::vector<std::size_t> widths;
  widths.push_back(10);
  for (const Column& column : columns)
    widths.push_back(std::max<std::size_t>(column.heading.size(), 8));
  for (const std::vector<std::string>& row : rows)
    for (std::size_t c = 1; c < row.size(); ++c)
      widths[c] = std::max(widths[c], row[c].size());
  out += fmt::format("# {:>{}}", "size (B)", widths[0]);
  for (std::size_t c = 0; c < columns.size(); ++c) {
    if (columns[c].kind == Kind::plan)
      out += fmt::format("  {}", columns[c].heading);
    else
      out += fmt::format("  {:>{}}", columns[c].heading, widths[c + 1]);
  }
  out += "\n";
  for (const std::vector<std::string>& row : rows) {
    out += fmt::format("{:>{}}", row[0], widths[0] + 2);
    for (std::size_t c = 1; c < row.size(); ++c) {
      if (columns[c - 1].kind == Kind::plan)
        out += fmt::format("  {}", row[c]);
      else
        out += fmt::format("  {:>{}}", row[c], widths[c]);
    }
    out += "\n";
  }
  for (std::size_t c = 0; c < columns.size(); ++c) {
    if (columns[c].kind != Kind::ratio || medianRatios[c].empty()) continue;
    double logSum = 0;
    for (double r : medianRatios[c])
      logSum += std::log(r);
    out += fmt::format("# geometric mean {}: {:.2f}x over {} sizes\n", columns[c].heading,
                       std::exp(logSum / static_cast<double>(medianRatios[c].size())),
                       medianRatios[c].size());
  }
  return out;
}

}  // namespace

int roundOfFile(std::string_view path) {
  const std::string stem = std::filesystem::path(path).stem().string();
  const std::size_t dot = stem.rfind(".r");
  if (dot == std::string::npos || dot + 2 == stem.size()) return 0;
  int round = 0;
  for (std::size_t i = dot + 2; i < stem.size(); ++i) {
    if (stem[i] < '0' || stem[i] > '9' || round > kMaxRound) return 0;
    round = round * 10 + (stem[i] - '0');
  }
  return round <= kMaxRound ? round : 0;
}

std::vector<RecordSet> groupRecordFiles(std::span<const RecordFile> files) {
  struct Grouped {
    RecordSet set;
    bool byRounds = false;
    std::string stem;                // of a single run's file
    std::vector<std::string> paths;  // of each round's file, for the error on a repeated round
  };
  std::vector<Grouped> grouped;
  for (const RecordFile& file : files) {
    if (file.records.empty()) continue;
    const std::string& library = file.records.front().library;
    const int round = roundOfFile(file.path);
    if (round == 0) {
      Grouped single;
      single.set.label = library;
      single.set.rounds.push_back(file.records);
      single.stem = std::filesystem::path(file.path).stem().string();
      grouped.push_back(std::move(single));
      continue;
    }
    auto it = std::find_if(grouped.begin(), grouped.end(),
                           [&](const Grouped& g) { return g.byRounds && g.set.label == library; });
    if (it == grouped.end()) {
      Grouped byRounds;
      byRounds.set.label = library;
      byRounds.byRounds = true;
      grouped.push_back(std::move(byRounds));
      it = std::prev(grouped.end());
    }
    const auto index = static_cast<std::size_t>(round - 1);
    if (it->set.rounds.size() <= index) {
      it->set.rounds.resize(index + 1);
      it->paths.resize(index + 1);
    }
    if (!it->paths[index].empty())
      throw UserError(fmt::format(
          "'{}' and '{}' are both round {} of {}: give each round of a library once (the round "
          "is the N of NAME.rN.json)",
          it->paths[index], file.path, round, library));
    it->set.rounds[index] = file.records;
    it->paths[index] = file.path;
  }
  // A single-run set whose label an earlier set or a set of rounds has gets ":<stem>".
  for (std::size_t i = 0; i < grouped.size(); ++i) {
    if (grouped[i].byRounds) continue;
    const bool taken = std::any_of(grouped.begin(), grouped.end(), [&](const Grouped& other) {
      return &other != &grouped[i] && other.set.label == grouped[i].set.label &&
             (other.byRounds || &other < &grouped[i]);
    });
    if (taken) grouped[i].set.label += ":" + grouped[i].stem;
  }
  std::vector<RecordSet> sets;
  for (Grouped& g : grouped)
    sets.push_back(std::move(g.set));
  return sets;
}

std::vector<BenchRecord> medianRecords(const RecordSet& set) {
  std::vector<BenchRecord> out;
  for (const std::vector<BenchRecord>& round : set.rounds)
    for (const BenchRecord& record : round) {
      const bool seen = std::any_of(out.begin(), out.end(), [&](const BenchRecord& other) {
        return other.collective == record.collective && other.ranks == record.ranks &&
               other.bytes == record.bytes && other.inplace == record.inplace;
      });
      if (!seen) out.push_back(record);
    }
  for (BenchRecord& merged : out) {
    const GroupKey group{merged.collective, merged.ranks};
    std::vector<double> times, algbws, busbws, mins;
    for (const std::vector<BenchRecord>& round : set.rounds)
      if (const BenchRecord* record = findRecord(round, group, merged.bytes, merged.inplace)) {
        times.push_back(record->timeUs);
        algbws.push_back(record->algbwGbps);
        busbws.push_back(record->busbwGbps);
        mins.push_back(record->minUs);
      }
    if (busbws.empty()) continue;
    if (!merged.supported || merged.busbwGbps <= 0) {
      // Round 1 did not run it but a later round did: describe that one.
      for (const std::vector<BenchRecord>& round : set.rounds)
        if (const BenchRecord* record = findRecord(round, group, merged.bytes, merged.inplace)) {
          merged = *record;
          break;
        }
    }
    merged.timeUs = medianOf(times);
    merged.algbwGbps = medianOf(algbws);
    merged.busbwGbps = medianOf(busbws);
    merged.minUs = *std::min_element(mins.begin(), mins.end());
  }
  return out;
}

std::string comparisonTables(std::span<const RecordSet> sets,
                             const std::optional<MemoryProfile>& profile) {
  if (sets.empty()) return {};
  std::size_t reference = 0;
  for (std::size_t i = 0; i < sets.size(); ++i)
    if (const BenchRecord* first = firstRecord(sets[i]); first && first->library == "chorus") {
      reference = i;
      break;
    }
  std::vector<GroupKey> groups;
  for (const RecordSet& set : sets)
    for (const std::vector<BenchRecord>& round : set.rounds)
      for (const BenchRecord& record : round) {
        const GroupKey key{record.collective, record.ranks};
        if (std::find(groups.begin(), groups.end(), key) == groups.end()) groups.push_back(key);
      }
  std::string out;
  for (const GroupKey& group : groups) {
    if (!out.empty()) out += "\n";
    out += groupTable(sets, reference, group, profile);
  }
  return out;
}

}  // namespace chorus::perf
