#include "ir/table_collective.h"

#include <algorithm>

#include <fmt/format.h>

#include "support/error.h"

namespace chorus::ir {

namespace {

// In refined(f), input chunk i becomes chunks i*f .. i*f+f-1: a value's parts refine alike.
ChunkValue refineValue(const ChunkValue& value, int factor, int part) {
  if (!value.initialized()) return value;
  std::vector<InputChunk> parts = value.parts();
  for (InputChunk& chunk : parts)
    chunk.index = chunk.index * factor + part;
  return ChunkValue::sum(std::move(parts));
}

class TableCollective : public Collective {
 public:
  explicit TableCollective(CollectiveTable table) : table_(std::move(table)) {
    for (int r = 0; r < table_.nranks; ++r)
      perLoop_ = std::max({perLoop_, static_cast<int>(table_.initial[r].size()),
                           static_cast<int>(table_.expected[r].size())});
    perLoop_ = std::max(perLoop_, 1);
  }
  CollectiveKind kind() const override { return CollectiveKind::custom; }
  std::string name() const override { return table_.name; }
  int nranks() const override { return table_.nranks; }
  int chunkFactor() const override { return perLoop_; }
  bool inPlace() const override { return false; }
  int inputChunks(int rank) const override {
    return static_cast<int>(table_.initial.at(rank).size());
  }
  int outputChunks(int rank) const override {
    return static_cast<int>(table_.expected.at(rank).size());
  }
  int chunksPerLoop() const override { return perLoop_; }
  ChunkValue initialInput(int rank, int index) const override {
    const auto& row = table_.initial.at(rank);
    return index >= 0 && index < static_cast<int>(row.size()) ? row[index] : ChunkValue();
  }
  std::optional<ChunkValue> expectedOutput(int rank, int index) const override {
    const auto& row = table_.expected.at(rank);
    return index >= 0 && index < static_cast<int>(row.size()) ? row[index] : std::nullopt;
  }
  std::shared_ptr<const Collective> refined(int factor) const override {
    if (factor == 1) return std::make_shared<TableCollective>(table_);
    CollectiveTable out;
    out.name = table_.name;
    out.nranks = table_.nranks;
    out.initial.resize(table_.nranks);
    out.expected.resize(table_.nranks);
    for (int r = 0; r < table_.nranks; ++r) {
      for (const ChunkValue& value : table_.initial[r])
        for (int k = 0; k < factor; ++k)
          out.initial[r].push_back(refineValue(value, factor, k));
      for (const std::optional<ChunkValue>& value : table_.expected[r])
        for (int k = 0; k < factor; ++k)
          out.expected[r].push_back(value ? std::optional(refineValue(*value, factor, k))
                                          : std::nullopt);
    }
    return std::make_shared<TableCollective>(std::move(out));
  }

 private:
  CollectiveTable table_;
  int perLoop_ = 0;
};

void checkTable(const CollectiveTable& table) {
  const std::string& name = table.name;
  if (name.empty()) throw OptionError("a custom collective needs a name");
  if (isChorusCustomCollectiveName(name))
    throw OptionError(fmt::format(
        "a custom collective cannot be named '{}': chorus defines that collective itself; use "
        "lang::allToNext/allToNextBackward (Python: AllToNext) or another name",
        name));
  if (table.nranks < 1)
    throw OptionError(
        fmt::format("custom collective '{}' needs at least 1 rank, got {}", name, table.nranks));
  if (static_cast<int>(table.initial.size()) != table.nranks ||
      static_cast<int>(table.expected.size()) != table.nranks)
    throw OptionError(fmt::format(
        "custom collective '{}': the precondition has {} rows and the postcondition {}, but "
        "there are {} ranks; give one row per rank",
        name, table.initial.size(), table.expected.size(), table.nranks));
  for (int r = 0; r < table.nranks; ++r) {
    for (std::size_t i = 0; i < table.initial[r].size(); ++i) {
      const ChunkValue& value = table.initial[r][i];
      if (!value.initialized()) continue;
      if (!(value == ChunkValue::of({r, static_cast<int>(i)})))
        throw OptionError(fmt::format(
            "custom collective '{}': rank {} input[{}] must start as in({},{}) or unused, not "
            "{}; an input chunk holds its own value",
            name, r, i, r, i, value.describe()));
    }
  }
  for (int r = 0; r < table.nranks; ++r) {
    for (std::size_t i = 0; i < table.expected[r].size(); ++i) {
      const auto& value = table.expected[r][i];
      if (!value) continue;
      if (!value->initialized())
        throw OptionError(fmt::format(
            "custom collective '{}': rank {} output[{}] expects no input chunk; give None for "
            "an output whose value does not matter",
            name, r, i));
      for (const InputChunk& part : value->parts()) {
        const bool exists = part.rank >= 0 && part.rank < table.nranks && part.index >= 0 &&
                            part.index < static_cast<int>(table.initial[part.rank].size()) &&
                            table.initial[part.rank][part.index].initialized();
        if (!exists)
          throw OptionError(fmt::format(
              "custom collective '{}': rank {} output[{}] expects in({},{}), which is not an "
              "input chunk of the precondition",
              name, r, i, part.rank, part.index));
      }
    }
  }
}

}  // namespace

std::shared_ptr<const Collective> makeTableCollective(CollectiveTable table) {
  checkTable(table);
  return std::make_shared<TableCollective>(std::move(table));
}

void registerTableCollective(const std::shared_ptr<const Collective>& collective) {
  CHORUS_INTERNAL_ASSERT(collective != nullptr, "registering a null collective");
  registerCustomCollective(
      collective->name(),
      [collective](const CollectiveOptions& options) -> std::shared_ptr<const Collective> {
        const int base = collective->chunkFactor();
        if (options.nranks != collective->nranks() || options.inPlace ||
            options.chunkFactor % base != 0)
          return nullptr;
        return collective->refined(options.chunkFactor / base);
      });
}

}  // namespace chorus::ir
