// Executes the threadblocks of a one-sided plan (MSCCL++ execution plans: puts, gets, signals,
// waits, flushes, barriers, semaphores, LL packets; ir::hasOneSidedOps) on CPU threads, one
// thread per threadblock, over memory that every rank's threads can reach: the thread runner
// gives it every rank's memory in this process, a rank process gives it its own and its peers'
// mapped shared segments (one_sided_runner.h). A memory or port channel is the peer's memory
// itself: a put or get copies between the two ranks' memory, a signal is a release increment
// of the paired channel's token count there, a wait an acquire spin until its token arrived; a
// flush has nothing left to wait for (puts are done when issued).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/algorithm.h"
#include "runtime/run_check.h"

namespace chorus::runtime {

// Where one rank's memory of a one-sided run lies: the buffers peers' puts and gets reach, its
// LL packet areas (per buffer kind: a value and a flag per element, flags 0 at the start of a
// launch and 1 once written) and the token counts of its channels (0 at the start).
struct OneSidedRankMemory {
  std::uint8_t* input = nullptr;
  std::uint8_t* output = nullptr;
  std::uint8_t* scratch = nullptr;
  std::array<std::uint8_t*, 3> packetData{};
  std::array<std::atomic<std::uint32_t>*, 3> packetFlags{};
  std::atomic<std::uint64_t>* tokens = nullptr;
};

// Where the parts of one rank's one-sided memory lie in one region of `bytes` (offsets from its
// start, aligned for the atomics): token counts, packet flags and values of the buffer kinds
// the plan reads or writes as packets (else none), scratch, and, with `mirror`, the rank's user
// buffers as RankBuffers mirrors them (mirrorBytes()).
struct OneSidedRegion {
  std::size_t tokens = 0;
  std::size_t tokenCount = 0;  // the rank's channels
  std::array<std::size_t, 3> packetElements{};
  std::array<std::size_t, 3> packetFlags{};
  std::array<std::size_t, 3> packetData{};
  std::array<bool, 3> hasPackets{};
  std::size_t scratch = 0;
  std::size_t mirror = 0;
  std::size_t bytes = 0;
};
OneSidedRegion oneSidedRegion(const ir::Algorithm& algorithm, int rank, const RunOptions& options,
                              std::size_t mirrorBytes);

// The views of a region laid out by oneSidedRegion at `base`; input and output as given.
OneSidedRankMemory oneSidedMemoryAt(std::uint8_t* base, const OneSidedRegion& region,
                                    std::uint8_t* input, std::uint8_t* output);
// The views of a region at `base` whose user buffers are `buffers`' own (not mirrored).
OneSidedRankMemory oneSidedMemoryAt(std::uint8_t* base, const OneSidedRegion& region,
                                    RankBuffers& buffers);
// Readies the region at `base` for a launch: zero bytes before its mirror (scratch and packet
// values too), token counts and packet flags created at 0. Its owner calls it before any rank
// reaches the region.
void resetOneSidedRegion(std::uint8_t* base, const OneSidedRegion& region);

// One write that a port channel carries to a peer whose memory is not mapped here (ranks over
// tcp), as the head of a message; its payload follows: `elements` values, then, for raw
// packets, their flags. Control messages (done, ready) carry nothing.
struct OneSidedWrite {
  enum Kind : std::uint8_t { values, packets, rawPackets, token, done, ready };
  std::uint8_t kind = values;
  std::uint8_t buffer = 0;    // ir::BufferKind of the destination chunk
  std::uint32_t channel = 0;  // token: the receiver's channel
  std::uint32_t chunk = 0;    // destination chunk
  std::uint64_t offset = 0;   // first element within the chunk
  std::uint64_t elements = 0;
  // packets: flag the chunk's elements [offset, max(offset + elements, flagThrough)), so the
  // last piece flags the chunk's whole packets (as a mapped write does).
  std::uint64_t flagThrough = 0;
};

// Carries a rank's port-channel puts and signals to peers whose memory is not mapped here.
// Called from threadblock threads (so thread-safe), in each threadblock's step order; returns
// once the write is on its way (its source may then change). Throws CommError or
// TimeoutError when it cannot.
class OneSidedPortLink {
 public:
  virtual ~OneSidedPortLink() = default;
  virtual void send(int peer, const OneSidedWrite& write, const std::uint8_t* values,
                    const std::atomic<std::uint32_t>* flags) = 0;
};

// Applies the writes that arrive for one rank (the receiving side of a OneSidedPortLink).
class OneSidedLanding {
 public:
  // `memory`: the rank's own; `algorithm` and `options` must outlive this.
  OneSidedLanding(const ir::Algorithm& algorithm, const RunOptions& options, int rank,
                  const OneSidedRankMemory& memory);
  ~OneSidedLanding();
  // Writes values (then packet flags, release) or adds a token (release). Throws CommError for
  // a write that does not fit the plan (a peer running another plan or size).
  void land(const OneSidedWrite& write, const std::uint8_t* payload,
            std::size_t payloadBytes) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Throws OptionError naming the first step of `algorithm` that a OneSidedPortLink cannot carry
// (peer memory reached other than by a port-channel put or signal) over `transport`.
void requirePortChannelsOnly(const ir::Algorithm& algorithm, std::string_view transport);

class OneSidedExecution {
 public:
  // `memory[r]` is rank r's memory, reachable from here for every rank; `localRanks` are the
  // ranks whose threadblocks run here. `failed` (may be null) is polled while waiting: a failure
  // elsewhere (another process of the group) stops the wait with a CommError naming it.
  // `link` (may be null): carries the local ranks' port-channel puts and signals to peers
  // whose memory is not mapped (their `memory` entries stay empty); see
  // requirePortChannelsOnly.
  OneSidedExecution(const ir::Algorithm& algorithm, const RunOptions& options,
                    std::vector<OneSidedRankMemory> memory, std::vector<int> localRanks,
                    std::function<std::string()> failed = {}, OneSidedPortLink* link = nullptr);
  ~OneSidedExecution();
  OneSidedExecution(const OneSidedExecution&) = delete;
  OneSidedExecution& operator=(const OneSidedExecution&) = delete;

  // Runs every threadblock of the local ranks on its own thread until all ended and returns the
  // wall seconds that took; rethrows the root cause of the first failure (TimeoutError naming
  // the step of a plan that deadlocks).
  double run();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// The plan's structure as the verifier checks it, and what the one-sided runners do not take
// yet (ReduceOp::avg, given inputs): throws PlanError or OptionError before anything runs.
void requireRunnableOneSided(const ir::Algorithm& algorithm, const RunOptions& options);

}  // namespace chorus::runtime
