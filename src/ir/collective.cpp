#include "ir/collective.h"

#include <algorithm>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "ir/group_reduction.h"
#include "support/error.h"

namespace chorus::ir {

ChunkValue ChunkValue::of(InputChunk chunk) {
  ChunkValue v;
  v.parts_ = std::make_shared<const std::vector<InputChunk>>(std::vector<InputChunk>{chunk});
  return v;
}

ChunkValue ChunkValue::sum(std::vector<InputChunk> parts) {
  if (!std::is_sorted(parts.begin(), parts.end())) std::sort(parts.begin(), parts.end());
  ChunkValue v;
  v.parts_ = std::make_shared<const std::vector<InputChunk>>(std::move(parts));
  return v;
}

ChunkValue ChunkValue::reduce(const ChunkValue& a, const ChunkValue& b) {
  CHORUS_INTERNAL_ASSERT(a.initialized() && b.initialized(), "reduce of an uninitialized value");
  std::vector<InputChunk> merged;
  merged.reserve(a.parts_->size() + b.parts_->size());
  std::merge(a.parts_->begin(), a.parts_->end(), b.parts_->begin(), b.parts_->end(),
             std::back_inserter(merged));
  ChunkValue v;
  v.parts_ = std::make_shared<const std::vector<InputChunk>>(std::move(merged));
  return v;
}

const std::vector<InputChunk>& ChunkValue::parts() const {
  static const std::vector<InputChunk> kEmpty;
  return parts_ ? *parts_ : kEmpty;
}

std::string ChunkValue::describe() const {
  if (!initialized()) return "uninitialized";
  const auto& p = *parts_;
  if (p.size() == 1) return fmt::format("in({},{})", p[0].rank, p[0].index);
  std::string out = "sum{";
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (i) out += ' ';
    out += fmt::format("in({},{})", p[i].rank, p[i].index);
  }
  return out + "}";
}

bool operator==(const ChunkValue& a, const ChunkValue& b) {
  if (a.parts_ == b.parts_) return true;
  return a.parts() == b.parts();
}

namespace {

ChunkValue sumOver(int nranks, int index) {
  std::vector<InputChunk> parts;
  parts.reserve(nranks);
  for (int r = 0; r < nranks; ++r)
    parts.push_back({r, index});
  return ChunkValue::sum(std::move(parts));
}

// Shared state and argument checks of the built-in collectives.
class BuiltinCollective : public Collective {
 public:
  BuiltinCollective(CollectiveKind kind, CollectiveOptions options)
      : kind_(kind), options_(options) {
    if (options.nranks < 1)
      throw OptionError(
          fmt::format("{} needs at least 1 rank, got {}", collectiveName(kind), options.nranks));
    if (options.chunkFactor < 1)
      throw OptionError(fmt::format("{} needs a chunk factor of at least 1, got {}",
                                    collectiveName(kind), options.chunkFactor));
    if (options.root < 0 || options.root >= options.nranks)
      throw OptionError(fmt::format("{} root {} is not a rank of 0..{}", collectiveName(kind),
                                    options.root, options.nranks - 1));
  }
  CollectiveKind kind() const override { return kind_; }
  std::string name() const override { return std::string(collectiveName(kind_)); }
  int nranks() const override { return options_.nranks; }
  int chunkFactor() const override { return options_.chunkFactor; }
  bool inPlace() const override { return options_.inPlace; }
  int root() const override { return options_.root; }
  std::shared_ptr<const Collective> refined(int factor) const override {
    CollectiveOptions o = options_;
    o.chunkFactor *= factor;
    return makeCollective(kind_, o);
  }

 protected:
  int n() const { return options_.nranks; }
  int cf() const { return options_.chunkFactor; }
  CollectiveKind kind_;
  CollectiveOptions options_;
};

// out[c] = Σ_r in(r, c); in-place: output aliases input.
class AllReduce : public BuiltinCollective {
 public:
  using BuiltinCollective::BuiltinCollective;
  int inputChunks(int) const override { return cf(); }
  int outputChunks(int) const override { return cf(); }
  int chunksPerLoop() const override { return cf(); }
  ChunkValue initialInput(int rank, int index) const override {
    return ChunkValue::of({rank, index});
  }
  std::optional<ChunkValue> expectedOutput(int, int index) const override {
    return sumOver(n(), index);
  }
  Location canonical(int, Location l) const override {
    if (inPlace() && l.buffer == BufferKind::output) l.buffer = BufferKind::input;
    return l;
  }
};

// out[r*cf + j] = in(r, j); in-place: input j of rank r aliases output r*cf + j.
class AllGather : public BuiltinCollective {
 public:
  using BuiltinCollective::BuiltinCollective;
  int inputChunks(int) const override { return cf(); }
  int outputChunks(int) const override { return n() * cf(); }
  int chunksPerLoop() const override { return n() * cf(); }
  ChunkValue initialInput(int rank, int index) const override {
    return ChunkValue::of({rank, index});
  }
  std::optional<ChunkValue> expectedOutput(int, int index) const override {
    return ChunkValue::of({index / cf(), index % cf()});
  }
  Location canonical(int rank, Location l) const override {
    if (inPlace() && l.buffer == BufferKind::input)
      return {BufferKind::output, rank * cf() + l.index};
    return l;
  }
};

// out(r)[j] = Σ_q in(q, r*cf + j); in-place: output j of rank r aliases input r*cf + j.
class ReduceScatter : public BuiltinCollective {
 public:
  using BuiltinCollective::BuiltinCollective;
  int inputChunks(int) const override { return n() * cf(); }
  int outputChunks(int) const override { return cf(); }
  int chunksPerLoop() const override { return n() * cf(); }
  ChunkValue initialInput(int rank, int index) const override {
    return ChunkValue::of({rank, index});
  }
  std::optional<ChunkValue> expectedOutput(int rank, int index) const override {
    return sumOver(n(), rank * cf() + index);
  }
  Location canonical(int rank, Location l) const override {
    if (inPlace() && l.buffer == BufferKind::output)
      return {BufferKind::input, rank * cf() + l.index};
    return l;
  }
};

// out(r)[q*cf + j] = in(q, r*cf + j); in-place: output aliases input.
class AllToAll : public BuiltinCollective {
 public:
  using BuiltinCollective::BuiltinCollective;
  int inputChunks(int) const override { return n() * cf(); }
  int outputChunks(int) const override { return n() * cf(); }
  int chunksPerLoop() const override { return n() * cf(); }
  ChunkValue initialInput(int rank, int index) const override {
    return ChunkValue::of({rank, index});
  }
  std::optional<ChunkValue> expectedOutput(int rank, int index) const override {
    return ChunkValue::of({index / cf(), rank * cf() + index % cf()});
  }
  Location canonical(int, Location l) const override {
    if (inPlace() && l.buffer == BufferKind::output) l.buffer = BufferKind::input;
    return l;
  }
};

// out(r)[j] = in(root, j); only the root's input is defined. In-place: output aliases input.
class Broadcast : public BuiltinCollective {
 public:
  using BuiltinCollective::BuiltinCollective;
  int inputChunks(int) const override { return cf(); }
  int outputChunks(int) const override { return cf(); }
  int chunksPerLoop() const override { return cf(); }
  ChunkValue initialInput(int rank, int index) const override {
    return rank == root() ? ChunkValue::of({rank, index}) : ChunkValue();
  }
  std::optional<ChunkValue> expectedOutput(int, int index) const override {
    return ChunkValue::of({root(), index});
  }
  Location canonical(int, Location l) const override {
    if (inPlace() && l.buffer == BufferKind::output) l.buffer = BufferKind::input;
    return l;
  }
};

// out(root)[j] = Σ_r in(r, j); other ranks' outputs are unconstrained.
class Reduce : public BuiltinCollective {
 public:
  using BuiltinCollective::BuiltinCollective;
  int inputChunks(int) const override { return cf(); }
  int outputChunks(int) const override { return cf(); }
  int chunksPerLoop() const override { return cf(); }
  ChunkValue initialInput(int rank, int index) const override {
    return ChunkValue::of({rank, index});
  }
  std::optional<ChunkValue> expectedOutput(int rank, int index) const override {
    if (rank != root()) return std::nullopt;
    return sumOver(n(), index);
  }
  Location canonical(int, Location l) const override {
    if (inPlace() && l.buffer == BufferKind::output) l.buffer = BufferKind::input;
    return l;
  }
};

// AllToNext (seed 000 §7.4): out(r)[j] = in(r-1, j) for r >= 1; the last rank's input and rank
// 0's output are unused. Never aliased.
class AllToNext : public BuiltinCollective {
 public:
  explicit AllToNext(CollectiveOptions o) : BuiltinCollective(CollectiveKind::custom, o) {}
  std::string name() const override { return "alltonext"; }
  int inputChunks(int) const override { return cf(); }
  int outputChunks(int) const override { return cf(); }
  int chunksPerLoop() const override { return cf(); }
  ChunkValue initialInput(int rank, int index) const override {
    return rank + 1 < n() ? ChunkValue::of({rank, index}) : ChunkValue();
  }
  std::optional<ChunkValue> expectedOutput(int rank, int index) const override {
    if (rank == 0) return std::nullopt;
    return ChunkValue::of({rank - 1, index});
  }
  std::shared_ptr<const Collective> refined(int factor) const override {
    CollectiveOptions o = options_;
    o.chunkFactor *= factor;
    return std::make_shared<AllToNext>(o);
  }
};

// AllToNext backward (msccl-tools' alltonext_backward): out(r)[j] = in(r+1, j) for r < n-1;
// rank 0's input and the last rank's output are unused. Never aliased.
class AllToNextBackward : public BuiltinCollective {
 public:
  explicit AllToNextBackward(CollectiveOptions o) : BuiltinCollective(CollectiveKind::custom, o) {}
  std::string name() const override { return "alltonext-backward"; }
  int inputChunks(int) const override { return cf(); }
  int outputChunks(int) const override { return cf(); }
  int chunksPerLoop() const override { return cf(); }
  ChunkValue initialInput(int rank, int index) const override {
    return rank > 0 ? ChunkValue::of({rank, index}) : ChunkValue();
  }
  std::optional<ChunkValue> expectedOutput(int rank, int index) const override {
    if (rank + 1 == n()) return std::nullopt;
    return ChunkValue::of({rank + 1, index});
  }
  std::shared_ptr<const Collective> refined(int factor) const override {
    CollectiveOptions o = options_;
    o.chunkFactor *= factor;
    return std::make_shared<AllToNextBackward>(o);
  }
};

// A custom collective chorus has no definition for: every input chunk initialized, sizes
// from the file, no postcondition.
class UnknownCustom : public BuiltinCollective {
 public:
  UnknownCustom(std::string name, CollectiveOptions o)
      : BuiltinCollective(CollectiveKind::custom, o), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  int inputChunks(int) const override { return cf(); }
  int outputChunks(int) const override { return cf(); }
  int chunksPerLoop() const override { return cf(); }
  ChunkValue initialInput(int rank, int index) const override {
    return ChunkValue::of({rank, index});
  }
  std::optional<ChunkValue> expectedOutput(int, int) const override { return std::nullopt; }
  bool hasPostcondition() const override { return false; }
  std::shared_ptr<const Collective> refined(int factor) const override {
    CollectiveOptions o = options_;
    o.chunkFactor *= factor;
    return std::make_shared<UnknownCustom>(name_, o);
  }

 private:
  std::string name_;
};

std::shared_ptr<const Collective> makeAllToNext(const CollectiveOptions& options) {
  return std::make_shared<AllToNext>(options);
}

std::shared_ptr<const Collective> makeAllToNextBackward(const CollectiveOptions& options) {
  return std::make_shared<AllToNextBackward>(options);
}

// Exact names only: chorus's own, plus the program names msccl-tools gives the same
// collectives ("alltonext-forward", "alltonext-backwards").
struct CustomRegistry {
  std::mutex mutex;
  std::map<std::string, CustomCollectiveFactory> factories{
      {"alltonext", &makeAllToNext},
      {"alltonext-forward", &makeAllToNext},
      {"alltonext-backward", &makeAllToNextBackward},
      {"alltonext-backwards", &makeAllToNextBackward}};
};

CustomRegistry& customRegistry() {
  static CustomRegistry registry;
  return registry;
}

}  // namespace

std::shared_ptr<const Collective> makeCollective(CollectiveKind kind,
                                                 const CollectiveOptions& options) {
  switch (kind) {
    case CollectiveKind::allreduce:
      return std::make_shared<AllReduce>(kind, options);
    case CollectiveKind::allgather:
      return std::make_shared<AllGather>(kind, options);
    case CollectiveKind::reducescatter:
      return std::make_shared<ReduceScatter>(kind, options);
    case CollectiveKind::alltoall:
      return std::make_shared<AllToAll>(kind, options);
    case CollectiveKind::broadcast:
      return std::make_shared<Broadcast>(kind, options);
    case CollectiveKind::reduce:
      return std::make_shared<Reduce>(kind, options);
    case CollectiveKind::custom:
      break;
  }
  throw OptionError(
      "makeCollective() builds the built-in collectives; use makeCustomCollective(name, ...) "
      "for a custom collective");
}

std::shared_ptr<const Collective> makeCustomCollective(const std::string& name,
                                                       const CollectiveOptions& options) {
  auto& registry = customRegistry();
  std::lock_guard lock(registry.mutex);
  auto it = registry.factories.find(name);
  if (it == registry.factories.end()) return nullptr;
  return it->second(options);
}

void registerCustomCollective(const std::string& name, CustomCollectiveFactory factory) {
  auto& registry = customRegistry();
  std::lock_guard lock(registry.mutex);
  registry.factories[name] = factory;
}

bool isChorusCustomCollectiveName(const std::string& name) {
  return name == "alltonext" || name == "alltonext-forward" || name == "alltonext-backward" ||
         name == "alltonext-backwards" || name.starts_with(kGroupReductionPrefix);
}

std::vector<std::string> customCollectiveNames() {
  auto& registry = customRegistry();
  std::lock_guard lock(registry.mutex);
  std::vector<std::string> names;
  names.reserve(registry.factories.size());
  for (const auto& entry : registry.factories)
    names.push_back(entry.first);
  return names;
}

std::string describeCustomCollectiveNames() {
  std::string out;
  for (const std::string& name : customCollectiveNames())
    out += name + ", ";
  return out + fmt::format("and group reductions such as {}0,1;2,3", kGroupReductionPrefix);
}

std::shared_ptr<const Collective> collectiveOf(const Algorithm& algorithm) {
  const int n = std::max(algorithm.nranks, 1);
  CollectiveOptions options;
  options.nranks = n;
  options.inPlace = algorithm.inPlace;
  options.root = algorithm.root;
  const bool perRank = algorithm.collective == CollectiveKind::allgather ||
                       algorithm.collective == CollectiveKind::reducescatter ||
                       algorithm.collective == CollectiveKind::alltoall;
  if (perRank && algorithm.chunksPerLoop % n != 0)
    throw ParseError(fmt::format(
        "{} '{}': nchunksperloop={} is not a multiple of ngpus={}; a {} buffer holds one block "
        "of chunks per rank",
        collectiveName(algorithm.collective), algorithm.name, algorithm.chunksPerLoop, n,
        collectiveName(algorithm.collective)));
  options.chunkFactor =
      std::max(1, perRank ? algorithm.chunksPerLoop / n : algorithm.chunksPerLoop);
  if (algorithm.collective != CollectiveKind::custom)
    return makeCollective(algorithm.collective, options);
  // Exact names only: a name's prefix says nothing about what the program computes.
  const std::string& name = algorithm.customName.empty() ? algorithm.name : algorithm.customName;
  if (auto c = groupReductionNamed(name, options)) return c;
  if (auto c = makeCustomCollective(name, options)) return c;
  return std::make_shared<UnknownCustom>(name, options);
}

}  // namespace chorus::ir
