// Tracing of DSL programs into ir::Dag with trace-time checks (GC3 §3, §4.1).
#include <algorithm>

#include <fmt/format.h>

#include "chorus/lang.h"
#include "support/error.h"

namespace chorus::lang {

namespace {

std::string slotName(int rank, Buffer buffer, int index) {
  return fmt::format("rank {} {}[{}]", rank, ir::bufferName(buffer), index);
}

std::string rangeName(int rank, Buffer buffer, int index, int count) {
  if (count == 1) return slotName(rank, buffer, index);
  return fmt::format("rank {} {}[{}..{}]", rank, ir::bufferName(buffer), index, index + count - 1);
}

void addUnique(std::vector<int>& list, int value) {
  if (value >= 0 && std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
}

}  // namespace

int Program::locationId(const std::source_location& where) {
  const bool fromCaller = !callerLocation_.empty();
  if (!fromCaller && lastLocation_ >= 0 && where.file_name() == lastFile_ &&
      where.line() == lastLine_)
    return lastLocation_;
  std::string location =
      fromCaller ? callerLocation_ : fmt::format("{}:{}", where.file_name(), where.line());
  const auto [it, added] =
      locationIds_.try_emplace(std::move(location), static_cast<int>(dag_.locations.size()));
  if (added) dag_.locations.push_back(it->first);
  lastFile_ = fromCaller ? nullptr : where.file_name();
  lastLine_ = where.line();
  lastLocation_ = fromCaller ? -1 : it->second;
  return it->second;
}

void Program::fail(const std::string& message, const std::source_location& where) const {
  if (!callerLocation_.empty()) throw ProgramError(message, callerLocation_);
  throw ProgramError(message, where);
}

std::string Violation::describe() const {
  return fmt::format("rank {} {}[{}] holds {} but the collective requires {}", rank,
                     ir::bufferName(buffer), index, actual, expected);
}

Program::Program(std::string name, std::shared_ptr<const ir::Collective> collective,
                 ProgramOptions options) {
  if (!collective) throw OptionError("Program '" + name + "' needs a collective");
  if (options.instances < 1)
    throw OptionError(
        fmt::format("Program '{}': instances must be at least 1, got {}", name, options.instances));
  dag_.name = std::move(name);
  dag_.collective = std::move(collective);
  dag_.protocol = options.protocol;
  dag_.instances = options.instances;
  const int n = dag_.collective->nranks();
  dag_.scratchChunks.assign(n, 0);
  slots_.resize(n);
  for (int r = 0; r < n; ++r) {
    slots_[r].resize(3);
    const auto& c = *dag_.collective;
    slots_[r][static_cast<int>(Buffer::input)].resize(c.inputChunks(r));
    slots_[r][static_cast<int>(Buffer::output)].resize(c.outputChunks(r));
    for (int i = 0; i < c.inputChunks(r); ++i) {
      // In-place aliasing: the value lives in the canonical slot only.
      const auto loc = c.canonical(r, {Buffer::input, i});
      auto& slot = slots_[r][static_cast<int>(loc.buffer)];
      if (loc.index < static_cast<int>(slot.size())) slot[loc.index].value = c.initialInput(r, i);
    }
  }
}

const Program::Slot* Program::findSlot(int rank, Buffer buffer, int index) const {
  if (rank < 0 || rank >= nranks() || index < 0) return nullptr;
  const auto loc = collective().canonical(rank, {buffer, index});
  const auto& slots = slots_[rank][static_cast<int>(loc.buffer)];
  if (loc.index >= static_cast<int>(slots.size())) return nullptr;
  return &slots[loc.index];
}

Program::Slot& Program::slotAt(int rank, Buffer buffer, int index,
                               const std::source_location& where, const char* what) {
  if (rank < 0 || rank >= nranks())
    fail(fmt::format("{}: rank {} is out of range; '{}' has ranks 0..{}", what, rank, dag_.name,
                     nranks() - 1),
         where);
  if (index < 0)
    fail(fmt::format("{}: {} has a negative index", what, slotName(rank, buffer, index)), where);
  const auto loc = collective().canonical(rank, {buffer, index});
  auto& slots = slots_[rank][static_cast<int>(loc.buffer)];
  if (loc.buffer == Buffer::scratch) {
    if (loc.index >= static_cast<int>(slots.size())) slots.resize(loc.index + 1);
    dag_.scratchChunks[rank] = std::max(dag_.scratchChunks[rank], loc.index + 1);
  } else if (loc.index >= static_cast<int>(slots.size())) {
    const int size =
        buffer == Buffer::input ? collective().inputChunks(rank) : collective().outputChunks(rank);
    fail(fmt::format("{}: {} is out of range; the {} buffer of {} on rank {} has {} chunks "
                     "(indices 0..{})",
                     what, slotName(rank, buffer, index), ir::bufferName(buffer),
                     collective().name(), rank, size, size - 1),
         where);
  }
  return slots[loc.index];
}

bool Program::initialized(int rank, Buffer buffer, int index) const {
  const Slot* slot = findSlot(rank, buffer, index);
  return slot && slot->value.initialized();
}

ir::ChunkValue Program::valueAt(int rank, Buffer buffer, int index) const {
  const Slot* slot = findSlot(rank, buffer, index);
  return slot ? slot->value : ir::ChunkValue();
}

ChunkRef Program::chunk(int rank, Buffer buffer, int index, int count, std::source_location where) {
  if (count < 1)
    fail(fmt::format("chunk(): count must be at least 1, got {} for {}", count,
                     slotName(rank, buffer, index)),
         where);
  std::uint64_t stamp = clock_;
  for (int i = 0; i < count; ++i) {
    Slot& slot = slotAt(rank, buffer, index + i, where, "chunk()");
    if (!slot.value.initialized())
      fail(fmt::format("chunk(): {} is uninitialized; only input chunks hold values at the start, "
                       "copy something there first",
                       slotName(rank, buffer, index + i)),
           where);
  }
  return ChunkRef(this, rank, buffer, index, count, stamp);
}

void Program::checkRef(const ChunkRef& ref, const std::source_location& where, const char* what) {
  if (ref.program_ != this)
    fail(fmt::format("{}: the reference to {} belongs to another Program", what,
                     rangeName(ref.rank_, ref.buffer_, ref.index_, ref.count_)),
         where);
  for (int i = 0; i < ref.count_; ++i) {
    Slot& slot = slotAt(ref.rank_, ref.buffer_, ref.index_ + i, where, what);
    if (!slot.value.initialized())
      fail(fmt::format("{}: {} is uninitialized", what,
                       slotName(ref.rank_, ref.buffer_, ref.index_ + i)),
           where);
    if (slot.writeStamp > ref.stamp_)
      fail(fmt::format("{}: stale reference to {}: the chunk was overwritten (by the operation at "
                       "{}) after this reference was made; use the reference returned by that "
                       "operation or call chunk() again",
                       what, slotName(ref.rank_, ref.buffer_, ref.index_ + i),
                       slot.lastWriter >= 0 ? dag_.whereOf(dag_.ops[slot.lastWriter]) : "?"),
           where);
  }
}

ChunkRef Program::record(ir::DagOpKind kind, const ChunkRef& src, int dstRank, Buffer dstBuffer,
                         int dstIndex, const OpOptions& options,
                         const std::source_location& where) {
  const char* what = kind == ir::DagOpKind::copy ? "copy()" : "reduce()";
  if (!traceable_)
    fail(
        fmt::format("{}: the program's ops were taken (takeDag()); trace into a new Program", what),
        where);
  checkRef(src, where, what);
  const int count = src.count_;
  // Validate the destination range before changing any state.
  for (int i = 0; i < count; ++i)
    slotAt(dstRank, dstBuffer, dstIndex + i, where, what);
  if (options.channel < -1 || options.sendTb < -1 || options.recvTb < -1)
    fail(fmt::format("{}: channel and threadblock hints must be >= 0 (or -1 for "
                     "automatic), got channel={} sendTb={} recvTb={}",
                     what, options.channel, options.sendTb, options.recvTb),
         where);

  ir::DagOp op;
  op.id = static_cast<int>(dag_.ops.size());
  op.kind = kind;
  op.src = {src.rank_, src.buffer_, src.index_};
  op.dst = {dstRank, dstBuffer, dstIndex};
  op.count = count;
  op.channel = options.channel;
  op.sendTb = options.sendTb;
  op.recvTb = options.recvTb;
  op.parallel = parallelFactor_;
  op.where = locationId(where);

  // Compute the new values first (the source and destination ranges may overlap).
  std::vector<ir::ChunkValue>& values = recordValues_;
  values.assign(static_cast<std::size_t>(count), ir::ChunkValue());
  for (int i = 0; i < count; ++i) {
    const Slot& s = slotAt(src.rank_, src.buffer_, src.index_ + i, where, what);
    values[i] = s.value;
    if (kind == ir::DagOpKind::reduce) {
      const Slot& d = slotAt(dstRank, dstBuffer, dstIndex + i, where, what);
      values[i] = ir::ChunkValue::reduce(d.value, s.value);
    }
  }
  // Dependencies: reads depend on the last writer (true); writes on the readers since the last
  // write, or on the last writer (false). Gathered in scratch lists, stored at their size.
  std::vector<int>& trueDeps = recordTrueDeps_;
  std::vector<int>& falseDeps = recordFalseDeps_;
  trueDeps.clear();
  falseDeps.clear();
  for (int i = 0; i < count; ++i) {
    Slot& s = slotAt(src.rank_, src.buffer_, src.index_ + i, where, what);
    addUnique(trueDeps, s.lastWriter);
  }
  for (int i = 0; i < count; ++i) {
    Slot& d = slotAt(dstRank, dstBuffer, dstIndex + i, where, what);
    if (kind == ir::DagOpKind::reduce) addUnique(trueDeps, d.lastWriter);
    for (int reader : d.readersSinceWrite)
      if (std::find(trueDeps.begin(), trueDeps.end(), reader) == trueDeps.end())
        addUnique(falseDeps, reader);
    if (d.readersSinceWrite.empty() && kind == ir::DagOpKind::copy &&
        std::find(trueDeps.begin(), trueDeps.end(), d.lastWriter) == trueDeps.end())
      addUnique(falseDeps, d.lastWriter);
  }
  std::sort(trueDeps.begin(), trueDeps.end());
  std::sort(falseDeps.begin(), falseDeps.end());
  op.trueDeps.assign(trueDeps.begin(), trueDeps.end());
  op.falseDeps.assign(falseDeps.begin(), falseDeps.end());
  for (int i = 0; i < count; ++i) {
    Slot& s = slotAt(src.rank_, src.buffer_, src.index_ + i, where, what);
    addUnique(s.readersSinceWrite, op.id);
  }
  ++clock_;
  for (int i = 0; i < count; ++i) {
    Slot& d = slotAt(dstRank, dstBuffer, dstIndex + i, where, what);
    d.value = std::move(values[i]);
    d.writeStamp = clock_;
    d.lastWriter = op.id;
    d.readersSinceWrite.clear();
  }
  dag_.ops.push_back(std::move(op));
  values.clear();
  return ChunkRef(this, dstRank, dstBuffer, dstIndex, count, clock_);
}

ChunkRef ChunkRef::copy(int dstRank, Buffer dstBuffer, int dstIndex, OpOptions options,
                        std::source_location where) const {
  return program_->record(ir::DagOpKind::copy, *this, dstRank, dstBuffer, dstIndex, options, where);
}

ChunkRef ChunkRef::reduce(const ChunkRef& other, OpOptions options,
                          std::source_location where) const {
  if (other.count_ != count_)
    program_->fail(
        fmt::format("reduce(): counts differ: {} has {} chunks but {} has {}; reduce equal-count "
                    "references (use slice() to cut one)",
                    rangeName(rank_, buffer_, index_, count_), count_,
                    rangeName(other.rank_, other.buffer_, other.index_, other.count_),
                    other.count_),
        where);
  if (other.program_ != program_)
    program_->fail("reduce(): the references belong to different Programs", where);
  program_->checkRef(*this, where, "reduce()");
  // c1.reduce(c2): c1 = c1 ⊕ c2 at c1's location; c2 is the source of the data movement.
  return program_->record(ir::DagOpKind::reduce, other, rank_, buffer_, index_, options, where);
}

ChunkRef ChunkRef::slice(int offset, int count, std::source_location where) const {
  if (offset < 0 || count < 1 || offset + count > count_)
    program_->fail(fmt::format("slice({}, {}) is out of range for {} ({} chunks)", offset, count,
                               rangeName(rank_, buffer_, index_, count_), count_),
                   where);
  return ChunkRef(program_, rank_, buffer_, index_ + offset, count, stamp_);
}

Program::ParallelScope Program::parallelize(int factor, std::source_location where) {
  if (factor < 1)
    fail(fmt::format("parallelize({}): the factor must be at least 1", factor), where);
  parallelFactor_ *= factor;
  return ParallelScope(this, factor);
}

Program::ParallelScope::~ParallelScope() {
  program_->parallelFactor_ /= factor_;
}

ir::Dag Program::takeDag() {
  ir::Dag out = std::move(dag_);
  dag_ = ir::Dag{};
  dag_.name = out.name;
  dag_.collective = out.collective;
  dag_.scratchChunks.assign(out.scratchChunks.size(), 0);
  traceable_ = false;
  return out;
}

std::vector<Violation> Program::checkPostcondition() const {
  std::vector<Violation> violations;
  const auto& c = collective();
  if (!c.hasPostcondition()) return violations;
  ir::ValueMatcher matcher;
  for (int r = 0; r < nranks(); ++r) {
    for (int i = 0; i < c.outputChunks(r); ++i) {
      const auto expected = c.expectedOutput(r, i);
      if (!expected) continue;
      const auto actual = valueAt(r, Buffer::output, i);
      if (!matcher.equal(actual, *expected))
        violations.push_back({r, Buffer::output, i, expected->describe(), actual.describe()});
    }
  }
  return violations;
}

std::shared_ptr<const ir::Collective> allReduce(int nranks, int chunkFactor, bool inPlace) {
  return ir::makeCollective(ir::CollectiveKind::allreduce, {nranks, chunkFactor, inPlace, 0});
}
std::shared_ptr<const ir::Collective> allGather(int nranks, int chunkFactor, bool inPlace) {
  return ir::makeCollective(ir::CollectiveKind::allgather, {nranks, chunkFactor, inPlace, 0});
}
std::shared_ptr<const ir::Collective> reduceScatter(int nranks, int chunkFactor, bool inPlace) {
  return ir::makeCollective(ir::CollectiveKind::reducescatter, {nranks, chunkFactor, inPlace, 0});
}
std::shared_ptr<const ir::Collective> allToAll(int nranks, int chunkFactor, bool inPlace) {
  return ir::makeCollective(ir::CollectiveKind::alltoall, {nranks, chunkFactor, inPlace, 0});
}
std::shared_ptr<const ir::Collective> broadcast(int nranks, int chunkFactor, int root,
                                                bool inPlace) {
  return ir::makeCollective(ir::CollectiveKind::broadcast, {nranks, chunkFactor, inPlace, root});
}
std::shared_ptr<const ir::Collective> reduce(int nranks, int chunkFactor, int root, bool inPlace) {
  return ir::makeCollective(ir::CollectiveKind::reduce, {nranks, chunkFactor, inPlace, root});
}
std::shared_ptr<const ir::Collective> allToNext(int nranks, int chunkFactor) {
  return ir::makeCustomCollective("alltonext", {nranks, chunkFactor, false, 0});
}
std::shared_ptr<const ir::Collective> allToNextBackward(int nranks, int chunkFactor) {
  return ir::makeCustomCollective("alltonext-backward", {nranks, chunkFactor, false, 0});
}

}  // namespace chorus::lang
