#include "runtime/interpreter.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <span>
#include <thread>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "ir/collective.h"
#include "ir/step_endpoints.h"
#include "ir/tiling.h"
#include "runtime/idle_backoff.h"
#include "runtime/post_ahead.h"
#include "runtime/reduce_kernels.h"
#include "runtime/remote_ledger.h"
#include "runtime/stream_copy.h"
#include "support/error.h"

namespace chorus::runtime {

namespace {

constexpr int kBuffers = 3;
// A message received by reference is reduced in blocks of this size, copied out of the
// sender's memory into a buffer that stays in this core's cache.
constexpr std::size_t kBounceBytes = std::size_t{128} << 10;
// A step whose write overlaps a message sent by reference waits for the receiver to copy it;
// after this many idle rounds of its executor thread it evicts the message instead.
constexpr int kEvictAfterIdleRounds = 256;
// After a failure, how long a rank waits for peers still copying its buffers.
constexpr int kAbandonPatienceMs = 1000;
// The message bound of a rank with no connections (a one-rank plan): its tiles are cut at this
// size, or the protocol's smaller cap.
constexpr std::size_t kNoConnectionMessageBytes = std::size_t{1} << 20;

int bufferSlot(ir::BufferKind kind) {
  return static_cast<int>(kind);
}

std::size_t bufferElements(const ir::Algorithm& a, int chunks, std::size_t count) {
  return static_cast<std::size_t>(chunks) / ir::chunksPerBlock(a) * count;
}

const char* opText(ir::OpKind op) {
  return ir::opName(op).data();
}

// `bytes` of `buffer`, starting at a page boundary (the vector keeps a page of slack). FIFO
// slots and users' buffers are page aligned; a heap block starts 16 bytes past one, and
// copying between addresses 16 bytes apart modulo 4 KiB makes every load wait on the store
// before it (4K aliasing), which slowed copies into scratch 3-5x (docs/simulator.md).
std::uint8_t* pageAligned(std::vector<std::uint8_t>& buffer, std::size_t bytes) {
  constexpr std::size_t kPage = 4096;
  if (buffer.size() < bytes + kPage) buffer.resize(bytes + kPage);
  const auto address = reinterpret_cast<std::uintptr_t>(buffer.data());
  return buffer.data() + ((kPage - address % kPage) % kPage);
}

// Buffers of one rank, in chunk-major layout with `chunkElems` elements per chunk.
struct RankMemory {
  std::size_t chunkElems = 0;
  std::size_t elemSize = 0;
  std::uint8_t* base[kBuffers] = {nullptr, nullptr, nullptr};
  transport::RegisteredBuffer* staged = nullptr;  // [kBuffers] padded copies when staging
  bool staging = false;
  std::size_t callBytes = 0;  // the larger of this rank's input and output
  bool streaming = false;     // write input/output with non-temporal stores
  bool overlapping = false;   // the caller's input and output overlap (in place)
  // Set when an in-place plan runs out of place without copying its input home first
  // (PlanFacts::firstUsesFromInput): sources of the steps marked readsInput lie at
  // `firstUses` + (address - inputHome).
  const std::uint8_t* firstUses = nullptr;
  const std::uint8_t* inputHome = nullptr;
  std::uint8_t* privateOutputOf = nullptr;  // user output to fill from a private one at the end
  bool tileOrdered = false;  // in place on one buffer, as PlanFacts::tileOrderedInPlace allows

  std::uint8_t* piece(ir::BufferKind kind, int chunk, std::size_t offset) const {
    return base[bufferSlot(kind)] +
           (static_cast<std::size_t>(chunk) * chunkElems + offset) * elemSize;
  }

  // Pieces `offset`..+len of chunks first..first+count-1 of a buffer.
  transport::RemoteRegion pieces(ir::BufferKind kind, int first, int count, std::size_t offset,
                                 std::size_t len) const {
    transport::RemoteRegion r;
    r.address = reinterpret_cast<std::uintptr_t>(piece(kind, first, offset));
    r.pieceBytes = len * elemSize;
    r.stride = chunkElems * elemSize;
    r.pieces = static_cast<std::uint32_t>(count);
    return r;
  }
};

// Per-threadblock execution state.
struct TaskState {
  const ir::Threadblock* tb = nullptr;
  transport::Fifo* send = nullptr;
  transport::Fifo* recv = nullptr;
  std::size_t step = 0;       // next step within the iteration
  std::size_t iteration = 0;  // current tile
  // Steps finished over all iterations. Written by the task's executor thread only (release),
  // read by other threadblocks' dependency checks (acquire).
  std::atomic<std::uint64_t> completed{0};
  bool done = false;
  // Tiles whose receive destination this call posted on `recv` (Fifo::postRecv): every
  // iteration below postedThrough (0: none posted).
  std::size_t postedThrough = 0;
  bool mayPost = false;        // `recv` takes posts at all (Fifo::acceptsPost)
  bool sendSavesCopy = false;  // `send` sends references itself (Fifo::remoteSavesACopy)
};

// How one executor thread's share of the tasks ended.
enum class WorkerEnd { finished, stopped, timedOut };

class RankExecutor {
 public:
  RankExecutor(const ir::Algorithm& algorithm, int rank, const CollectiveArgs& args,
               transport::ConnectionSet& connections, const ExecOptions& options)
      : a_(algorithm),
        rank_(rank),
        args_(args),
        connections_(connections),
        options_(options),
        program_(algorithm.ranks.at(rank)) {
    if (options.workspace == nullptr) ownWorkspace_ = std::make_unique<Workspace>();
    Workspace& workspace = options.workspace ? *options.workspace : *ownWorkspace_;
    workspace_ = &workspace;
    mem_.staged = workspace.buffers;
    facts_ = &workspace.facts;
    cached_ = options.planKey != 0 && facts_->key == options.planKey;
    if (!cached_) {
      facts_->key = 0;
      facts_->collective = ir::collectiveOf(algorithm);
      for (auto kind : {ir::BufferKind::input, ir::BufferKind::output})
        facts_->home[bufferSlot(kind)] = facts_->collective->canonical(rank, {kind, 0});
      facts_->aliasedAtChunk = -1;
      facts_->firstUsesAtChunk = -1;
      facts_->tileOrderedInPlace = -1;
    }
    collective_ = facts_->collective.get();
  }

  void run() {
    prepareMemory();
    if (mem_.chunkElems == 0) return finish();
    prepareTasks();
    loop();
    workspace_->evictions += ledger_.evictions();
    finish();
  }

 private:
  // ---- memory ------------------------------------------------------------------------------
  // Where chunk 0 of the input or output lies (PlanFacts::home).
  ir::Location home(ir::BufferKind kind) const { return facts_->home[bufferSlot(kind)]; }

  void prepareMemory() {
    mem_.elemSize = dataTypeSize(args_.type);
    PlanFacts::Geometry& g = facts_->geometry;
    if (!cached_ || g.count != args_.count || g.elemSize != mem_.elemSize) {
      const std::size_t q = ir::chunksPerBlock(a_);
      g.count = args_.count;
      g.elemSize = mem_.elemSize;
      g.chunkElems = (g.count + q - 1) / q;
      g.divisible = g.count % q == 0;
      g.inBytes = elements(collective_->inputChunks(rank_)) * mem_.elemSize;
      g.outBytes = elements(collective_->outputChunks(rank_)) * mem_.elemSize;
      g.tileElems = 0;
    }
    mem_.chunkElems = g.chunkElems;
    const bool divisible = g.divisible;
    const std::size_t inBytes = g.inBytes;
    const std::size_t outBytes = g.outBytes;
    auto* userIn = static_cast<std::uint8_t*>(const_cast<void*>(args_.input));
    auto* userOut = static_cast<std::uint8_t*>(args_.output);
    mem_.callBytes = std::max(inBytes, outBytes);
    mem_.overlapping = userIn && userOut && inBytes && outBytes && userIn < userOut + outBytes &&
                       userOut < userIn + inBytes;
    mem_.streaming =
        callStreams(inBytes, outBytes, mem_.overlapping, a_.nranks,
                    ir::collectiveReduces(a_.collective), options_.streamingWorkingSetBytes);
    bool aliasOk = true;
    if (a_.inPlace) {
      for (auto kind : {ir::BufferKind::input, ir::BufferKind::output}) {
        const auto c = home(kind);
        if (c.buffer == kind) continue;
        std::uint8_t* self = kind == ir::BufferKind::input ? userIn : userOut;
        std::uint8_t* other = c.buffer == ir::BufferKind::input ? userIn : userOut;
        aliasOk = aliasOk && self == other + c.index * mem_.chunkElems * mem_.elemSize;
      }
    } else if (userIn && userOut && inBytes && outBytes) {
      // Out-of-place plans must not see overlapping buffers.
      aliasOk = userIn + inBytes <= userOut || userOut + outBytes <= userIn;
    }
    if (a_.inPlace && divisible && !aliasOk && userIn && userOut)
      aliasOk = moveInputHome(userIn, inBytes, userOut, outBytes);
    if (!a_.inPlace && divisible && !aliasOk && userIn && userOut)
      aliasOk = identityAlias(userIn, inBytes, userOut, outBytes) ||
                (mem_.tileOrdered = tileOrderedInPlace(userIn, inBytes, userOut, outBytes)) ||
                privatizeOverlap(userIn, inBytes, userOut, outBytes);
    // Each tile is read just before it is overwritten, so it is in the cache: non-temporal
    // stores, which evict it first, measured slower there (docs/performance.md).
    if (mem_.tileOrdered) mem_.streaming = false;
    mem_.staging = !divisible || !aliasOk;
    if (!mem_.staging) {
      mem_.base[bufferSlot(ir::BufferKind::input)] = userIn;
      mem_.base[bufferSlot(ir::BufferKind::output)] = userOut;
    } else {
      stageIn(userIn);
    }
    // Aliased-away buffers point into their canonical buffer.
    for (auto kind : {ir::BufferKind::input, ir::BufferKind::output}) {
      const auto c = home(kind);
      if (c.buffer != kind)
        mem_.base[bufferSlot(kind)] =
            mem_.base[bufferSlot(c.buffer)] + c.index * mem_.chunkElems * mem_.elemSize;
    }
    mem_.base[bufferSlot(ir::BufferKind::scratch)] =
        mem_.staged[bufferSlot(ir::BufferKind::scratch)].reserve(
            static_cast<std::size_t>(program_.scratchChunks) * mem_.chunkElems * mem_.elemSize);
  }

  // An in-place plan called with separate buffers: when the whole input can live inside the
  // user's output (AllReduce, AllGather, Broadcast...), one copy of the input to its place in
  // the output makes the call in place, which is cheaper than staging both buffers. False when
  // that cannot work (e.g. ReduceScatter, whose output is a part of the input).
  bool moveInputHome(std::uint8_t*& userIn, std::size_t inBytes, std::uint8_t* userOut,
                     std::size_t outBytes) {
    std::size_t offset = 0;  // where the input starts inside the output, in chunks
    const auto in = home(ir::BufferKind::input);
    const auto out = home(ir::BufferKind::output);
    if (in.buffer == ir::BufferKind::output)
      offset = in.index;  // input inside output
    else if (out.buffer != ir::BufferKind::input || out.index != 0)
      return false;  // same base
    std::uint8_t* home = userOut + offset * mem_.chunkElems * mem_.elemSize;
    if (home + inBytes > userOut + outBytes) return false;
    if (!mem_.overlapping && firstUsesFromInput(static_cast<int>(offset))) {
      // Only the chunks the plan never writes are copied; the others are read from the input
      // by the steps that use them before they are written (ledger-free: the input never
      // changes).
      const std::size_t chunkBytes = mem_.chunkElems * mem_.elemSize;
      for (int c : facts_->unwrittenInputChunks) {
        const std::size_t at = static_cast<std::size_t>(c - static_cast<int>(offset)) * chunkBytes;
        std::memcpy(home + at, userIn + at, std::min(chunkBytes, inBytes - std::min(at, inBytes)));
      }
      mem_.firstUses = userIn;
      mem_.inputHome = home;
    } else {
      std::memmove(home, userIn, inBytes);
    }
    userIn = home;
    return true;
  }

  // PlanFacts::firstUsesFromInput for the input at canonical chunk `at` of its buffer.
  bool firstUsesFromInput(int at) {
    PlanFacts& f = *facts_;
    if (cached_ && f.firstUsesAtChunk == at) return f.firstUsesFromInput;
    f.firstUsesAtChunk = at;
    f.firstUsesFromInput = false;
    const int chunks = collective_->inputChunks(rank_);
    const auto inputBuffer = home(ir::BufferKind::input).buffer;
    // The canonical chunk a buffer reference lands on, or -1 outside the input's chunks.
    auto inputChunk = [&](ir::BufferKind kind, int index) {
      const auto c = collective_->canonical(rank_, {kind, index});
      return c.buffer == inputBuffer && c.index >= at && c.index < at + chunks ? c.index - at : -1;
    };
    const auto& tbs = program_.threadblocks;
    std::vector<int> owner(static_cast<std::size_t>(chunks), -1);  // the one tb touching it
    std::vector<char> written(static_cast<std::size_t>(chunks), 0);
    f.readsInput.assign(tbs.size(), {});
    for (std::size_t t = 0; t < tbs.size(); ++t) {
      f.readsInput[t].assign(tbs[t].steps.size(), 0);
      for (std::size_t k = 0; k < tbs[t].steps.size(); ++k) {
        const ir::Step& s = tbs[t].steps[k];
        int before = 0, after = 0;  // source pieces read before / after their chunk's first write
        for (int i = 0; i < s.count; ++i) {
          for (const bool isSrc : {true, false}) {
            const bool used = isSrc ? ir::opReadsSrc(s.op) : ir::opWritesDst(s.op);
            if (!used) continue;
            const int c = isSrc ? inputChunk(s.srcBuffer, s.srcIndex + i)
                                : inputChunk(s.dstBuffer, s.dstIndex + i);
            if (c < 0) continue;
            int& who = owner[static_cast<std::size_t>(c)];
            if (who >= 0 && who != static_cast<int>(t)) return false;  // two threadblocks
            who = static_cast<int>(t);
            if (isSrc) (written[static_cast<std::size_t>(c)] ? after : before)++;
            // A destination read before the chunk's first write would need the input too.
            if (!isSrc && ir::opReadsDst(s.op) && !written[static_cast<std::size_t>(c)])
              return false;
          }
        }
        // Mark this step's writes only now: a step reads its sources before it writes.
        if (ir::opWritesDst(s.op))
          for (int i = 0; i < s.count; ++i)
            if (const int c = inputChunk(s.dstBuffer, s.dstIndex + i); c >= 0)
              written[static_cast<std::size_t>(c)] = 1;
        if (before > 0 && (after > 0 || before < s.count)) return false;  // mixed sources
        f.readsInput[t][k] = before > 0 ? 1 : 0;
      }
    }
    f.unwrittenInputChunks.clear();
    for (int c = 0; c < chunks; ++c)
      if (!written[static_cast<std::size_t>(c)]) f.unwrittenInputChunks.push_back(at + c);
    f.firstUsesFromInput = true;
    return true;
  }

  // An out-of-place plan called with overlapping (in-place) buffers. A verified plan never
  // reads an output chunk before writing it, so a private copy of one side removes the
  // overlap; the smaller side is privatized: the output (filled into the user's at the end)
  // when the plan never writes its input, else a copy of the input.
  bool privatizeOverlap(std::uint8_t*& userIn, std::size_t inBytes, std::uint8_t*& userOut,
                        std::size_t outBytes) {
    if (outBytes < inBytes && !writesInput()) {
      mem_.privateOutputOf = userOut;
      userOut = mem_.staged[bufferSlot(ir::BufferKind::output)].reserve(outBytes);
      return true;
    }
    std::uint8_t* copy = mem_.staged[bufferSlot(ir::BufferKind::input)].reserve(inBytes);
    std::memcpy(copy, userIn, inBytes);
    userIn = copy;
    return true;
  }

  // The input lies inside the output at a whole chunk, and the plan only ever writes that part
  // of the output by copying each chunk from itself (AllGather's own block): then the buffers
  // may overlap as they are, and those copies are skipped (see execute()).
  bool identityAlias(const std::uint8_t* userIn, std::size_t inBytes, const std::uint8_t* userOut,
                     std::size_t outBytes) {
    const std::size_t chunkBytes = mem_.chunkElems * mem_.elemSize;
    if (userIn < userOut || userIn + inBytes > userOut + outBytes || chunkBytes == 0 ||
        static_cast<std::size_t>(userIn - userOut) % chunkBytes != 0)
      return false;
    const int at = static_cast<int>(static_cast<std::size_t>(userIn - userOut) / chunkBytes);
    const int chunks = collective_->inputChunks(rank_);
    if (!cached_ || facts_->aliasedAtChunk != at) {
      facts_->aliasedAtChunk = at;
      facts_->aliasIsIdentity = true;
      for (const auto& tb : program_.threadblocks)
        for (const auto& s : tb.steps) {
          if (!ir::opWritesDst(s.op) || s.dstBuffer != ir::BufferKind::output) continue;
          if (s.dstIndex + s.count <= at || s.dstIndex >= at + chunks) continue;
          const bool identity = ir::opCopiesSrcToDst(s.op) &&
                                s.srcBuffer == ir::BufferKind::input && s.dstIndex >= at &&
                                s.dstIndex + s.count <= at + chunks &&
                                s.dstIndex - at == s.srcIndex;
          facts_->aliasIsIdentity = facts_->aliasIsIdentity && identity;
        }
    }
    return facts_->aliasIsIdentity;
  }

  // PlanFacts::tileOrderedInPlace for this call's buffers.
  bool tileOrderedInPlace(const std::uint8_t* userIn, std::size_t inBytes,
                          const std::uint8_t* userOut, std::size_t outBytes) {
    if (userIn != userOut || inBytes != outBytes) return false;
    PlanFacts& f = *facts_;
    if (cached_ && f.tileOrderedInPlace >= 0) return f.tileOrderedInPlace != 0;
    f.tileOrderedInPlace = 0;
    if (writesInput()) return false;
    const auto& tbs = program_.threadblocks;
    const int chunks = collective_->inputChunks(rank_);
    if (chunks != collective_->outputChunks(rank_)) return false;
    // Per chunk: the one threadblock touching it, its last reading step and first writing step.
    struct Use {
      int tb = -1;
      int lastRead = -1;
      int firstWrite = INT_MAX;
    };
    std::vector<Use> uses(static_cast<std::size_t>(chunks));
    auto touch = [&](int chunk, int tb) {
      Use& u = uses[static_cast<std::size_t>(chunk)];
      if (u.tb >= 0 && u.tb != tb) return false;
      u.tb = tb;
      return true;
    };
    for (std::size_t t = 0; t < tbs.size(); ++t)
      for (std::size_t k = 0; k < tbs[t].steps.size(); ++k) {
        const ir::Step& s = tbs[t].steps[k];
        const bool onItself = ir::opCopiesSrcToDst(s.op) && s.srcBuffer == ir::BufferKind::input &&
                              s.dstBuffer == ir::BufferKind::output && s.srcIndex == s.dstIndex;
        if (onItself) continue;
        const int tb = static_cast<int>(t), step = static_cast<int>(k);
        for (int i = 0; i < s.count; ++i) {
          if (ir::opReadsSrc(s.op) && s.srcBuffer == ir::BufferKind::input) {
            if (!touch(s.srcIndex + i, tb)) return false;
            auto& last = uses[static_cast<std::size_t>(s.srcIndex + i)].lastRead;
            last = std::max(last, step);
          }
          if (ir::opWritesDst(s.op) && s.dstBuffer == ir::BufferKind::output) {
            if (!touch(s.dstIndex + i, tb)) return false;
            auto& first = uses[static_cast<std::size_t>(s.dstIndex + i)].firstWrite;
            first = std::min(first, step);
          }
        }
      }
    for (const Use& u : uses)
      if (u.lastRead >= u.firstWrite) return false;
    f.tileOrderedInPlace = 1;
    return true;
  }

  bool writesInput() const {
    for (const auto& tb : program_.threadblocks)
      for (const auto& s : tb.steps)
        if (ir::opWritesDst(s.op) && s.dstBuffer == ir::BufferKind::input) return true;
    return false;
  }

  // Copies the user's blocks into padded canonical buffers (block b at b * chunksPerBlock chunks).
  void stageIn(const std::uint8_t* userIn) {
    const std::size_t q = ir::chunksPerBlock(a_);
    const std::size_t blockBytes = args_.count * mem_.elemSize;
    const std::size_t paddedBlockBytes = q * mem_.chunkElems * mem_.elemSize;
    for (auto kind : {ir::BufferKind::input, ir::BufferKind::output}) {
      if (home(kind).buffer != kind) continue;
      const int chunks = kind == ir::BufferKind::input ? collective_->inputChunks(rank_)
                                                       : collective_->outputChunks(rank_);
      const std::size_t bytes = static_cast<std::size_t>(chunks) * mem_.chunkElems * mem_.elemSize;
      mem_.base[bufferSlot(kind)] = mem_.staged[bufferSlot(kind)].reserve(bytes);
      std::memset(mem_.base[bufferSlot(kind)], 0, bytes);
    }
    // The user's input lands where the (canonical) input lives, block by block.
    if (userIn == nullptr) return;
    const std::size_t blocks = static_cast<std::size_t>(collective_->inputChunks(rank_)) / q;
    const auto c = home(ir::BufferKind::input);
    std::uint8_t* dst = mem_.base[bufferSlot(c.buffer)] + c.index * mem_.chunkElems * mem_.elemSize;
    for (std::size_t b = 0; b < blocks; ++b)
      std::memcpy(dst + b * paddedBlockBytes, userIn + b * blockBytes, blockBytes);
  }

  void stageOut() {
    const std::size_t q = ir::chunksPerBlock(a_);
    const std::size_t blockBytes = args_.count * mem_.elemSize;
    const std::size_t paddedBlockBytes = q * mem_.chunkElems * mem_.elemSize;
    auto* userOut = static_cast<std::uint8_t*>(args_.output);
    if (userOut == nullptr) return;
    const std::size_t blocks = static_cast<std::size_t>(collective_->outputChunks(rank_)) / q;
    const std::uint8_t* src = mem_.base[bufferSlot(ir::BufferKind::output)];
    for (std::size_t b = 0; b < blocks; ++b)
      std::memmove(userOut + b * blockBytes, src + b * paddedBlockBytes, blockBytes);
  }

  void finish() {
    if (mem_.chunkElems == 0) return;
    if (mem_.staging) stageOut();
    if (mem_.privateOutputOf)
      std::memcpy(mem_.privateOutputOf, mem_.base[bufferSlot(ir::BufferKind::output)],
                  elements(collective_->outputChunks(rank_)) * mem_.elemSize);
    if (args_.op == ReduceOp::avg) averageOutputs();
  }

  // avg reduces as sum; the outputs that hold reductions are divided by the rank count once.
  void averageOutputs() {
    const bool reduces = ir::collectiveReduces(a_.collective) &&
                         (a_.collective != ir::CollectiveKind::reduce || rank_ == a_.root);
    if (!reduces || args_.output == nullptr) return;
    divideElements(args_.type, args_.output, elements(collective_->outputChunks(rank_)), a_.nranks);
  }

  // ---- tasks -------------------------------------------------------------------------------
  // Elements of a buffer of `chunks` chunks for this call's count.
  std::size_t elements(int chunks) const { return bufferElements(a_, chunks, args_.count); }

  void prepareTasks() {
    if (!cached_) derivePlanFacts();
    tasks_ = taskStates(program_.threadblocks.size());
    for (std::size_t t = 0; t < tasks_.size(); ++t) {
      TaskState& task = tasks_[t];
      task.tb = &program_.threadblocks[t];
      task.send = facts_->sendFifos[t];
      task.recv = facts_->recvFifos[t];
      task.done = task.tb->steps.empty();
      // Flagged formats where the transport has them (shm); Simple elsewhere.
      if (task.send) task.send->setLineFormat(lineFormat());
      if (task.recv) task.recv->setLineFormat(lineFormat());
      // Asked once per call, not on every idle poll: most transports take neither.
      task.mayPost = task.recv && task.recv->acceptsPost(task.recv->slotBytes());
      task.sendSavesCopy = task.send && task.send->remoteSavesACopy();
    }
    // Every rank derives the same tile from the whole algorithm and the transport's slot size.
    PlanFacts::Geometry& g = facts_->geometry;
    if (g.tileElems == 0) {
      const ir::Tiling tiling = ir::tileChunks(
          mem_.chunkElems, mem_.elemSize,
          ir::messageBytes(a_.protocol,
                           facts_->slotBytes ? facts_->slotBytes : kNoConnectionMessageBytes),
          facts_->maxCount);
      g.tileElems = tiling.tileElems;
      g.iterations = tiling.tiles;
    }
    tileElems_ = g.tileElems;
    iterations_ = g.iterations;
  }

  // `n` fresh task states in the workspace's storage (grown when too small).
  std::span<TaskState> taskStates(std::size_t n) {
    static_assert(std::is_trivially_destructible_v<TaskState> &&
                      alignof(TaskState) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__,
                  "task states live in reused raw storage");
    const std::size_t bytes = n * sizeof(TaskState);
    if (workspace_->taskBytesSize < bytes) {
      workspace_->taskBytes.reset(new std::byte[bytes]);
      workspace_->taskBytesSize = bytes;
    }
    auto* states = reinterpret_cast<TaskState*>(workspace_->taskBytes.get());
    for (std::size_t t = 0; t < n; ++t)
      new (states + t) TaskState{};
    return {states, n};
  }

  static_assert(ir::kLlMessageCap == transport::kLlMaxMessageBytes &&
                    ir::kLl128MessageCap == transport::kLl128MaxMessageBytes,
                "a plan's LL/LL128 messages must fit the transport's flagged formats");
  // How this plan's messages are laid out on transports with flagged formats (Fifo::setLineFormat).
  transport::LineFormat lineFormat() const {
    switch (a_.protocol) {
      case ir::Protocol::ll:
        return transport::LineFormat::ll;
      case ir::Protocol::ll128:
        return transport::LineFormat::ll128;
      case ir::Protocol::simple:
        break;
    }
    return transport::LineFormat::simple;
  }

  void derivePlanFacts() {
    PlanFacts& f = *facts_;
    ir::requireStepEndpoints(a_, "run");  // plans may reach the interpreter unverified
    ir::requireTwoSidedOps(a_, "the CPU interpreter");
    f.maxCount = ir::largestMessageChunks(a_);
    f.reduces = false;
    for (const auto& r : a_.ranks)
      for (const auto& tb : r.threadblocks)
        for (const auto& s : tb.steps)
          f.reduces = f.reduces || ir::opReducesReceived(s.op);
    bool read[kBuffers] = {false, false, false};
    for (const auto& tb : program_.threadblocks)
      for (const auto& s : tb.steps) {
        if (ir::opReadsSrc(s.op)) read[bufferSlot(s.srcBuffer)] = true;
        if (ir::opReadsDst(s.op)) read[bufferSlot(s.dstBuffer)] = true;
      }
    for (auto kind : {ir::BufferKind::input, ir::BufferKind::output})
      f.streamable[bufferSlot(kind)] = !a_.inPlace && !read[bufferSlot(kind)];
    f.postAheadStep.assign(program_.threadblocks.size(), -1);
    for (std::size_t t = 0; t < program_.threadblocks.size(); ++t)
      f.postAheadStep[t] = postAheadStep(program_, t, a_.inPlace);
    const std::size_t n = program_.threadblocks.size();
    f.sendFifos.assign(n, nullptr);
    f.recvFifos.assign(n, nullptr);
    f.slotBytes = 0;
    for (std::size_t t = 0; t < n; ++t) {
      const ir::Threadblock& tb = program_.threadblocks[t];
      if (tb.sendPeer >= 0) f.sendFifos[t] = &connections_.sendFifo(tb.sendPeer, tb.channel);
      if (tb.recvPeer >= 0) f.recvFifos[t] = &connections_.recvFifo(tb.recvPeer, tb.channel);
      for (auto* fifo : {f.sendFifos[t], f.recvFifos[t]})
        if (fifo)
          f.slotBytes = f.slotBytes ? std::min(f.slotBytes, fifo->slotBytes()) : fifo->slotBytes();
    }
    f.ranksOnThisHost = connections_.ranksOnThisHost();
    f.progressThreads = connections_.progressThreads();
    f.geometry.tileElems = 0;  // derived again from this plan's slots and counts
    f.key = options_.planKey;
  }

  void loop() {
    try {
      runWorkers();
    } catch (...) {
      for (TaskState& task : tasks_)  // no transport may write the caller's buffers any more
        if (task.postedThrough > 0) task.recv->unpost();
      ledger_.abandon(kAbandonPatienceMs);
      throw;
    }
  }

  void runWorkers() {
    std::size_t unfinished = 0;
    for (const auto& task : tasks_)
      unfinished += task.done ? 0 : 1;
    unfinished_.store(unfinished, std::memory_order_relaxed);
    const int workers = workerCount();
    WorkerEnd end = WorkerEnd::finished;
    if (workers == 1) {
      end = runWorker(0, 1);
    } else {
      std::exception_ptr error;
      std::mutex errorMutex;
      auto record = [&] {
        std::lock_guard lock(errorMutex);
        if (!error) error = std::current_exception();
        stop_ = true;
      };
      std::vector<std::thread> helpers;
      for (int w = 1; w < workers; ++w)
        helpers.emplace_back([&, w] {
          try {
            runWorker(w, workers);
          } catch (...) {
            record();
          }
        });
      try {
        end = runWorker(0, workers);
      } catch (...) {
        record();
      }
      stop_ = true;
      for (auto& helper : helpers)
        helper.join();
      if (error) std::rethrow_exception(error);
    }
    if (end == WorkerEnd::timedOut) failTimeout();  // every executor thread has stopped
  }

  // Executor threads for this call: ExecOptions::threads for large calls, at most one per
  // threadblock.
  int workerCount() const {
    if (options_.threads <= 1 || mem_.callBytes < kParallelCallBytes) return 1;
    return static_cast<int>(
        std::min<std::size_t>(static_cast<std::size_t>(options_.threads), tasks_.size()));
  }

  // Drives tasks w, w + n, w + 2n, ... until every task of every worker is done. Worker 0 (the
  // calling thread) also watches the abort flag and the deadline; the others stop when stop_
  // is set.
  WorkerEnd runWorker(int w, int n) {
    const bool primary = w == 0;
    // Read the clock only once the call has to wait (most small calls never do).
    std::chrono::steady_clock::time_point deadline{};
    IdleBackoff backoff(facts_->ranksOnThisHost * (n + facts_->progressThreads));
    std::size_t mine = 0;
    for (std::size_t t = static_cast<std::size_t>(w); t < tasks_.size(); t += n)
      mine += tasks_[t].done ? 0 : 1;
    // The primary also waits until every message this rank sent by reference has settled: the
    // buffers are the caller's again once the call returns.
    // Alone (n == 1), this thread's count is the whole count: no atomic updates per task.
    while (primary ? (n == 1 ? mine > 0 : unfinished_.load(std::memory_order_acquire) > 0) ||
                         !ledger_.settle()
                   : mine > 0) {
      bool progressed = false;
      for (std::size_t t = static_cast<std::size_t>(w); t < tasks_.size(); t += n) {
        TaskState& task = tasks_[t];
        if (task.done) continue;
        while (!task.done && tryStep(task)) {
          progressed = true;
          if (task.done) {
            --mine;
            if (n > 1) unfinished_.fetch_sub(1, std::memory_order_acq_rel);
          }
        }
      }
      if (progressed) {
        backoff.reset();
        if (stuck_.load(std::memory_order_relaxed)) stuck_.store(false, std::memory_order_relaxed);
        continue;
      }
      if (backoff.idleRounds() == kEvictAfterIdleRounds)
        stuck_.store(true, std::memory_order_relaxed);
      // Nothing could run: back off, and now and then check for failures and the deadline.
      if (backoff.pause()) {
        if (stop_.load(std::memory_order_relaxed)) return WorkerEnd::stopped;
        if (!primary) continue;
        const std::string reason = connections_.abortReason();
        if (!reason.empty())
          throw CommError(fmt::format("rank {}: {} aborted: {}", rank_, label(), reason));
        const auto now = std::chrono::steady_clock::now();
        if (deadline == std::chrono::steady_clock::time_point{})
          deadline = now + options_.timeout;
        else if (now > deadline)
          return WorkerEnd::timedOut;
      }
    }
    return WorkerEnd::finished;
  }

  std::string label() const {
    if (!options_.collectiveLabel)
      return fmt::format("{} '{}'", ir::collectiveName(a_.collective), a_.name);
    if (options_.hasLabelSequence)
      return fmt::format("{} #{}", options_.collectiveLabel, options_.labelSequence);
    return options_.collectiveLabel;
  }

  [[noreturn]] void failTimeout() {
    std::string waits;
    if (!ledger_.empty())
      waits = "; waits for its peers to finish copying the messages it sent by reference";
    for (const auto& task : tasks_) {
      if (task.done) continue;
      const ir::Step& s = task.tb->steps[task.step];
      waits += fmt::format("; tb {} step {} ({}, tile {}/{}) waits for {}", task.tb->id, task.step,
                           opText(s.op), task.iteration + 1, iterations_, blocker(task, s));
    }
    const std::string message = fmt::format(
        "rank {}: {} timed out after {} ms{}. A peer may have died or is not calling the same "
        "collective; raise CHORUS_TIMEOUT if it is only slow",
        rank_, label(), options_.timeout.count(), waits);
    connections_.abort(message);
    throw TimeoutError(message);
  }

  [[noreturn]] void failMismatchedCall(const TaskState& task) {
    const int peer = task.tb->recvPeer;
    const std::string theirs = connections_.peerCall(peer);
    const std::string message = fmt::format(
        "rank {}: {}: rank {} sent a message for a different call{}. Every rank must make the "
        "same collective calls in the same order, with the same count, datatype, operator and "
        "root",
        rank_, label(), peer,
        theirs.empty() ? std::string() : fmt::format(" (it is running {})", theirs));
    connections_.abort(message);
    throw CommError(message);
  }

  std::string blocker(const TaskState& task, const ir::Step& s) const {
    for (const auto& d : s.deps)
      if (!depDone(d, task.iteration)) return fmt::format("tb {} step {}", d.tb, d.step);
    if (ir::opReceives(s.op))
      return fmt::format("a message from rank {} (channel {})", task.tb->recvPeer,
                         task.tb->channel);
    return fmt::format("a free slot to rank {} (channel {})", task.tb->sendPeer, task.tb->channel);
  }

  bool depDone(const ir::StepRef& d, std::size_t iteration) const {
    const TaskState& other = tasks_[d.tb];
    return other.completed.load(std::memory_order_acquire) >=
           iteration * other.tb->steps.size() + d.step + 1;
  }

  // Runs the task's next step if everything it needs is available; false otherwise.
  bool tryStep(TaskState& task) {
    const ir::Step& s = task.tb->steps[task.step];
    for (const auto& d : s.deps)
      if (!depDone(d, task.iteration)) return false;
    const bool receives = ir::opReceives(s.op);
    transport::RecvSlot slot;
    std::uint8_t* out = nullptr;
    // Post before the first poll: polling an empty FIFO reads what the socket holds, and a
    // message read before its post lands in a slot (one copy more).
    if (receives && task.mayPost && task.postedThrough <= task.iteration) postDestinations(task, s);
    if (receives && !task.recv->tryRecvSlot(&slot)) return false;
    if (ir::opSends(s.op) && (out = task.send->trySendSlot()) == nullptr) return false;
    if (receives && slot.tag != options_.callTag) failMismatchedCall(task);

    const std::size_t offset = task.iteration * tileElems_;
    const std::size_t len = std::min(tileElems_, mem_.chunkElems - offset);
    const std::size_t pieceBytes = len * mem_.elemSize;
    const std::size_t messageBytes = pieceBytes * static_cast<std::size_t>(s.count);
    if (receives && slot.bytes != messageBytes) {
      const std::string message = fmt::format(
          "rank {}: {}: tb {} step {} ({}) expected {} bytes from rank {} but got {}; the ranks "
          "are not running the same algorithm, count or datatype",
          rank_, label(), task.tb->id, task.step, opText(s.op), messageBytes, task.tb->recvPeer,
          slot.bytes);
      connections_.abort(message);
      throw CommError(message);
    }
    const bool fromInput =
        mem_.firstUses != nullptr && facts_->readsInput[taskIndex(task)][task.step] != 0;
    // A write must not change what a message this rank sent by reference still points at. (A
    // copy onto itself, an identity alias, writes nothing.)
    if (ir::opWritesDst(s.op) && !ledger_.empty() && !(copiesOntoItself(s, offset) && !fromInput) &&
        !ledger_.clearForWrite(mem_.pieces(s.dstBuffer, s.dstIndex, s.count, offset, len),
                               stuck_.load(std::memory_order_relaxed)))
      return false;
    if (slot.remote && task.recv->claimRemote(&slot) == transport::RemoteClaim::wait) return false;
    // Data this step leaves in this rank's buffers goes by reference where the connection
    // allows: always where that saves a copy outright (tcp sends it from the buffer, a peer
    // maps registered memory and loads it itself), else in calls of plans that only move data
    // and that fit the cache (in place or not): there copying out of another process's memory
    // measured faster than two copies through a slot, elsewhere slower (docs/performance.md).
    // A reduced message only exists in the slot.
    bool byReference = false;
    transport::RemoteRegion region;
    // Tile-ordered in place: a step that reads the input copies what it sends, because the
    // same threadblock overwrites that tile next (PlanFacts::tileOrderedInPlace).
    const bool readsTileOverwrittenNext =
        mem_.tileOrdered && ir::opReadsSrc(s.op) && s.srcBuffer == ir::BufferKind::input;
    if (out && ir::opSendsLocalData(s.op) && task.send->acceptsRemote(messageBytes) &&
        !readsTileOverwrittenNext) {
      const bool fromSrc = !ir::opWritesDst(s.op);  // else the value lies in dst once stored
      region = mem_.pieces(fromSrc ? s.srcBuffer : s.dstBuffer, fromSrc ? s.srcIndex : s.dstIndex,
                           s.count, offset, len);
      if (fromSrc && fromInput) region.address = inputAddress(region.address);
      byReference = options_.alwaysByReference || task.sendSavesCopy ||
                    (!facts_->reduces && !mem_.streaming) || task.send->mapsRemote(region);
    }
    execute(s, slot, task.recv, byReference ? nullptr : out, offset, len, pieceBytes, fromInput);
    if (receives) task.recv->releaseRecv();
    if (byReference)
      ledger_.add(*task.send, task.send->commitRemote(region, options_.callTag), region);
    else if (out)
      task.send->commitSend(messageBytes, options_.callTag);

    task.completed.store(task.completed.load(std::memory_order_relaxed) + 1,
                         std::memory_order_release);
    if (++task.step == task.tb->steps.size()) {
      task.step = 0;
      if (++task.iteration == iterations_) task.done = true;
    }
    return true;
  }

  std::size_t taskIndex(const TaskState& task) const {
    return static_cast<std::size_t>(&task - tasks_.data());
  }

  // Where the byte at `address` (inside the input's home in the output) lies in the caller's
  // input (RankMemory::firstUses).
  std::uint64_t inputAddress(std::uint64_t address) const {
    return reinterpret_cast<std::uintptr_t>(mem_.firstUses) +
           (address - reinterpret_cast<std::uintptr_t>(mem_.inputHome));
  }

  // Piece i of the step's source at `offset`: from the caller's input for a step that reads
  // its sources before they are written, when the input was not copied home.
  const std::uint8_t* srcPiece(const ir::Step& s, int i, std::size_t offset, bool fromInput) const {
    const std::uint8_t* at = mem_.piece(s.srcBuffer, s.srcIndex + i, offset);
    return fromInput ? mem_.firstUses + (at - mem_.inputHome) : at;
  }

  // Whether `s` is a copy whose every piece at `offset` is its own source (identityAlias()).
  bool copiesOntoItself(const ir::Step& s, std::size_t offset) {
    if (!ir::opCopiesSrcToDst(s.op)) return false;
    for (int i = 0; i < s.count; ++i)
      if (mem_.piece(s.dstBuffer, s.dstIndex + i, offset) !=
          mem_.piece(s.srcBuffer, s.srcIndex + i, offset))
        return false;
    return true;
  }

  // A step that only lands the message in its destination (recv, recvCopySend) lets the
  // transport write it there directly, where it can (Fifo::postRecv), before it first polls for
  // it: one copy fewer. Not while a message this rank sent by reference still reads that memory.
  // Where no other step touches those chunks (PlanFacts::postAheadStep) and the caller's
  // buffers do not overlap, the step's next tiles are posted too, as far as the slots go: a
  // rank reads frames ahead of its interpreter, and each one posted in time skips its slot.
  void postDestinations(TaskState& task, const ir::Step& s) {
    if (!ir::opLandsMessage(s.op)) return;
    const auto tb = static_cast<std::size_t>(&task - tasks_.data());
    const bool ahead =
        !mem_.overlapping && facts_->postAheadStep[tb] == static_cast<int>(task.step);
    const std::size_t last =
        ahead ? std::min(iterations_,
                         task.iteration + static_cast<std::size_t>(task.recv->slotCount()))
              : task.iteration + 1;
    for (std::size_t it = std::max(task.iteration, task.postedThrough); it < last; ++it) {
      const std::size_t offset = it * tileElems_;
      const std::size_t len = std::min(tileElems_, mem_.chunkElems - offset);
      if (!task.recv->acceptsPost(len * mem_.elemSize * static_cast<std::size_t>(s.count))) return;
      const auto region = mem_.pieces(s.dstBuffer, s.dstIndex, s.count, offset, len);
      if (!ledger_.empty() && !ledger_.clearForWrite(region, /*evict=*/false)) return;
      if (!task.recv->postRecv(region, options_.callTag, it - task.iteration)) return;
      task.postedThrough = it + 1;
    }
  }

  bool streams(ir::BufferKind kind) const {
    return mem_.streaming && facts_->streamable[bufferSlot(kind)];
  }

  // memcpy into a buffer of `kind`.
  void put(ir::BufferKind kind, std::uint8_t* dst, const std::uint8_t* src, std::size_t bytes) {
    if (streams(kind))
      streamCopy(dst, src, bytes);
    else
      std::memcpy(dst, src, bytes);
  }

  // dst = a op b into a buffer of `kind` (dst may be a or b), `elems` elements.
  void combine(ir::BufferKind kind, std::uint8_t* dst, const std::uint8_t* a, const std::uint8_t* b,
               std::size_t elems) {
    if (streams(kind))
      streamReduce(args_.type, args_.op, dst, a, b, elems);
    else
      reduceElements(args_.type, args_.op, dst, a, b, elems);
  }

  // The received message's bytes [at, at + bytes) into `dst`, a buffer of `kind`: from the slot,
  // or straight out of the sender's memory for a message by reference.
  void fetch(const transport::RecvSlot& slot, transport::Fifo* recv, ir::BufferKind kind,
             std::uint8_t* dst, std::size_t at, std::size_t bytes) {
    if (slot.delivered) return;  // the transport wrote it there
    if (!slot.remote)
      put(kind, dst, slot.data + at, bytes);
    else if (const std::uint8_t* mapped = recv->remoteData(at, bytes))
      put(kind, dst, mapped, bytes);
    else
      recv->readRemote(dst, at, bytes);
  }

  // dst = (the message's elements from byte `at`) op src, `elems` elements, into a buffer of
  // `kind`. A message by reference is reduced straight from the sender's memory where it is
  // mapped here, else copied out in blocks that stay in this core's cache.
  void reduceReceived(const transport::RecvSlot& slot, transport::Fifo* recv, ir::BufferKind kind,
                      std::uint8_t* dst, std::size_t at, const std::uint8_t* src,
                      std::size_t elems) {
    if (!slot.remote) return combine(kind, dst, slot.data + at, src, elems);
    if (const std::uint8_t* mapped = recv->remoteData(at, elems * mem_.elemSize))
      return combine(kind, dst, mapped, src, elems);
    thread_local std::vector<std::uint8_t> bounce;
    std::uint8_t* buffer = pageAligned(bounce, kBounceBytes);
    const std::size_t block = std::max<std::size_t>(1, kBounceBytes / mem_.elemSize);
    for (std::size_t done = 0; done < elems; done += block) {
      const std::size_t n = std::min(block, elems - done);
      recv->readRemote(buffer, at + done * mem_.elemSize, n * mem_.elemSize);
      combine(kind, dst + done * mem_.elemSize, buffer, src + done * mem_.elemSize, n);
    }
  }

  // Executes one step on one tile, as its op-table row says (ir::applyStep is the reference).
  // Pieces of a multi-count step are `len` elements of each chunk; in a message they are
  // packed back to back. `out` is the send slot, or nullptr when nothing is to be written there
  // (no send, or the message goes by reference).
  void execute(const ir::Step& s, const transport::RecvSlot& in, transport::Fifo* recv,
               std::uint8_t* out, std::size_t offset, std::size_t len, std::size_t pieceBytes,
               bool fromInput) {
    constexpr auto kSlot = ir::BufferKind::scratch;  // slots are read again soon: never streamed
    const ir::OpSemantics& row = ir::opSemantics(s.op);
    if (row.value == ir::StepValue::none) return;
    for (int i = 0; i < s.count; ++i) {
      const std::size_t at = static_cast<std::size_t>(i) * pieceBytes;
      // A step that neither stores nor reads dst names its peer's buffer there: not touched.
      std::uint8_t* dst = row.storesDst || row.value == ir::StepValue::dstOpSrc
                              ? mem_.piece(s.dstBuffer, s.dstIndex + i, offset)
                              : nullptr;
      switch (row.value) {
        case ir::StepValue::src: {  // send, copy
          const std::uint8_t* src = srcPiece(s, i, offset, fromInput);
          if (row.storesDst) copyPiece(s.dstBuffer, dst, src, pieceBytes);
          if (out) std::memcpy(out + at, row.storesDst ? dst : src, pieceBytes);
          break;
        }
        case ir::StepValue::received: {  // recv, recvCopySend
          if (!row.storesDst) {
            if (out) fetch(in, recv, kSlot, out + at, at, pieceBytes);
            break;
          }
          const bool inSlot = !in.remote && !in.delivered;
          if (out && inSlot) std::memcpy(out + at, in.data + at, pieceBytes);
          fetch(in, recv, s.dstBuffer, dst, at, pieceBytes);
          if (out && !inSlot) std::memcpy(out + at, dst, pieceBytes);
          break;
        }
        case ir::StepValue::receivedOpSrc: {  // recvReduceCopy, recvReduceSend, recvReduceCopySend
          const std::uint8_t* src = srcPiece(s, i, offset, fromInput);
          if (out) {  // reduce into the slot, which stays in cache, then copy it home
            reduceReceived(in, recv, kSlot, out + at, at, src, len);
            if (row.storesDst) put(s.dstBuffer, dst, out + at, pieceBytes);
          } else if (row.storesDst) {
            reduceReceived(in, recv, s.dstBuffer, dst, at, src, len);
          }
          break;
        }
        case ir::StepValue::dstOpSrc: {  // reduce
          const std::uint8_t* src = srcPiece(s, i, offset, fromInput);
          if (row.storesDst) {
            combine(s.dstBuffer, dst, dst, src, len);
            if (out) std::memcpy(out + at, dst, pieceBytes);
          } else if (out) {
            combine(kSlot, out + at, dst, src, len);
          }
          break;
        }
        case ir::StepValue::none:
          return;
      }
    }
  }

  // A copy of one piece into a buffer of `kind`: nothing for a piece onto itself (an identity
  // alias, identityAlias()), memmove where the two overlap.
  void copyPiece(ir::BufferKind kind, std::uint8_t* dst, const std::uint8_t* src,
                 std::size_t bytes) {
    if (dst == src) return;
    if (dst + bytes <= src || src + bytes <= dst)
      put(kind, dst, src, bytes);
    else
      std::memmove(dst, src, bytes);
  }

  const ir::Algorithm& a_;
  const int rank_;
  const CollectiveArgs& args_;
  transport::ConnectionSet& connections_;
  const ExecOptions& options_;
  const ir::RankProgram& program_;
  std::unique_ptr<Workspace> ownWorkspace_;  // when the caller gives none
  PlanFacts* facts_ = nullptr;
  bool cached_ = false;  // facts_ came from an earlier call of the same plan
  const ir::Collective* collective_ = nullptr;
  RankMemory mem_;
  Workspace* workspace_ = nullptr;
  std::span<TaskState> tasks_;
  std::atomic<std::size_t> unfinished_{0};  // tasks not done, over all executor threads
  std::atomic<bool> stop_{false};           // an executor thread failed: the others return
  RemoteLedger ledger_;                     // messages sent by reference, not yet settled
  // An executor thread made no progress for kEvictAfterIdleRounds: writes evict what blocks them.
  std::atomic<bool> stuck_{false};
  std::size_t tileElems_ = 1;
  std::size_t iterations_ = 0;
};

}  // namespace

std::size_t inputElements(const ir::Algorithm& algorithm, int rank, std::size_t count) {
  return bufferElements(algorithm, ir::collectiveOf(algorithm)->inputChunks(rank), count);
}

std::size_t outputElements(const ir::Algorithm& algorithm, int rank, std::size_t count) {
  return bufferElements(algorithm, ir::collectiveOf(algorithm)->outputChunks(rank), count);
}

std::size_t countForBytes(const ir::Algorithm& algorithm, std::size_t bytes,
                          std::size_t elementSize) {
  const std::size_t perCount =
      std::max(inputElements(algorithm, 0, 1), outputElements(algorithm, 0, 1));
  return bytes / std::max<std::size_t>(1, elementSize) / std::max<std::size_t>(1, perCount);
}

void executeRank(const ir::Algorithm& algorithm, int rank, const CollectiveArgs& args,
                 transport::ConnectionSet& connections, const ExecOptions& options) {
  if (rank < 0 || rank >= algorithm.nranks || rank >= static_cast<int>(algorithm.ranks.size()))
    throw OptionError(fmt::format("rank {} is not a rank of '{}' ({} ranks)", rank, algorithm.name,
                                  algorithm.nranks));
  RankExecutor(algorithm, rank, args, connections, options).run();
}

}  // namespace chorus::runtime
