#include "ir/collective.h"

#include <algorithm>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "ir/group_reduction.h"
#include "support/error.h"

namespace chorus::ir {

// A value's storage: a sorted list of contributions (`parts`, for values made by of() and
// sum()), or the reduction of two values (`left` ⊕ `right`, parts empty).
struct ChunkValue::Node {
  std::vector<InputChunk> parts;
  // Mutable only so that ~Node can unlink a chain without recursing (see there).
  mutable std::shared_ptr<const Node> left;
  mutable std::shared_ptr<const Node> right;
  std::uint64_t size = 0;  // contributions, duplicates counted
  std::uint64_t hash = 0;  // sum of mixChunk over the contributions: order-independent

  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  ~Node();
};

namespace {

// splitmix64's finalizer over (rank, index): the per-contribution term of a value's hash.
std::uint64_t mixChunk(InputChunk chunk) {
  std::uint64_t x = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(chunk.rank)) << 32) |
                    static_cast<std::uint32_t>(chunk.index);
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

ChunkValue::Node::~Node() {
  // A reduction chain is as deep as the hops that built it; releasing it by plain member
  // destruction would recurse once per link. Children this node owns alone are unlinked here
  // instead, one at a time (use_count 1: no other reference, so no other thread, can reach it).
  std::vector<std::shared_ptr<const Node>> pending;
  auto unlink = [&pending](std::shared_ptr<const Node>& child) {
    if (child && child.use_count() == 1) pending.push_back(std::move(child));
  };
  unlink(left);
  unlink(right);
  while (!pending.empty()) {
    std::shared_ptr<const Node> node = std::move(pending.back());
    pending.pop_back();
    unlink(node->left);
    unlink(node->right);
  }
}

ChunkValue ChunkValue::of(InputChunk chunk) {
  return sum({chunk});
}

ChunkValue ChunkValue::sum(std::vector<InputChunk> parts) {
  if (!std::is_sorted(parts.begin(), parts.end())) std::sort(parts.begin(), parts.end());
  auto node = std::make_shared<Node>();
  node->size = parts.size();
  for (const InputChunk& part : parts)
    node->hash += mixChunk(part);
  node->parts = std::move(parts);
  ChunkValue v;
  v.node_ = std::move(node);
  return v;
}

ChunkValue ChunkValue::reduce(const ChunkValue& a, const ChunkValue& b) {
  CHORUS_INTERNAL_ASSERT(a.initialized() && b.initialized(), "reduce of an uninitialized value");
  auto node = std::make_shared<Node>();
  node->left = a.node_;
  node->right = b.node_;
  node->size = a.node_->size + b.node_->size;
  node->hash = a.node_->hash + b.node_->hash;
  ChunkValue v;
  v.node_ = std::move(node);
  return v;
}

std::uint64_t ChunkValue::size() const {
  return node_ ? node_->size : 0;
}

std::uint64_t ChunkValue::hash() const {
  return node_ ? node_->hash : 0;
}

std::vector<InputChunk> ChunkValue::parts() const {
  std::vector<InputChunk> out;
  if (!node_) return out;
  if (!node_->left) return node_->parts;
  // Depth-first over the DAG (iterative: chains are deep), then one sort. A node shared by
  // several operands is visited once per use: each use is a contribution.
  out.reserve(node_->size);
  std::vector<const Node*> stack{node_.get()};
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (n->left) {
      stack.push_back(n->right.get());
      stack.push_back(n->left.get());
    } else {
      out.insert(out.end(), n->parts.begin(), n->parts.end());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string ChunkValue::describe() const {
  if (!initialized()) return "uninitialized";
  const std::vector<InputChunk> p = parts();
  if (p.size() == 1) return fmt::format("in({},{})", p[0].rank, p[0].index);
  std::string out = "sum{";
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (i) out += ' ';
    out += fmt::format("in({},{})", p[i].rank, p[i].index);
  }
  return out + "}";
}

bool operator==(const ChunkValue& a, const ChunkValue& b) {
  if (a.node_ == b.node_) return true;
  if (a.size() != b.size() || a.hash() != b.hash()) return false;
  if (a.size() == 0) return true;
  return a.parts() == b.parts();
}

std::size_t ValueMatcher::PairHash::operator()(const std::pair<const void*, const void*>& p) const {
  const auto x = reinterpret_cast<std::uintptr_t>(p.first);
  const auto y = reinterpret_cast<std::uintptr_t>(p.second);
  return std::hash<std::uintptr_t>()(x * 0x9e3779b97f4a7c15ULL ^ y);
}

bool ValueMatcher::equal(const ChunkValue& actual, const ChunkValue& expected) {
  if (actual.sharesStorageWith(expected) || !actual.node_ || !expected.node_)
    return actual == expected;
  const std::pair<const void*, const void*> key{actual.node_.get(), expected.node_.get()};
  auto it = known_.find(key);
  if (it != known_.end()) return it->second;
  const bool same = actual == expected;
  known_.emplace(key, same);
  // The keys are addresses: keep both values alive so no other value can take them.
  kept_.push_back(actual);
  kept_.push_back(expected);
  return same;
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
  // Σ_r in(r, index): the expected value of a reducing collective's outputs. Built once per
  // index and shared by every rank that must hold it (a postcondition check over all ranks
  // then costs one sum per index, and compares by storage where it can). Thread-safe.
  ChunkValue sumOverRanks(int index) const {
    const std::lock_guard<std::mutex> lock(sumsMutex_);
    if (static_cast<int>(sums_.size()) <= index) sums_.resize(index + 1);
    ChunkValue& sum = sums_[index];
    if (!sum.initialized()) sum = sumOver(n(), index);
    return sum;
  }
  CollectiveKind kind_;
  CollectiveOptions options_;

 private:
  mutable std::mutex sumsMutex_;
  mutable std::vector<ChunkValue> sums_;
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
    return sumOverRanks(index);
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
    return sumOverRanks(rank * cf() + index);
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
    return sumOverRanks(index);
  }
  Location canonical(int, Location l) const override {
    if (inPlace() && l.buffer == BufferKind::output) l.buffer = BufferKind::input;
    return l;
  }
};

// AllToNext (GC3 §7.4): out(r)[j] = in(r-1, j) for r >= 1; the last rank's input and rank
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
