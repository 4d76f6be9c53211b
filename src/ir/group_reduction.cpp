#include "ir/group_reduction.h"

#include <fmt/format.h>

#include <charconv>
#include <utility>

#include "support/error.h"
#include "support/index.h"

namespace chorus::ir {
namespace {

class GroupReduction : public Collective {
 public:
  GroupReduction(int nranks, int chunkFactor,
                 std::shared_ptr<const std::vector<std::vector<int>>> groups,
                 std::shared_ptr<const std::vector<int>> groupOf)
      : nranks_(nranks),
        chunkFactor_(chunkFactor),
        groups_(std::move(groups)),
        groupOf_(std::move(groupOf)),
        name_(groupReductionName(*groups_)) {}
  CollectiveKind kind() const override { return CollectiveKind::custom; }
  std::string name() const override { return name_; }
  int nranks() const override { return nranks_; }
  int chunkFactor() const override { return chunkFactor_; }
  bool inPlace() const override { return true; }
  int inputChunks(int) const override { return chunkFactor_; }
  int outputChunks(int) const override { return chunkFactor_; }
  int chunksPerLoop() const override { return chunkFactor_; }
  ChunkValue initialInput(int rank, int index) const override {
    return ChunkValue::of({rank, index});
  }
  std::optional<ChunkValue> expectedOutput(int rank, int index) const override {
    std::vector<InputChunk> parts;
    for (int member : (*groups_)[ix((*groupOf_)[ix(rank)])])
      parts.push_back({member, index});
    return ChunkValue::sum(std::move(parts));
  }
  Location canonical(int, Location l) const override {
    if (l.buffer == BufferKind::output) l.buffer = BufferKind::input;
    return l;
  }
  std::shared_ptr<const Collective> refined(int factor) const override {
    return std::make_shared<GroupReduction>(nranks_, chunkFactor_ * factor, groups_, groupOf_);
  }

 private:
  int nranks_;
  int chunkFactor_;
  std::shared_ptr<const std::vector<std::vector<int>>> groups_;
  std::shared_ptr<const std::vector<int>> groupOf_;
  std::string name_;
};

}  // namespace

std::shared_ptr<const Collective> makeGroupReduction(int nranks, int chunkFactor,
                                                     std::vector<std::vector<int>> groups) {
  if (nranks < 1 || chunkFactor < 1)
    throw OptionError(
        fmt::format("group reduction: needs at least 1 rank and a chunk factor of at least 1, "
                    "got {} and {}",
                    nranks, chunkFactor));
  auto groupOf = std::make_shared<std::vector<int>>(ix(nranks), -1);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].empty())
      throw OptionError(
          fmt::format("group reduction: group {} is empty; every group needs a rank", g));
    for (int d : groups[g]) {
      if (d < 0 || d >= nranks || (*groupOf)[ix(d)] != -1)
        throw OptionError(
            fmt::format("group reduction: rank {} is outside 0..{} or in two groups; the groups "
                        "must partition the ranks",
                        d, nranks - 1));
      (*groupOf)[ix(d)] = static_cast<int>(g);
    }
  }
  for (int d = 0; d < nranks; ++d)
    if ((*groupOf)[ix(d)] == -1)
      throw OptionError(fmt::format(
          "group reduction: rank {} is in no group; the groups must partition the ranks", d));
  return std::make_shared<GroupReduction>(
      nranks, chunkFactor, std::make_shared<const std::vector<std::vector<int>>>(std::move(groups)),
      std::move(groupOf));
}

std::string groupReductionName(const std::vector<std::vector<int>>& groups) {
  std::string name(kGroupReductionPrefix);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (g > 0) name += ';';
    name += fmt::format("{}", fmt::join(groups[g], ","));
  }
  return name;
}

std::shared_ptr<const Collective> groupReductionNamed(const std::string& name,
                                                      const CollectiveOptions& options) {
  if (!name.starts_with(kGroupReductionPrefix)) return nullptr;
  const std::string_view text = std::string_view(name).substr(kGroupReductionPrefix.size());
  std::vector<std::vector<int>> groups(1);
  const char* at = text.data();
  const char* end = text.data() + text.size();
  while (true) {
    int rank = 0;
    const auto [next, error] = std::from_chars(at, end, rank);
    if (error != std::errc())
      throw ParseError(fmt::format(
          "custom collective '{}': expected a rank number at offset {}; a group reduction is "
          "named like group-reduction:0,1;2,3 (ranks by ',', groups by ';')",
          name, kGroupReductionPrefix.size() + static_cast<std::size_t>(at - text.data())));
    groups.back().push_back(rank);
    at = next;
    if (at == end) break;
    if (*at == ';')
      groups.emplace_back();
    else if (*at != ',')
      throw ParseError(fmt::format(
          "custom collective '{}': unexpected '{}' at offset {}; separate ranks by ',' and "
          "groups by ';'",
          name, *at, kGroupReductionPrefix.size() + static_cast<std::size_t>(at - text.data())));
    ++at;
  }
  try {
    return makeGroupReduction(options.nranks, options.chunkFactor, std::move(groups));
  } catch (const OptionError& e) {
    throw ParseError(fmt::format("custom collective '{}' does not fit {} ranks: {}", name,
                                 options.nranks, e.what()));
  }
}

}  // namespace chorus::ir
