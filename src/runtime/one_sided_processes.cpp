// runOneSidedOnProcesses (one_sided_runner.h). Over shm each rank process creates one
// shared-memory segment, "/<run prefix>-os-r<rank>": a header (where its user buffers lie in the
// mirror, and on rank 0 the group's barrier count), then its one-sided region (one_sided_engine.h:
// token counts, packets, scratch, and the mirror of its user buffers). It maps every peer's
// segment, and per iteration: refills its inputs and resets its region, joins a barrier, runs its
// threadblocks on all ranks' mapped memory, joins a barrier. Then it copies its buffers back
// out of the segment and checks them. The segments' names are removed once every rank has
// mapped them; the parent sweeps any a killed rank left. Over tcp and ucx (OneSidedMessageRank)
// ranks share no memory: port-channel puts and signals travel as messages that each rank's receiver
// lands.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "runtime/one_sided_engine.h"
#include "runtime/one_sided_runner.h"
#include "runtime/process_runner.h"
#include "support/error.h"
#include "transport/connections.h"
#include "transport/fifo.h"
#include "transport/shm/shm_segment.h"

namespace chorus::runtime {

namespace {

using Clock = std::chrono::steady_clock;

// The head of a rank's segment (the region follows at kSegmentHeaderBytes).
struct SegmentHeader {
  std::uint64_t barrierArrivals;  // rank 0's: ranks that joined the group's barriers so far
  std::uint64_t inputOffset;      // where RankBuffers::input() lies in the mirror
  std::uint64_t outputOffset;     // and output()
};
constexpr std::size_t kSegmentHeaderBytes = 64;
static_assert(sizeof(SegmentHeader) <= kSegmentHeaderBytes);

// How long a rank waits at a barrier for its peers: twice a launch's timeout and some slack for
// a loaded host, so a peer's own timeout (which names its step) comes first.
std::chrono::milliseconds barrierWait(const RunOptions& options) {
  return 2 * options.timeout + std::chrono::seconds(10);
}

std::string segmentName(const std::string& prefix, int rank) {
  return fmt::format("/{}-os-r{}", prefix, rank);
}

// One rank of the run, with every rank's segment mapped.
class OneSidedShmRank {
 public:
  OneSidedShmRank(const ir::Algorithm& algorithm, const RunOptions& options, int rank,
                  transport::ConnectionSet& connections, const std::string& prefix)
      : a_(algorithm),
        options_(options),
        rank_(rank),
        connections_(connections),
        buffers_(algorithm, rank, options),
        region_(oneSidedRegion(algorithm, rank, options, buffers_.mirrorBytes())) {
    const auto abortCheck = [this] { return connections_.abortReason(); };
    std::optional<transport::ShmSegment> own = transport::createShmSegment(
        segmentName(prefix, rank), kSegmentHeaderBytes + region_.bytes,
        "the memory peers of a one-sided plan reach", "use a smaller --bytes or fewer ranks");
    if (!own)
      throw CommError(fmt::format("rank {}: the shared-memory segment {} exists already", rank,
                                  segmentName(prefix, rank)));
    SegmentHeader& header = headerOf(*own);
    header.inputOffset = buffers_.inputOffsetInMirror();
    header.outputOffset = buffers_.outputOffsetInMirror();
    segments_.resize(static_cast<std::size_t>(algorithm.nranks));
    segments_[static_cast<std::size_t>(rank)] = std::move(*own);
    const auto deadline = Clock::now() + options.timeout;
    for (int peer = 0; peer < algorithm.nranks; ++peer) {
      if (peer == rank) continue;
      std::optional<transport::ShmSegment>& slot = segments_[static_cast<std::size_t>(peer)];
      transport::waitUntil(
          [&] {
            slot = transport::openShmSegment(segmentName(prefix, peer), deadline, abortCheck,
                                             "a peer's one-sided memory");
            return slot.has_value();
          },
          deadline, abortCheck, fmt::format("rank {} to create its one-sided memory", peer));
    }
    resetOwn();
    barrier();  // every header written, every segment mapped: the names may go
    transport::unlinkShmName(segmentName(prefix, rank));
    for (int r = 0; r < algorithm.nranks; ++r) {
      const std::size_t mirrorBytes = 0;  // the mirror's place does not depend on its size
      const OneSidedRegion region =
          r == rank ? region_ : oneSidedRegion(algorithm, r, options, mirrorBytes);
      std::uint8_t* base = segments_[static_cast<std::size_t>(r)]->data() + kSegmentHeaderBytes;
      const SegmentHeader& h = headerOf(*segments_[static_cast<std::size_t>(r)]);
      std::uint8_t* mirror = base + region.mirror;
      memory_.push_back(
          oneSidedMemoryAt(base, region, mirror + h.inputOffset, mirror + h.outputOffset));
    }
  }

  RunReport run() {
    RunReport report;
    for (int iteration = 0; iteration < std::max(1, options_.iterations); ++iteration) {
      if (iteration > 0) {
        resetOwn();
        barrier();  // every rank reset before any writes into a peer again
      }
      report.seconds = OneSidedExecution(a_, options_, memory_, {rank_}, [this] {
                         return connections_.abortReason();
                       }).run();
      barrier();  // no peer writes into this rank's memory any more
    }
    buffers_.copyFromMirror(ownBase() + region_.mirror);
    checkRankOutput(a_, rank_, options_, buffers_.output(), &report);
    checkRankInput(a_, rank_, options_, buffers_.input(), &report);
    return report;
  }

 private:
  static SegmentHeader& headerOf(const transport::ShmSegment& segment) {
    return *reinterpret_cast<SegmentHeader*>(segment.data());
  }
  std::uint8_t* ownBase() const {
    return segments_[static_cast<std::size_t>(rank_)]->data() + kSegmentHeaderBytes;
  }

  // Fresh inputs, zeroed outputs, scratch and packets, token counts at 0.
  void resetOwn() {
    buffers_.reset();
    resetOneSidedRegion(ownBase(), region_);
    buffers_.copyToMirror(ownBase() + region_.mirror);
  }

  // Every rank of the group gets here once more (a count in rank 0's header). Waits longer than
  // a launch may take (barrierWait): a peer still running times out on its own first and names
  // its blocked step (the root cause), and its failure (or death) then ends this wait.
  void barrier() {
    const auto n = static_cast<std::uint64_t>(a_.nranks);
    const std::uint64_t target = ++barriers_ * n;
    std::atomic_ref<std::uint64_t> arrivals(headerOf(*segments_[0]).barrierArrivals);
    arrivals.fetch_add(1, std::memory_order_acq_rel);
    transport::waitUntil(
        [&] { return arrivals.load(std::memory_order_acquire) >= target; },
        Clock::now() + barrierWait(options_), [this] { return connections_.abortReason(); },
        fmt::format("every rank to reach barrier {} of the one-sided run", barriers_));
  }

  const ir::Algorithm& a_;
  const RunOptions& options_;
  const int rank_;
  transport::ConnectionSet& connections_;
  RankBuffers buffers_;
  const OneSidedRegion region_;
  std::vector<std::optional<transport::ShmSegment>> segments_;
  std::vector<OneSidedRankMemory> memory_;
  std::uint64_t barriers_ = 0;
};

// One rank over tcp or ucx: its memory on its own heap, port-channel puts and signals sent to peers
// as messages on connection channel 0 (one FIFO per pair keeps a rank's writes to a peer in order,
// so a signal follows the puts before it), and an agent thread that lands what peers send. Launches
// are fenced by `ready` (every rank reset) and `done` (every rank finished, and everything it sent
// here landed, since its `done` came last) messages.
class OneSidedMessageRank : public OneSidedPortLink {
 public:
  OneSidedMessageRank(const ir::Algorithm& algorithm, const RunOptions& options, int rank,
                      transport::ConnectionSet& connections)
      : a_(algorithm),
        options_(options),
        rank_(rank),
        connections_(connections),
        buffers_(algorithm, rank, options),
        region_(oneSidedRegion(algorithm, rank, options, 0)),
        storage_(std::make_unique<std::uint8_t[]>(region_.bytes)),
        sendLocks_(static_cast<std::size_t>(algorithm.nranks)) {
    memory_.resize(static_cast<std::size_t>(algorithm.nranks));
    memory_[static_cast<std::size_t>(rank)] = oneSidedMemoryAt(storage_.get(), region_, buffers_);
    landing_ = std::make_unique<OneSidedLanding>(algorithm, options, rank,
                                                 memory_[static_cast<std::size_t>(rank)]);
  }

  RunReport run() {
    agent_ = std::thread([this] { receive(); });
    RunReport report;
    try {
      for (int iteration = 0; iteration < std::max(1, options_.iterations); ++iteration) {
        buffers_.reset();
        resetOneSidedRegion(storage_.get(), region_);
        fence(OneSidedWrite::ready);  // no peer writes here before this reset
        report.seconds = OneSidedExecution(
                             a_, options_, memory_, {rank_}, [this] { return failure(); }, this)
                             .run();
        fence(OneSidedWrite::done);  // every peer's writes here have landed
      }
    } catch (...) {
      stop();
      // A write the receiver could not land is the root cause of the waits it then failed.
      if (agentFailed_.load()) std::rethrow_exception(agentError_);
      throw;
    }
    stop();
    checkRankOutput(a_, rank_, options_, buffers_.output(), &report);
    checkRankInput(a_, rank_, options_, buffers_.input(), &report);
    return report;
  }

  void send(int peer, const OneSidedWrite& write, const std::uint8_t* values,
            const std::atomic<std::uint32_t>* flags) override {
    const std::size_t esz = dataTypeSize(options_.type);
    const std::size_t perElement = esz + (flags ? sizeof(std::uint32_t) : 0);
    transport::Fifo& fifo = connections_.sendFifo(peer, 0);
    const std::size_t room = fifo.slotBytes() - sizeof(OneSidedWrite);
    const std::size_t perMessage = std::max<std::size_t>(1, room / perElement);
    const std::lock_guard<std::mutex> lock(sendLocks_[static_cast<std::size_t>(peer)]);
    std::size_t sent = 0;
    do {
      OneSidedWrite piece = write;
      piece.offset = write.offset + sent;
      piece.elements = std::min<std::size_t>(write.elements - sent, perMessage);
      const bool last = sent + piece.elements == write.elements;
      if (!last) piece.flagThrough = 0;
      std::uint8_t* slot = nullptr;
      transport::waitUntil([&] { return (slot = fifo.trySendSlot()) != nullptr; },
                           Clock::now() + options_.timeout, [this] { return failure(); },
                           fmt::format("room to send to rank {}", peer));
      std::memcpy(slot, &piece, sizeof(piece));
      std::uint8_t* payload = slot + sizeof(piece);
      if (values) std::memcpy(payload, values + sent * esz, piece.elements * esz);
      if (flags)
        for (std::size_t e = 0; e < piece.elements; ++e) {
          const std::uint32_t flag = flags[sent + e].load(std::memory_order_acquire);
          std::memcpy(payload + piece.elements * esz + e * sizeof(flag), &flag, sizeof(flag));
        }
      fifo.commitSend(sizeof(piece) + piece.elements * perElement, kTag);
      sent += piece.elements;
    } while (sent < write.elements);
  }

 private:
  static constexpr std::uint64_t kTag = 0x6f6e652d73696465;  // "one-side"

  // Why to stop: the agent failed, or the group did.
  std::string failure() const {
    if (agentFailed_.load()) return "rank " + std::to_string(rank_) + "'s receiver failed";
    return connections_.abortReason();
  }

  // Tells every peer `kind`, then waits until every peer told this rank as often.
  void fence(std::uint8_t kind) {
    OneSidedWrite control;
    control.kind = kind;
    for (int peer = 0; peer < a_.nranks; ++peer)
      if (peer != rank_) send(peer, control, nullptr, nullptr);
    auto& count = kind == OneSidedWrite::ready ? readies_ : dones_;
    const std::uint64_t target = ++(kind == OneSidedWrite::ready ? readyRounds_ : doneRounds_) *
                                 static_cast<std::uint64_t>(a_.nranks - 1);
    transport::waitUntil([&] { return count.load(std::memory_order_acquire) >= target; },
                         Clock::now() + barrierWait(options_), [this] { return failure(); },
                         fmt::format("every rank's '{}' of the one-sided run",
                                     kind == OneSidedWrite::ready ? "ready" : "done"));
    if (agentFailed_.load()) std::rethrow_exception(agentError_);
  }

  // The agent: lands every message peers send, until stopped.
  void receive() {
    try {
      while (!stopping_.load(std::memory_order_acquire)) {
        bool any = false;
        for (int peer = 0; peer < a_.nranks; ++peer) {
          if (peer == rank_) continue;
          transport::Fifo& fifo = connections_.recvFifo(peer, 0);
          transport::RecvSlot slot;
          if (!fifo.tryRecvSlot(&slot)) continue;
          any = true;
          if (slot.remote || slot.delivered || slot.bytes < sizeof(OneSidedWrite))
            throw CommError(
                fmt::format("rank {} got a malformed one-sided message from rank {}", rank_, peer));
          OneSidedWrite write;
          std::memcpy(&write, slot.data, sizeof(write));
          if (write.kind == OneSidedWrite::ready) {
            readies_.fetch_add(1, std::memory_order_acq_rel);
          } else if (write.kind == OneSidedWrite::done) {
            dones_.fetch_add(1, std::memory_order_acq_rel);
          } else {
            landing_->land(write, slot.data + sizeof(write), slot.bytes - sizeof(write));
          }
          fifo.releaseRecv();
        }
        if (!any) {
          if (!connections_.abortReason().empty()) return;
          std::this_thread::yield();
        }
      }
    } catch (...) {
      agentError_ = std::current_exception();
      agentFailed_.store(true);
    }
  }

  void stop() {
    stopping_.store(true, std::memory_order_release);
    if (agent_.joinable()) agent_.join();
  }

  const ir::Algorithm& a_;
  const RunOptions& options_;
  const int rank_;
  transport::ConnectionSet& connections_;
  RankBuffers buffers_;
  const OneSidedRegion region_;
  std::unique_ptr<std::uint8_t[]> storage_;
  std::vector<OneSidedRankMemory> memory_;
  std::unique_ptr<OneSidedLanding> landing_;
  std::vector<std::mutex> sendLocks_;
  std::thread agent_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> agentFailed_{false};
  std::exception_ptr agentError_;
  std::atomic<std::uint64_t> readies_{0}, dones_{0};
  std::uint64_t readyRounds_ = 0, doneRounds_ = 0;
};

}  // namespace

RunReport runOneSidedOnProcesses(const ir::Algorithm& algorithm, const RunOptions& options) {
  // Over tcp and ucx ranks share no memory: port channels travel as messages.
  const bool asMessages = options.transport == "tcp" || options.transport == "ucx";
  if (!options.transport.empty() && options.transport != "shm" && options.transport != "auto" &&
      !asMessages)
    throw OptionError(fmt::format(
        "plan '{}' is one-sided (an MSCCL++ plan): its rank processes run over --transport shm "
        "(mapped peer memory), tcp or ucx (port channels as messages), not {}",
        algorithm.name, options.transport));
  requireRunnableOneSided(algorithm, options);
  if (asMessages) requirePortChannelsOnly(algorithm, options.transport);
  const std::string prefix = uniqueRunPrefix();
  const ShmNameSweeper sweeper(prefix);
  RankProcessOptions launch;
  launch.nranks = algorithm.nranks;
  launch.transport = asMessages ? options.transport : "shm";
  launch.fifo = options.fifo;
  launch.timeout = options.timeout;
  const int iterations = std::max(1, options.iterations);
  // The first barrier, then per iteration the run (one timeout) and up to two barriers.
  launch.waitLimit = options.timeout * (iterations + 1) +
                     barrierWait(options) * (2 * iterations + 1) + std::chrono::seconds(10);
  const auto outcomes =
      runRankProcesses(launch, [&](int rank, transport::ConnectionSet& connections) {
        if (asMessages) return OneSidedMessageRank(algorithm, options, rank, connections).run();
        OneSidedShmRank self(algorithm, options, rank, connections, prefix);
        return self.run();
      });
  throwFirstFailure(outcomes);
  return mergeRankReports(outcomes);
}

}  // namespace chorus::runtime
