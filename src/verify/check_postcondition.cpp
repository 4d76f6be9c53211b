#include "verify/check_postcondition.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace chorus::verify {

namespace {

using ir::InputChunk;

constexpr std::size_t kListedParts = 8;  // values with more parts are summarized

// "0..3 5 7..9" for sorted distinct ranks.
std::string describeRanks(const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
      ++j;
    if (!out.empty()) out += ' ';
    out += j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}..{}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return out;
}

// Compressed list of distinct chunks: "in(0..3 5,2) in(7,3)".
std::string describeChunks(const std::vector<InputChunk>& parts) {
  if (parts.size() <= kListedParts) {
    std::string out;
    for (const auto& p : parts) {
      if (!out.empty()) out += ' ';
      out += fmt::format("in({},{})", p.rank, p.index);
    }
    return out;
  }
  std::map<int, std::vector<int>> byIndex;
  for (const auto& p : parts) {
    auto& ranks = byIndex[p.index];
    if (ranks.empty() || ranks.back() != p.rank) ranks.push_back(p.rank);
  }
  std::string out;
  for (auto& [index, ranks] : byIndex) {
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    if (!out.empty()) out += ' ';
    out += fmt::format("in({},{})", describeRanks(ranks), index);
  }
  return out;
}

// Multiset differences of two sorted part lists.
struct Difference {
  std::vector<InputChunk> missing;  // in expected, not (often enough) in actual
  std::vector<InputChunk> extra;    // in actual beyond what expected holds
};

Difference diffParts(const std::vector<InputChunk>& actual,
                     const std::vector<InputChunk>& expected) {
  Difference d;
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < actual.size() || j < expected.size()) {
    if (j == expected.size() || (i < actual.size() && actual[i] < expected[j])) {
      d.extra.push_back(actual[i++]);
    } else if (i == actual.size() || expected[j] < actual[i]) {
      d.missing.push_back(expected[j++]);
    } else {
      ++i;
      ++j;
    }
  }
  return d;
}

std::size_t countOf(const std::vector<InputChunk>& parts, InputChunk chunk) {
  auto [lo, hi] = std::equal_range(parts.begin(), parts.end(), chunk);
  return static_cast<std::size_t>(hi - lo);
}

std::string timesWord(std::size_t n) {
  if (n == 2) return "twice";
  return fmt::format("{} times", n);
}

// "in(1,5) is reduced twice; in(9,5) does not belong there; in(4,5) is missing".
std::string explainDifference(const Difference& d, const std::vector<InputChunk>& actual,
                              const std::vector<InputChunk>& expected) {
  std::vector<std::string> clauses;
  std::vector<InputChunk> repeated;  // extra copies of contributions that belong there
  std::vector<InputChunk> foreign;   // contributions that do not belong at all
  for (const auto& p : d.extra) {
    if (countOf(expected, p) > 0) {
      if (repeated.empty() || repeated.back() != p) repeated.push_back(p);
    } else {
      foreign.push_back(p);
    }
  }
  if (!repeated.empty()) {
    if (repeated.size() <= 4) {
      for (const auto& p : repeated)
        clauses.push_back(
            fmt::format("in({},{}) is reduced {}", p.rank, p.index, timesWord(countOf(actual, p))));
    } else {
      clauses.push_back(fmt::format("{} contributions are reduced more than once: {}",
                                    repeated.size(), describeChunks(repeated)));
    }
  }
  if (!foreign.empty())
    clauses.push_back(fmt::format("{} {} not belong there", describeChunks(foreign),
                                  foreign.size() == 1 ? "does" : "do"));
  if (!d.missing.empty())
    clauses.push_back(d.missing.size() == 1
                          ? fmt::format("{} is missing", describeChunks(d.missing))
                          : fmt::format("{} contributions are missing: {}", d.missing.size(),
                                        describeChunks(d.missing)));
  std::string out;
  for (std::size_t i = 0; i < clauses.size(); ++i)
    out += (i ? "; " : "") + clauses[i];
  return out;
}

}  // namespace

std::string summarizeValue(const ir::ChunkValue& value) {
  if (!value.initialized() || value.size() <= kListedParts) return value.describe();
  const std::vector<InputChunk> parts = value.parts();
  std::string out = fmt::format("sum{{{}}} ({} parts", describeChunks(parts), parts.size());
  std::size_t duplicates = 0;
  for (std::size_t i = 1; i < parts.size(); ++i)
    duplicates += parts[i] == parts[i - 1];
  if (duplicates) out += fmt::format(", {} repeated", duplicates);
  return out + ")";
}

void checkPostcondition(const ProgramModel& model, const std::vector<ir::ChunkValue>& slots,
                        FindingSink& sink) {
  const ir::Collective& collective = *model.collective;
  const int n = collective.nranks();
  ir::ValueMatcher matcher;
  for (int r = 0; r < n; ++r) {
    for (int i = 0; i < collective.outputChunks(r); ++i) {
      const std::optional<ir::ChunkValue> expected = collective.expectedOutput(r, i);
      if (!expected) continue;
      const int slot = model.outputSlot[r][i];
      const ir::ChunkValue& actual = slots[slot];
      if (matcher.equal(actual, *expected)) continue;
      if (sink.full()) {
        sink.markTruncated();
        return;
      }
      const ir::Location stored = model.slotLocation[slot];
      const std::string where =
          stored == ir::Location{ir::BufferKind::output, i}
              ? fmt::format("rank {} output[{}]", r, i)
              : fmt::format("rank {} output[{}] (stored in {}[{}], in-place)", r, i,
                            ir::bufferName(stored.buffer), stored.index);
      std::string message;
      if (!actual.initialized()) {
        message = fmt::format(
            "{} holds no value at the end (nothing wrote it, or what was written was "
            "uninitialized); expected {}; add the transfers that deliver it",
            where, summarizeValue(*expected));
      } else {
        const std::vector<InputChunk> actualParts = actual.parts();
        const std::vector<InputChunk> expectedParts = expected->parts();
        const Difference d = diffParts(actualParts, expectedParts);
        message = fmt::format("{} holds {}: {} (expected {})", where, summarizeValue(actual),
                              explainDifference(d, actualParts, expectedParts),
                              summarizeValue(*expected));
      }
      sink.add(FindingKind::postcondition, r, -1, -1, std::move(message));
    }
  }
}

}  // namespace chorus::verify
