// runOneSidedOnProcesses (one_sided_runner.h): each rank process creates one shared-memory
// segment, "/<run prefix>-os-r<rank>": a header (where its user buffers lie in the mirror, and
// on rank 0 the group's barrier count), then its one-sided region (one_sided_engine.h: token
// counts, packets, scratch, and the mirror of its user buffers). It maps every peer's segment,
// and per iteration: refills its inputs and resets its region, joins a barrier, runs its
// threadblocks on all ranks' mapped memory, joins a barrier. Then it copies its buffers back
// out of the segment and checks them. The segments' names are removed once every rank has
// mapped them; the parent sweeps any a killed rank left.
#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/one_sided_engine.h"
#include "runtime/one_sided_runner.h"
#include "runtime/process_runner.h"
#include "support/error.h"
#include "transport/connections.h"
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
class OneSidedRank {
 public:
  OneSidedRank(const ir::Algorithm& algorithm, const RunOptions& options, int rank,
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
      OneSidedExecution execution(a_, options_, memory_, {rank_},
                                  [this] { return connections_.abortReason(); });
      const auto start = Clock::now();
      execution.run();
      report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
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
  // a launch may take (kBarrierWait): a peer still running times out on its own first and names
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

}  // namespace

RunReport runOneSidedOnProcesses(const ir::Algorithm& algorithm, const RunOptions& options) {
  if (!options.transport.empty() && options.transport != "shm" && options.transport != "auto")
    throw OptionError(fmt::format(
        "plan '{}' is one-sided (an MSCCL++ plan): its ranks write into their peers' memory, "
        "which processes share over --transport shm; --transport {} has no shared memory (port "
        "channels as messages are not implemented), use shm or thread",
        algorithm.name, options.transport));
  requireRunnableOneSided(algorithm, options);
  const std::string prefix = uniqueRunPrefix();
  const ShmNameSweeper sweeper(prefix);
  RankProcessOptions launch;
  launch.nranks = algorithm.nranks;
  launch.transport = "shm";
  launch.fifo = options.fifo;
  launch.timeout = options.timeout;
  const int iterations = std::max(1, options.iterations);
  // The first barrier, then per iteration the run (one timeout) and up to two barriers.
  launch.waitLimit = options.timeout * (iterations + 1) +
                     barrierWait(options) * (2 * iterations + 1) + std::chrono::seconds(10);
  const auto outcomes =
      runRankProcesses(launch, [&](int rank, transport::ConnectionSet& connections) {
        OneSidedRank self(algorithm, options, rank, connections, prefix);
        return self.run();
      });
  throwFirstFailure(outcomes);
  return mergeRankReports(outcomes);
}

}  // namespace chorus::runtime
