// chorus: the communicator API (C++). NCCL-shaped: one communicator per rank, collectives and
// point-to-point calls on host buffers. A call returns when this rank's part is done and its
// output buffer holds the result. The C ABI is in chorus_c.h.
//
// Errors are the exceptions of chorus/error.h: OptionError (bad arguments), TimeoutError (a wait
// passed CHORUS_TIMEOUT), CommError (a peer died, calls did not match, a transport failed).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chorus/error.h"
#include "chorus/types.h"

namespace chorus {

// Names the rendezvous of one communicator: made by one rank (getUniqueId), shipped to the
// others by any means (MPI_Bcast, a file, an environment variable as hex), and passed to
// Communicator::initRank on every rank. Plain data: copy it freely.
struct UniqueId {
  std::array<std::uint8_t, 128> bytes{};
};

// Starts this process's rendezvous server (kept until the process exits) and returns an id
// naming it. Host: CHORUS_STORE_HOST if set, else 127.0.0.1 (every rank on this host).
UniqueId getUniqueId();
std::string uniqueIdToHex(const UniqueId& id);
UniqueId uniqueIdFromHex(std::string_view hex);  // throws OptionError if it is not an id

// Options of a communicator. Every field left empty falls back to its environment variable,
// then to the documented default.
struct CommConfig {
  // Deadline of every wait (CHORUS_TIMEOUT, in seconds or with a unit: "30", "500ms", "2m";
  // default 300 s).
  std::optional<std::chrono::milliseconds> timeout;
  // "thread" (ranks are threads of one process: initAll only), "shm" (processes on one host;
  // with initAll, threads connected through /dev/shm segments); empty: thread for initAll, shm
  // otherwise (CHORUS_TRANSPORT).
  std::string transport;
  // Plan overrides, CHORUS_ALGO syntax: "allreduce=allpairs:0-64K,ring:64K-max;alltoall=...".
  std::optional<std::string> algo;
  // Directory of MSCCL XML / chorus JSON plans to prefer over the library (CHORUS_ALGO_DIR).
  std::optional<std::string> algoDir;
  // A `chorus tune` selection table consulted before the one shipped with chorus
  // (CHORUS_TUNING_FILE); "off" uses neither (built-in defaults only).
  std::optional<std::string> tuningFile;
  // FIFO shape (CHORUS_SLOTS, CHORUS_SLOT_BYTES; default 8 slots of 256 KiB).
  std::optional<int> slots;
  std::optional<std::size_t> slotBytes;
  // Executor threads per rank for calls of at least 1 MiB (CHORUS_THREADS, 1 to 64; default 1,
  // right when every rank has a core of its own).
  std::optional<int> threads;
  // What runs each rank's calls (CHORUS_EXECUTOR): "cpu", the interpreter on host threads (the
  // default), or "device", the GPU runtime's device interpreter built for the host (blocks as
  // threads, every rank on one host; docs/gpu.md). Every rank must name the same one.
  std::string executor;
};

// Where a call's plan came from; filled for the most recent collective (see lastPlan()).
struct PlanInfo {
  std::string algorithm;  // "allreduce.ring", "allpairs_8r.xml", ...
  std::string source;     // "built-in default", "CHORUS_ALGO", "CHORUS_ALGO_DIR", "tuned ..."
};

// A CUDA stream (a cudaStream_t) for a call on executor "cuda": the call is queued on it and
// returns once queued, as NCCL's do. nullptr: the call has finished when it returns (the only
// choice on the other executors, which throw OptionError for a stream).
using Stream = void*;

class Communicator {
 public:
  // Collective over the `nranks` processes that pass the same id; each passes its own rank.
  // Blocks until all have joined (or the timeout passes).
  static Communicator initRank(int nranks, const UniqueId& id, int rank,
                               const CommConfig& config = {});
  // All `nranks` ranks in this process, as threads (thread transport). Issue calls on them from
  // one thread inside groupStart()/groupEnd(), or from one thread per communicator.
  static std::vector<Communicator> initAll(int nranks, const CommConfig& config = {});
  // Rank, size and rendezvous from a launcher's environment: `chorus launch` (CHORUS_RANK,
  // CHORUS_WORLD_SIZE, CHORUS_STORE), Open MPI's mpirun (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK),
  // torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) or Slurm's srun (SLURM_PROCID,
  // SLURM_NTASKS, SLURM_LOCALID, SLURM_STEP_ID; rank 0's store on the first host of
  // SLURM_STEP_NODELIST, docs/multihost.md). Throws OptionError naming the variables it looked
  // for when none is set.
  static Communicator initFromEnvironment(const CommConfig& config = {});

  Communicator(Communicator&&) noexcept;
  Communicator& operator=(Communicator&&) noexcept;
  ~Communicator();  // destroy: frees this rank's resources; never waits for peers

  int rank() const;
  int size() const;

  // The six collectives. `count` follows NCCL: elements of the AllReduce/Broadcast/Reduce
  // buffer, of each rank's AllGather input, of each rank's ReduceScatter output, and of each
  // per-peer block of AllToAll. In-place when sendbuf == recvbuf (AllGather: sendbuf ==
  // recvbuf + rank * count; ReduceScatter: recvbuf == sendbuf + rank * count); all ranks of a
  // call must agree on it, since it can change the plan. Broadcast's sendbuf and Reduce's
  // recvbuf may be null except on the root. Throws OptionError for bad arguments (the
  // communicator stays usable) and TimeoutError/CommError once the call has started (the
  // communicator and its peers have then failed).
  void allReduce(const void* sendbuf, void* recvbuf, std::size_t count, DataType type, ReduceOp op,
                 Stream stream = nullptr);
  void allGather(const void* sendbuf, void* recvbuf, std::size_t sendcount, DataType type,
                 Stream stream = nullptr);
  void reduceScatter(const void* sendbuf, void* recvbuf, std::size_t recvcount, DataType type,
                     ReduceOp op, Stream stream = nullptr);
  void allToAll(const void* sendbuf, void* recvbuf, std::size_t count, DataType type,
                Stream stream = nullptr);
  void broadcast(const void* sendbuf, void* recvbuf, std::size_t count, DataType type, int root,
                 Stream stream = nullptr);
  void reduce(const void* sendbuf, void* recvbuf, std::size_t count, DataType type, ReduceOp op,
              int root, Stream stream = nullptr);

  // Point-to-point. Outside a group a recv blocks until its message has arrived and a send
  // until its data is in the connection's FIFO (a small send may return before the peer's recv
  // runs); inside a group all sends and receives progress together at groupEnd() (no ordering
  // deadlock). Messages between two ranks match in issue order and must agree in count and
  // datatype (else CommError naming both). A send to the own rank needs a recv from it in the
  // same group.
  // With a stream (executor "cuda") they run on the host when called: they first wait for the
  // stream's earlier work, then move the data through host memory, and return when done.
  void send(const void* buf, std::size_t count, DataType type, int peer, Stream stream = nullptr);
  void recv(void* buf, std::size_t count, DataType type, int peer, Stream stream = nullptr);

  // Fails this communicator and every peer's pending and later calls with `reason`.
  void abort(std::string_view reason = "aborted by the application");
  // "" while healthy; otherwise why the communicator failed (it then only accepts destroy).
  std::string asyncError() const;
  // Collectives issued so far (the next one's sequence number).
  std::uint64_t sequence() const;
  // The plan of the most recent collective.
  PlanInfo lastPlan() const;

  struct Impl;

 private:
  explicit Communicator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Registered memory, as NCCL's ncclMemAlloc/ncclMemFree: `bytes` (> 0) of zero-filled,
// page-aligned host memory that the other ranks on this host can map. Use it for collective
// buffers: on shm a peer then loads a message straight out of it (one copy, and reductions
// read it in place) instead of through the kernel or a slot. Any communicator recognises it by
// address (no registration call); plain memory works everywhere too, only slower. memAlloc
// throws OptionError for 0 bytes and CommError when the memory cannot be had; memFree takes
// exactly a pointer memAlloc returned (nullptr is ignored), once, with no call using it. The
// memory is a shared mapping: a child forked after memAlloc shares it with its parent (heap
// memory would be copied on write).
// Where chorus is built with CUDA and CHORUS_EXECUTOR is "cuda", memAlloc returns zero-filled
// device memory of the calling thread's current GPU instead, which peers can map (CUDA IPC), as
// ncclMemAlloc does; memFree frees either kind.
void* memAlloc(std::size_t bytes);
void memFree(void* ptr);

// NCCL-style grouping, per calling thread: calls between groupStart() and the matching
// groupEnd() are queued (their buffers must stay valid) and run at groupEnd(). Communicators of
// one group run concurrently, one thread each; a communicator's own calls run in issue order,
// with consecutive send/recv calls progressing together. groupEnd() throws the first error.
void groupStart();
void groupEnd();

}  // namespace chorus
