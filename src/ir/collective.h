// Collective definitions: the precondition (which input chunk starts where) and postcondition
// (which value each output chunk must end with) of every collective, as symbolic chunk values
// (GC3 §3.1–3.2). Shared by the DSL (trace-time checks) and the verifier.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/algorithm.h"

namespace chorus::ir {

// One input chunk: index `index` of rank `rank`'s input buffer at the start of the collective.
struct InputChunk {
  int rank = 0;
  int index = 0;
  friend bool operator==(const InputChunk&, const InputChunk&) = default;
  friend auto operator<=>(const InputChunk&, const InputChunk&) = default;
};

// A symbolic chunk value: the multiset of input chunks reduced into it (a single input chunk
// for copies). Empty means uninitialized. Immutable; copies share storage, so copying is O(1).
// A reduction is stored as a node over its two operands (a DAG shared with every value built
// from them), so reducing is O(1) however many parts the operands hold; the multiset is
// flattened only to compare or print it. Values may be shared between threads.
class ChunkValue {
 public:
  ChunkValue() = default;
  static ChunkValue of(InputChunk chunk);
  // The reduction of the given chunks (any order; duplicates are kept).
  static ChunkValue sum(std::vector<InputChunk> parts);
  // Multiset union: the value of a ⊕ b. Both must be initialized. O(1).
  static ChunkValue reduce(const ChunkValue& a, const ChunkValue& b);

  bool initialized() const { return size() > 0; }
  // Number of contributions, duplicates counted. O(1).
  std::uint64_t size() const;
  // Sorted contributions; duplicates are kept (a double-counted chunk appears twice).
  // O(size · log size): flattens the reduction tree.
  std::vector<InputChunk> parts() const;
  // "in(3,2)" for one chunk, "sum{in(0,2) in(1,2)}" for a reduction, "uninitialized".
  std::string describe() const;
  // Whether two values share storage (copies of one another): then they are equal.
  bool sharesStorageWith(const ChunkValue& other) const { return node_ == other.node_; }

  // Equal multisets. O(1) when the values share storage or differ in size or in their
  // order-independent hash; otherwise both are flattened.
  friend bool operator==(const ChunkValue& a, const ChunkValue& b);

 private:
  struct Node;
  friend class ValueMatcher;
  std::uint64_t hash() const;
  std::shared_ptr<const Node> node_;
};

// Compares many actual values with expected ones, remembering the pairs of storages found
// equal or different, so the copies of one reduction that many ranks hold are flattened once
// per expected value (a postcondition check over every output chunk). Keeps the values it
// compared alive. Not thread-safe.
class ValueMatcher {
 public:
  bool equal(const ChunkValue& actual, const ChunkValue& expected);

 private:
  struct PairHash {
    std::size_t operator()(const std::pair<const void*, const void*>& p) const;
  };
  std::unordered_map<std::pair<const void*, const void*>, bool, PairHash> known_;
  std::vector<ChunkValue> kept_;
};

// A buffer location inside one rank.
struct Location {
  BufferKind buffer = BufferKind::input;
  int index = 0;
  friend bool operator==(const Location&, const Location&) = default;
};

// Pre- and postcondition of one collective on a given number of ranks and chunk factor.
// Implementations are immutable and thread-safe.
class Collective {
 public:
  virtual ~Collective() = default;
  virtual CollectiveKind kind() const = 0;
  // "allreduce", ... or the custom collective's name ("alltonext").
  virtual std::string name() const = 0;
  virtual int nranks() const = 0;
  virtual int chunkFactor() const = 0;
  virtual bool inPlace() const = 0;
  virtual int root() const { return 0; }
  // Buffer sizes in chunks. For in-place collectives the aliased buffer still has its size here.
  virtual int inputChunks(int rank) const = 0;
  virtual int outputChunks(int rank) const = 0;
  // MSCCL nchunksperloop for this collective (max buffer size in chunks).
  virtual int chunksPerLoop() const = 0;
  // Value of input chunk (rank, index) at the start; uninitialized where the input is unused
  // (e.g. non-root ranks of a broadcast).
  virtual ChunkValue initialInput(int rank, int index) const = 0;
  // Value output chunk (rank, index) must hold at the end; nullopt when any value is accepted.
  virtual std::optional<ChunkValue> expectedOutput(int rank, int index) const = 0;
  // False for custom collectives whose postcondition chorus does not know.
  virtual bool hasPostcondition() const { return true; }
  // In-place aliasing: the location that physically holds (buffer, index) on `rank`. Identity
  // for out-of-place collectives and for scratch.
  virtual Location canonical(int rank, Location location) const {
    (void)rank;
    return location;
  }
  // The same collective with every chunk cut into `factor` sub-chunks: chunk j becomes
  // j*factor .. j*factor+factor-1 (used by instances and parallelize).
  virtual std::shared_ptr<const Collective> refined(int factor) const = 0;
};

struct CollectiveOptions {
  int nranks = 0;
  int chunkFactor = 1;
  bool inPlace = false;
  int root = 0;  // broadcast and reduce
};

// Built-in collectives (not custom). Throws OptionError on bad sizes or root.
std::shared_ptr<const Collective> makeCollective(CollectiveKind kind,
                                                 const CollectiveOptions& options);

// Custom collectives that chorus knows by exact name: "alltonext" (GC3 §7.4; also
// "alltonext-forward", msccl-tools' program name) and "alltonext-backward" (rank r receives from
// r+1; also "alltonext-backwards"). Returns nullptr for an unknown name. Users may register
// more (thread-safe).
std::shared_ptr<const Collective> makeCustomCollective(const std::string& name,
                                                       const CollectiveOptions& options);
// A factory returns nullptr when it has no definition for the options (e.g. another rank count).
using CustomCollectiveFactory =
    std::function<std::shared_ptr<const Collective>(const CollectiveOptions& options)>;
// Registering a name again replaces its factory.
void registerCustomCollective(const std::string& name, CustomCollectiveFactory factory);

// Whether `name` is one of chorus's own custom collectives (AllToNext's names) or a group
// reduction's: names that registerCustomCollective's callers must not take over.
bool isChorusCustomCollectiveName(const std::string& name);

// The names makeCustomCollective knows, sorted (registered ones included; thread-safe).
std::vector<std::string> customCollectiveNames();
// customCollectiveNames() and the group-reduction form as one phrase for messages:
// "alltonext, ..., and group reductions such as group-reduction:0,1;2,3".
std::string describeCustomCollectiveNames();

// The collective an IR claims to implement, with the chunk factor derived from chunksPerLoop
// (divided by nranks for allgather, reducescatter and alltoall). A custom collective is named
// by algorithm.customName when set, else by algorithm.name, and only that exact name selects a
// postcondition: a registered custom collective (makeCustomCollective) or "group-reduction:..."
// (the group reduction it describes, group_reduction.h). No prefix is guessed: a program named
// "alltonext_foo" is not AllToNext. An unknown name gets a definition with
// hasPostcondition() == false, inputs initialized on every rank.
std::shared_ptr<const Collective> collectiveOf(const Algorithm& algorithm);

}  // namespace chorus::ir
