// The chorus DSL (GC3 §3 semantics, in C++): a Program traces chunk copies and
// reductions between per-rank input/output/scratch buffers into an ir::Dag, checking every
// operation at trace time and the collective's postcondition at the end.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/collective.h"
#include "ir/dag.h"

namespace chorus::lang {

using Buffer = ir::BufferKind;
using ir::Protocol;

// Per-operation scheduling directives; -1 lets the compiler choose.
struct OpOptions {
  int channel = -1;
  int sendTb = -1;  // manual threadblock placement on the sending rank
  int recvTb = -1;  // manual threadblock placement on the receiving rank
};

struct ProgramOptions {
  int instances = 1;  // replicate the whole program on distinct channels
  Protocol protocol = Protocol::simple;
};

class Program;

// A reference to `count` contiguous chunks at (rank, buffer, index) as they were when the
// reference was made. Using it after any of those chunks was overwritten is an error (stale).
// Cheap to copy; valid while its Program lives.
class ChunkRef {
 public:
  int rank() const { return rank_; }
  Buffer buffer() const { return buffer_; }
  int index() const { return index_; }
  int count() const { return count_; }

  // Copies these chunks to (dstRank, dstBuffer, dstIndex..+count) and returns the new reference.
  ChunkRef copy(int dstRank, Buffer dstBuffer, int dstIndex, OpOptions options = {},
                std::source_location where = std::source_location::current()) const;
  // this = this ⊕ other, in place at this reference's location; returns the new reference.
  // `other` may live on another rank (a remote reduce); counts must match.
  ChunkRef reduce(const ChunkRef& other, OpOptions options = {},
                  std::source_location where = std::source_location::current()) const;
  // The sub-reference of `count` chunks starting `offset` chunks in.
  ChunkRef slice(int offset, int count,
                 std::source_location where = std::source_location::current()) const;

 private:
  friend class Program;
  ChunkRef(Program* program, int rank, Buffer buffer, int index, int count, std::uint64_t stamp)
      : program_(program),
        rank_(rank),
        buffer_(buffer),
        index_(index),
        count_(count),
        stamp_(stamp) {}
  Program* program_;
  int rank_;
  Buffer buffer_;
  int index_;
  int count_;
  std::uint64_t stamp_;  // trace time at which the referenced chunks were current
};

// A postcondition violation found after tracing.
struct Violation {
  int rank = 0;
  Buffer buffer = Buffer::output;
  int index = 0;
  std::string expected;
  std::string actual;
  std::string describe() const;
};

// Traces one algorithm for one collective. Not thread-safe; one Program per algorithm.
class Program {
 public:
  Program(std::string name, std::shared_ptr<const ir::Collective> collective,
          ProgramOptions options = {});
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  const ir::Collective& collective() const { return *dag_.collective; }
  int nranks() const { return dag_.collective->nranks(); }

  // Reference to the chunks currently at (rank, buffer, index..+count). Throws ProgramError if
  // any is out of range or uninitialized.
  ChunkRef chunk(int rank, Buffer buffer, int index, int count = 1,
                 std::source_location where = std::source_location::current());
  // Whether (rank, buffer, index) currently holds a value (no throw).
  bool initialized(int rank, Buffer buffer, int index) const;

  // RAII scope: ops traced while it lives are replicated `factor` times, each on 1/factor of
  // every chunk and on its own channels (GC3 §5.1 chunk parallelization). Scopes nest.
  class ParallelScope {
   public:
    ParallelScope(const ParallelScope&) = delete;
    ParallelScope& operator=(const ParallelScope&) = delete;
    ~ParallelScope();

   private:
    friend class Program;
    ParallelScope(Program* program, int factor) : program_(program), factor_(factor) {}
    Program* program_;
    int factor_;
  };
  [[nodiscard]] ParallelScope parallelize(
      int factor, std::source_location where = std::source_location::current());

  // Postcondition check on the traced symbolic state; empty when the program is correct.
  std::vector<Violation> checkPostcondition() const;
  // The traced chunk graph (valid until the Program is destroyed or traced further).
  const ir::Dag& dag() const { return dag_; }
  // Moves the traced chunk graph out, to compile it while the Program is checked or freed. The
  // Program keeps its name, collective and symbolic values (checkPostcondition(), valueAt())
  // but no ops: it cannot be traced further.
  ir::Dag takeDag();
  // Symbolic value now at (rank, buffer, index) (after in-place aliasing).
  ir::ChunkValue valueAt(int rank, Buffer buffer, int index) const;

  // For language bindings (chorus.lang in Python): while non-empty, `location` ("file.py:12")
  // replaces the C++ caller's location in trace-time errors and in the ops recorded.
  void setCallerLocation(std::string location) { callerLocation_ = std::move(location); }

 private:
  friend class ChunkRef;
  struct Slot {
    ir::ChunkValue value;
    std::uint64_t writeStamp = 0;  // trace time of the last write
    int lastWriter = -1;           // op id
    std::vector<int> readersSinceWrite;
  };
  Slot& slotAt(int rank, Buffer buffer, int index, const std::source_location& where,
               const char* what);
  const Slot* findSlot(int rank, Buffer buffer, int index) const;
  void checkRef(const ChunkRef& ref, const std::source_location& where, const char* what);
  ChunkRef record(ir::DagOpKind kind, const ChunkRef& src, int dstRank, Buffer dstBuffer,
                  int dstIndex, const OpOptions& options, const std::source_location& where);

  // The location recorded in an op (index into dag_.locations): callerLocation_ when set, else
  // `where`; each distinct location is stored once.
  int locationId(const std::source_location& where);
  [[noreturn]] void fail(const std::string& message, const std::source_location& where) const;

  ir::Dag dag_;
  std::string callerLocation_;
  std::unordered_map<std::string, int> locationIds_;  // dag_.locations' indices
  // The last C++ location interned (a trace records many ops from one line in a row).
  const char* lastFile_ = nullptr;
  std::uint_least32_t lastLine_ = 0;
  int lastLocation_ = -1;
  // slots_[rank][buffer] grows on demand for scratch; input/output are sized by the collective.
  std::vector<std::vector<std::vector<Slot>>> slots_;
  std::uint64_t clock_ = 0;
  bool traceable_ = true;  // false once takeDag() took the ops
  // record()'s working lists, kept to reuse their storage.
  std::vector<ir::ChunkValue> recordValues_;
  std::vector<int> recordTrueDeps_;
  std::vector<int> recordFalseDeps_;
  int parallelFactor_ = 1;
};

// Convenience factories for the built-in collectives.
std::shared_ptr<const ir::Collective> allReduce(int nranks, int chunkFactor, bool inPlace);
std::shared_ptr<const ir::Collective> allGather(int nranks, int chunkFactor, bool inPlace);
std::shared_ptr<const ir::Collective> reduceScatter(int nranks, int chunkFactor, bool inPlace);
std::shared_ptr<const ir::Collective> allToAll(int nranks, int chunkFactor, bool inPlace);
std::shared_ptr<const ir::Collective> broadcast(int nranks, int chunkFactor, int root,
                                                bool inPlace);
std::shared_ptr<const ir::Collective> reduce(int nranks, int chunkFactor, int root, bool inPlace);
// AllToNext (GC3 §7.4): rank i's input ends in rank i+1's output; the last rank sends nothing.
std::shared_ptr<const ir::Collective> allToNext(int nranks, int chunkFactor);
// AllToNext backward ("alltonext-backward"): rank i's input ends in rank i-1's output; rank 0
// sends nothing.
std::shared_ptr<const ir::Collective> allToNextBackward(int nranks, int chunkFactor);

}  // namespace chorus::lang
