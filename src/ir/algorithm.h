// ir::Algorithm: the finished, executable IR (rank -> threadblock -> steps), as described in
// docs/design.md "The IR". Produced by the compiler or by a reader (MSCCL XML, JSON, text);
// consumed by the verifier, the writers, the simulator and the runtime. Plain data (CONTRIBUTING.md
// "Style").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/step_semantics.h"

namespace chorus::ir {

enum class BufferKind : std::uint8_t { input, output, scratch };

enum class Protocol : std::uint8_t { simple, ll, ll128 };

// The most bytes one message of a plan with `protocol` carries (GC3 §6.1: LL for
// latency, Simple for bandwidth): LL 8 KiB, LL128 64 KiB, Simple unbounded (the transport's
// FIFO slot). Smaller messages start the pipeline sooner and keep a tile in cache between
// phases; larger ones pay the per-message cost less often. The runtime and the simulator
// both cut messages at this size.
inline constexpr std::size_t kLlMessageCap = std::size_t{8} << 10;
inline constexpr std::size_t kLl128MessageCap = std::size_t{64} << 10;
std::size_t protocolMessageCap(Protocol protocol);

enum class CollectiveKind : std::uint8_t {
  allreduce,
  allgather,
  reducescatter,
  alltoall,
  broadcast,
  reduce,
  custom,
};

// A (threadblock, step) pair inside one rank's program.
struct StepRef {
  int tb = -1;
  int step = -1;
  friend bool operator==(const StepRef&, const StepRef&) = default;
  friend auto operator<=>(const StepRef&, const StepRef&) = default;
};

struct Step {
  OpKind op = OpKind::nop;
  // The remote rank and the channel (an index into RankProgram::channels) of a one-sided
  // operation (put, get, signal, wait, flush: MSCCL++ execution plans); a memory-channel put,
  // get or getReduce may leave channel at -1. Barriers and semaphore ops leave peer at -1 and
  // name their barrier or semaphore in channel (a barrier's count is how many threadblocks
  // join it). Two-sided ops move data over their threadblock's connections
  // (Threadblock::sendPeer/recvPeer/channel) and must leave both at -1: the verifier reports a
  // step that sets them, and the runtime and simulator entry points refuse one-sided ops
  // (ir/step_endpoints.h).
  int peer = -1;
  int channel = -1;
  BufferKind srcBuffer = BufferKind::input;
  int srcIndex = 0;
  BufferKind dstBuffer = BufferKind::input;
  int dstIndex = 0;
  int count = 1;
  // LL packets (MSCCL++'s LL protocol, docs/ir.md "Packets"): an operand that is packets names
  // the packet slots of its chunks, a memory apart from their plain data. A packet dst stores
  // every element with the launch's flag; a packet src is read once every element carries that
  // flag (the step waits for it), unless rawPackets: then the step copies the packets as they
  // are, flags included (a port-channel put of packets, which the proxy copies as bytes). Only
  // one-sided plans use packets (stepIsOneSided).
  bool srcPackets = false;
  bool dstPackets = false;
  bool rawPackets = false;
  // Cross-threadblock waits (same rank): this step starts only after each named step finished.
  // Kept sorted by (tb, step); never names the step's own threadblock.
  std::vector<StepRef> deps;
  // True when some other threadblock's step depends on this one (it must publish its completion).
  bool hasDependents = false;
  friend bool operator==(const Step&, const Step&) = default;
};

struct Threadblock {
  int id = 0;
  int sendPeer = -1;  // rank this tb sends to, -1 for none
  int recvPeer = -1;  // rank this tb receives from, -1 for none
  int channel = 0;
  std::vector<Step> steps;
  friend bool operator==(const Threadblock&, const Threadblock&) = default;
};

// How a one-sided op reaches a peer (MSCCL++): a memory channel maps the peer's buffers and
// its signals are device stores; a port channel hands puts and signals to a proxy (DMA or RDMA)
// that carries them in order.
enum class ChannelType : std::uint8_t { memory, port };

// One end of a one-sided channel. The k-th channel of a type from rank A to rank B pairs with
// the k-th channel of that type from B to A (MSCCL++'s executor connects them in that order):
// a signal on one adds a token that a wait on the other takes.
struct Channel {
  ChannelType type = ChannelType::memory;
  int peer = 0;
  friend bool operator==(const Channel&, const Channel&) = default;
};

struct RankProgram {
  int rank = 0;
  int inputChunks = 0;   // chunks of the input buffer this rank's steps may touch
  int outputChunks = 0;  // 0 for in-place programs whose output aliases the input
  int scratchChunks = 0;
  std::vector<Threadblock> threadblocks;  // index == Threadblock::id
  // One-sided programs only: the rank's channels (Step::channel indexes them) and the initial
  // values of its semaphores (semAcquire/semRelease name one by index).
  std::vector<Channel> channels;
  std::vector<int> semaphores;
  friend bool operator==(const RankProgram&, const RankProgram&) = default;
};

struct Algorithm {
  std::string name;
  CollectiveKind collective = CollectiveKind::allreduce;
  std::string customName;  // the custom collective's name (e.g. "alltonext") when custom
  int root = 0;            // broadcast/reduce root
  Protocol protocol = Protocol::simple;
  bool inPlace = false;
  int nranks = 0;
  int chunksPerLoop = 0;       // MSCCL nchunksperloop: the buffer is cut into this many chunks
  std::uint64_t minBytes = 0;  // size range this plan is meant for; maxBytes 0 = no limit
  std::uint64_t maxBytes = 0;
  std::vector<RankProgram> ranks;  // index == rank
  friend bool operator==(const Algorithm&, const Algorithm&) = default;
};

// Number of channels used (max channel + 1, at least 1).
int channelCount(const Algorithm& algorithm);
// Total number of steps over all ranks and threadblocks (nops included).
std::size_t stepCount(const Algorithm& algorithm);
// Total number of cross-threadblock dependencies (waits) over all steps.
std::size_t dependencyCount(const Algorithm& algorithm);
// Total number of threadblocks over all ranks.
std::size_t threadblockCount(const Algorithm& algorithm);
// Chunks per block of a call's `count` elements: the loop buffer holds nranks blocks for
// AllGather, ReduceScatter and AllToAll and one block otherwise, each cut into this many
// chunks (at least 1).
std::size_t chunksPerBlock(const Algorithm& algorithm);

// Op names from the op table (ir/step_semantics.h): the long form used by text/JSON/DOT
// ("recvReduceCopySend") and MSCCL's short codes ("rrcs"). opMscclCode is empty for an op MSCCL
// XML cannot express. The lists ("send, recv, ...") are for parsers' error messages.
std::string_view opName(OpKind op);
std::string_view opMscclCode(OpKind op);
std::optional<OpKind> parseOpName(std::string_view name);       // long form
std::optional<OpKind> parseOpMscclCode(std::string_view code);  // short code
std::string opNameList();
std::string opMscclCodeList();
std::string_view bufferName(BufferKind buffer);                    // "input", "output", "scratch"
char bufferMscclCode(BufferKind buffer);                           // 'i', 'o', 's'
std::optional<BufferKind> parseBufferName(std::string_view name);  // long form or i/o/s
std::string_view channelTypeName(ChannelType type);                // "memory", "port"
std::string_view protocolName(Protocol protocol);                  // "Simple", "LL", "LL128"
std::optional<Protocol> parseProtocolName(std::string_view name);  // case-insensitive
std::string_view collectiveName(CollectiveKind kind);              // "allreduce", ..., "custom"
// Accepts "reduce_scatter" and "reducescatter".
std::optional<CollectiveKind> parseCollectiveName(std::string_view name);
// AllReduce, ReduceScatter and Reduce: their outputs (Reduce's at the root) combine the ranks'
// inputs with the reduction operator.
bool collectiveReduces(CollectiveKind kind);

}  // namespace chorus::ir
