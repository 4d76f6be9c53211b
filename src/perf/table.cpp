#include "perf/table.h"

#include <fmt/format.h>

#include <set>

namespace chorus::perf {

namespace {

// nccl-tests' time format: fewer decimals for longer times, always 7 wide.
std::string formatTime(double us) {
  if (us >= 10000) return fmt::format("{:7.0f}", us);
  if (us >= 100) return fmt::format("{:7.1f}", us);
  return fmt::format("{:7.2f}", us);
}

std::string variantColumns(const BenchRecord& record) {
  if (!record.supported) return fmt::format("  {:>7}  {:>6}  {:>6}  {:>6}", "n/a", "", "", "");
  const std::string wrong = record.wrong < 0 ? "N/A" : fmt::format("{}", record.wrong);
  return fmt::format("  {}  {:6.2f}  {:6.2f}  {:>6}", formatTime(record.timeUs), record.algbwGbps,
                     record.busbwGbps, wrong);
}

std::string algorithmColumn(const BenchRecord& outOfPlace, const BenchRecord& inPlace) {
  const std::string& a = outOfPlace.supported ? outOfPlace.algorithm : std::string();
  const std::string& b = inPlace.supported ? inPlace.algorithm : std::string();
  if (a.empty()) return b;
  if (b.empty() || a == b) return a;
  return a + " / " + b;
}

}  // namespace

std::string tableHeader(std::string_view title) {
  std::string out = fmt::format("# {}\n#\n", title);
  out += fmt::format("# {:>72}{:>31}\n", "out-of-place", "in-place");
  out += fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}", "size", "count", "type", "redop",
                     "root");
  for (int i = 0; i < 2; ++i)
    out += fmt::format("  {:>7}  {:>6}  {:>6}  {:>6}", "time", "algbw", "busbw", "#wrong");
  out += "  algorithm\n";
  out += fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}", "(B)", "(elements)", "", "", "");
  for (int i = 0; i < 2; ++i)
    out += fmt::format("  {:>7}  {:>6}  {:>6}  {:>6}", "(us)", "(GB/s)", "(GB/s)", "");
  out += "\n";
  return out;
}

std::string tableRow(const BenchRecord& outOfPlace, const BenchRecord& inPlace) {
  std::string out = fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}", outOfPlace.bytes,
                                outOfPlace.count, outOfPlace.dtype, outOfPlace.op, outOfPlace.root);
  out += variantColumns(outOfPlace);
  out += variantColumns(inPlace);
  const std::string algorithm = algorithmColumn(outOfPlace, inPlace);
  if (!algorithm.empty()) out += "  " + algorithm;
  out += "\n";
  return out;
}

std::int64_t totalWrong(std::span<const BenchRecord> records) {
  std::int64_t wrong = 0;
  for (const BenchRecord& record : records)
    if (record.supported && record.wrong > 0) wrong += record.wrong;
  return wrong;
}

std::string tableFooter(std::span<const BenchRecord> records) {
  bool checked = false;
  double busbwSum = 0;
  int ran = 0;
  std::set<std::string> notes;
  for (const BenchRecord& record : records) {
    if (!record.supported) {
      if (record.note != "in-place not requested")
        notes.insert(fmt::format("{} {}: {}", record.inplace ? "in-place" : "out-of-place",
                                 record.collective, record.note));
      continue;
    }
    checked = checked || record.wrong >= 0;
    busbwSum += record.busbwGbps;
    ++ran;
  }
  std::string out;
  const std::int64_t wrong = totalWrong(records);
  if (!checked)
    out += "# Wrong elements       : not checked (--no-check)\n";
  else
    out += fmt::format("# Wrong elements       : {} {}\n", wrong, wrong == 0 ? "OK" : "FAILED");
  out += fmt::format("# Avg bus bandwidth    : {:.4g} GB/s\n", ran > 0 ? busbwSum / ran : 0.0);
  for (const std::string& note : notes)
    out += fmt::format("# Not run: {}\n", note);
  return out;
}

}  // namespace chorus::perf
