// The interpreter: runs one rank's part of an ir::Algorithm on user buffers (GC3 §6.2, seed
// 000). Every threadblock is a resumable task; the calling thread drives them all. Chunks are
// tiled to the FIFO slot size and the whole program runs once per tile, so phases pipeline.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "ir/algorithm.h"
#include "ir/collective.h"
#include "runtime/collective_args.h"
#include "runtime/datatype.h"
#include "runtime/stream_copy.h"
#include "transport/connections.h"
#include "transport/shm/registered_memory.h"

namespace chorus::runtime {

// What the interpreter derives from a plan before running it (its collective, the FIFOs of
// its threadblocks, the largest message), kept between calls of the same plan.
struct PlanFacts {
  std::uint64_t key = 0;  // ExecOptions::planKey these facts belong to; 0 = none
  std::shared_ptr<const ir::Collective> collective;
  std::vector<transport::Fifo*> sendFifos;  // per threadblock, nullptr if it does not send
  std::vector<transport::Fifo*> recvFifos;  // per threadblock, nullptr if it does not receive
  std::size_t maxCount = 1;                 // largest count of a sending or receiving step
  std::size_t slotBytes = 0;                // smallest slot of those FIFOs
  // Some rank reduces received data. Messages then go by reference only where that always
  // saves a copy (tcp, registered memory a peer maps): copying them out of the sender's memory
  // in the kernel and reducing from a bounce buffer measured slower than reducing straight
  // from a slot (docs/performance.md).
  bool reduces = false;
  // Per ir::BufferKind: this rank never reads the buffer after writing it, so a streaming call
  // may write it with non-temporal stores (an in-place plan's buffers are one, and are read).
  bool streamable[3] = {false, false, false};
  // An out-of-place plan called with its input inside its output, at output chunk
  // `aliasedAtChunk` (-1: not examined yet): true if every step that writes that part of the
  // output copies it from the very input chunk that lies there, so the call needs no private
  // copy (AllGather in place, NCCL-style).
  int aliasedAtChunk = -1;
  bool aliasIsIdentity = false;
  // An out-of-place plan called with its input and output at one address and of one size (-1:
  // not examined yet): 1 if, for each chunk, the steps that read it from the input (copies
  // onto itself aside) all run in the threadblock that overwrites it in the output, before
  // that step. A threadblock runs its steps tile by tile, so each tile is read before the
  // same tile is overwritten and the call needs no private copy: AllToAll in place on the
  // direct and xor-pairwise plans, NCCL-style. The steps that read the input must copy what
  // they send: by reference, every tile would wait until the ledger gives up on the peer's
  // read and copies the message out (Workspace::evictions).
  int tileOrderedInPlace = -1;
  // An in-place plan called out of place, its input at canonical chunk `firstUsesAtChunk` (-1:
  // not examined yet). `firstUsesFromInput`: every chunk the input fills is touched by one
  // threadblock only, and no step reads one as its destination before writing it; then each
  // step whose sources are read before their chunk is first written (readsInput[tb][step])
  // reads them straight from the caller's input, instead of the input being copied into the
  // output first. `unwrittenInputChunks`: those the plan never writes, which are copied.
  int firstUsesAtChunk = -1;
  bool firstUsesFromInput = false;
  std::vector<std::vector<char>> readsInput;
  std::vector<int> unwrittenInputChunks;
  // What a call's element count and type fix, derived once per (count, elemSize): the chunk
  // size, the buffer sizes and the tiling. `count` is SIZE_MAX until derived.
  struct Geometry {
    std::size_t count = SIZE_MAX;
    std::size_t elemSize = 0;
    std::size_t chunkElems = 0;
    bool divisible = false;
    std::size_t inBytes = 0;
    std::size_t outBytes = 0;
    std::size_t tileElems = 0;  // 0 until prepareTasks derives it
    std::size_t iterations = 0;
  } geometry;
  // Where chunk 0 of this rank's input and output lies (Collective::canonical), by BufferKind.
  ir::Location home[2];
  // connections.ranksOnThisHost() and progressThreads(), for the idle backoff.
  int ranksOnThisHost = 1;
  int progressThreads = 0;
  // Per threadblock: its only receiving step, when that step only lands messages (recv,
  // recvCopySend) in chunks no other step of this rank touches (but the steps after it in its
  // threadblock), so its later tiles may be posted ahead (Fifo::postRecv); else -1.
  std::vector<int> postAheadStep;
};

// Memory and facts the interpreter reuses across calls (staged copies, scratch, plan facts),
// so repeated calls neither allocate nor fault in fresh pages. One per rank and connection
// set; not thread-safe.
struct Workspace {
  // Indexed by ir::BufferKind. Registered memory, so local peers map what the plan sends from
  // them (transport/shm/registered_memory.h).
  transport::RegisteredBuffer buffers[3];
  PlanFacts facts;
  // The interpreter's per-threadblock state (opaque here), so small calls do not allocate.
  std::unique_ptr<std::byte[]> taskBytes;
  std::size_t taskBytesSize = 0;
  // Messages sent by reference that had to be copied out before this rank overwrote their
  // memory (RemoteLedger::evictions), summed over the workspace's calls: each one cost a stall
  // and a copy.
  std::uint64_t evictions = 0;
};

inline constexpr std::size_t kParallelCallBytes = std::size_t{1} << 20;

struct ExecOptions {
  std::chrono::milliseconds timeout{300'000};  // per call; CHORUS_TIMEOUT overrides in the API
  // For error messages: e.g. "allreduce #12", or "allreduce" with labelSequence 12.
  const char* collectiveLabel = nullptr;
  bool hasLabelSequence = false;
  std::uint64_t labelSequence = 0;
  // Sent with every message and checked on receipt: peers running a different call (another
  // collective, count, datatype or sequence number) are reported instead of misread. The
  // description each rank published (ConnectionSet::publishCall) names the peer's call.
  std::uint64_t callTag = 0;
  Workspace* workspace = nullptr;  // nullptr: allocate for this call only
  // Non-zero: a value that names this plan (and the workspace's connection set) for the
  // workspace's whole life, so its PlanFacts are derived once. 0: derive them every call.
  std::uint64_t planKey = 0;
  // Executor threads driving this rank's threadblocks: the calling thread plus threads - 1
  // helpers, each owning a share of the threadblocks (cross-threadblock waits are atomic
  // counters). Used only for calls of at least kParallelCallBytes, where starting threads
  // pays off; 1 (the default, right for a 2-core machine running a rank per core) never
  // starts any.
  int threads = 1;
  // Calls whose working set has at least this many bytes (reductions: see callStreams) write
  // the caller's buffers with non-temporal stores (stream_copy.h): their data would leave the
  // cache before it is read again anyway. 0: never.
  std::size_t streamingWorkingSetBytes = defaultStreamingWorkingSetBytes();
  // Tests: send by reference whenever the FIFO accepts the message, also where the measured
  // policy would copy (reducing plans, streaming calls), so every path gets exercised.
  bool alwaysByReference = false;
};

// Runs `rank`'s program to completion on the calling thread. Any element count works: when the
// chunking does not divide it, the buffers are staged through padded copies. Throws
// TimeoutError when a wait passes the deadline and CommError when another rank failed or the
// peers disagree on the message sizes; either way the group is aborted so no rank hangs.
void executeRank(const ir::Algorithm& algorithm, int rank, const CollectiveArgs& args,
                 transport::ConnectionSet& connections, const ExecOptions& options = {});

}  // namespace chorus::runtime
