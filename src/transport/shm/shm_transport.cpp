#include "transport/shm/shm_transport.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <filesystem>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "support/error.h"
#include "support/size.h"
#include "transport/shm/peer_liveness.h"
#include "transport/shm/shm_bootstrap.h"
#include "transport/shm/shm_fifo.h"
#include "transport/shm/shm_group.h"
#include "transport/shm/shm_segment.h"

namespace chorus::transport {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMaxSlots = 1 << 16;
constexpr std::size_t kMaxSlotBytes = std::size_t{1} << 40;
constexpr int kMaxChannel = 1 << 16;
constexpr std::size_t kMaxPrefix = 200;

void validateOptions(int rank, int nranks, const ShmOptions& options) {
  if (nranks < 1)
    throw OptionError(fmt::format("shm transport: a group needs at least 1 rank, got {}", nranks));
  if (rank < 0 || rank >= nranks)
    throw OptionError(
        fmt::format("shm transport: rank {} is not a rank of a {}-rank group (use "
                    "0 to {})",
                    rank, nranks, nranks - 1));
  if (options.fifo.slots < 1 || options.fifo.slots > kMaxSlots)
    throw OptionError(
        fmt::format("shm transport: {} slots per FIFO is out of range; set {} to "
                    "1..{} (8 or more for compiled plans)",
                    options.fifo.slots, options.slotsVariable, kMaxSlots));
  if (options.fifo.slotBytes < 64 || options.fifo.slotBytes > kMaxSlotBytes)
    throw OptionError(
        fmt::format("shm transport: a FIFO slot of {} bytes is out of range; set {} "
                    "to 64 bytes .. 1 TiB (e.g. 256K)",
                    options.fifo.slotBytes, options.slotBytesVariable));
  const auto& prefix = options.namePrefix;
  bool plain = !prefix.empty() && prefix.size() <= kMaxPrefix;
  for (char c : prefix)
    plain = plain && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.');
  if (!plain)
    throw OptionError(fmt::format(
        "shm transport: the segment name prefix '{}' must be 1 to {} characters of [A-Za-z0-9._-], "
        "the same on every rank and unique per communicator (e.g. chorus-<nonce>-<id>)",
        prefix, kMaxPrefix));
}

class ShmConnections final : public ConnectionSet {
 public:
  ShmConnections(int rank, int nranks, ShmOptions options, std::vector<RankIdentity> identities)
      : rank_(rank),
        nranks_(nranks),
        options_(std::move(options)),
        sendFifos_(static_cast<std::size_t>(nranks)),
        recvFifos_(static_cast<std::size_t>(nranks)) {
    std::vector<pid_t> pids;
    std::vector<bool> watch;
    for (int r = 0; r < nranks; ++r) {
      pids.push_back(identities[r].pid);
      // A pid names the same process only inside one pid namespace.
      watch.push_back(r != rank && identities[r].pidNamespace == identities[rank].pidNamespace);
      samePidNamespace_.push_back(identities[r].pidNamespace == identities[rank].pidNamespace);
    }
    liveness_ = std::make_unique<PeerLiveness>(std::move(pids), watch);
  }

  ~ShmConnections() override {
    if (group_) group_->markDeparted(rank_, collectivesStarted_);
    sendFifos_.clear();
    recvFifos_.clear();
    removeNames();
    group_.reset();
  }

  // Creates (rank 0) or opens (the others) the group segment; collective.
  void attachGroup(Store& store) {
    const std::string name = fmt::format("/{}-g", options_.namePrefix);
    const std::string readyKey = fmt::format("shm/{}/group-ready", options_.namePrefix);
    const auto deadline = deadlineAfter(options_.timeout);
    if (rank_ == 0) {
      auto segment = createShmSegment(name, ShmGroup::segmentBytes(nranks_), "the group segment",
                                      "remove stale chorus-* files from /dev/shm");
      if (!segment)
        throw CommError(fmt::format(
            "shm transport: the group segment {} already exists: another communicator uses the "
            "prefix '{}'; give every communicator a unique prefix (or remove the stale /dev/shm{} "
            "left by a killed job)",
            name, options_.namePrefix, name));
      createdNames_.push_back(name);
      ShmGroup::format(*segment, nranks_);
      group_ = std::make_unique<ShmGroup>(std::move(*segment), nranks_);
      store.set(readyKey, toBytes("1"));
      // Once every peer has mapped the segment its name can go, so a later crash leaves nothing
      // behind in /dev/shm.
      std::vector<std::string> mapped;
      for (int r = 1; r < nranks_; ++r)
        mapped.push_back(mappedKey(r));
      try {
        waitUntil([&] { return store.check(mapped); }, deadline, [this] { return abortReason(); },
                  "every rank to map the group segment " + name);
      } catch (const std::exception& e) {
        // The destructor removes the name; ranks that come for it later read why from here.
        try {
          store.set(failedKey(), toBytes(e.what()));
        } catch (const std::exception&) {
          // The store's host may be gone too; those ranks then name an exited peer instead.
        }
        throw;
      }
      unlinkShmName(name);
      return;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    store.get(readyKey, std::max(left, std::chrono::milliseconds(0)));
    auto segment = openShmSegment(
        name, deadline, [this] { return abortReason(); }, "the group segment");
    if (!segment) {
      // Rank 0 removes the name when it fails, usually because a peer died, and then exits
      // itself: pass on rank 0's reason rather than naming rank 0.
      const std::string why = rankZeroFailure(store);
      if (!why.empty())
        throw CommError(fmt::format(
            "shm transport: rank 0 gave up before every rank mapped the group segment {}: {}", name,
            why));
      const std::string dead = checkPeers();
      throw CommError(fmt::format(
          "shm transport: the group segment {} is gone although rank 0 announced it; {}", name,
          dead.empty() ? "rank 0 has probably failed or exited (see its error)"
                       : dead + " (rank 0 then gave up and removed the segment)"));
    }
    waitUntil([&] { return ShmGroup::isReady(*segment); }, deadline,
              [this] { return abortReason(); }, "rank 0 to publish the group segment " + name);
    group_ = std::make_unique<ShmGroup>(std::move(*segment), nranks_);
    store.set(mappedKey(rank_), toBytes("1"));
  }

  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }

  Fifo& sendFifo(int peer, int channel) override {
    checkPeer(peer, channel);
    return fifo(rank_, peer, channel);
  }

  Fifo& recvFifo(int peer, int channel) override {
    checkPeer(peer, channel);
    return fifo(peer, rank_, channel);
  }

  void abort(const std::string& reason) override {
    if (group_) group_->abort(reason);
  }

  std::string abortReason() const override {
    if (group_) {
      std::string reason = group_->abortReason();
      if (!reason.empty()) return reason;
    }
    // Several threads of a rank may poll (the one-sided engine's threadblocks, executor
    // threads): one at a time runs the slower checks, at most once per interval.
    const auto now = Clock::now();
    if (now.time_since_epoch().count() < nextLivenessCheck_.load(std::memory_order_relaxed))
      return {};
    std::unique_lock checking(livenessMutex_, std::try_to_lock);
    if (!checking.owns_lock()) return {};
    nextLivenessCheck_.store((now + kPeerLivenessInterval).time_since_epoch().count(),
                             std::memory_order_relaxed);
    if (std::string reason = checkDeparted(); !reason.empty()) return reason;
    return checkPeers();
  }

  bool aborted() const override { return group_ && group_->aborted(); }

  void publishCall(std::string_view description) override {
    group_->publishCall(rank_, description);
    collectiveRunning_.store(false, std::memory_order_relaxed);
  }
  void publishNumberedCall(std::uint64_t shapeKey, std::string_view name, std::uint64_t number,
                           std::string_view details) override {
    group_->publishNumberedCall(rank_, shapeKey, name, number, details);
    collectiveNumber_.store(number, std::memory_order_relaxed);
    collectiveRunning_.store(true, std::memory_order_relaxed);
    collectivesStarted_ = std::max(collectivesStarted_, number + 1);
  }
  bool peerDeparted(int peer) const override {
    return group_ && peer >= 0 && peer < nranks_ && group_->departed(peer);
  }

  std::string peerCall(int peer) const override {
    checkPeer(peer, 0);
    return group_->peerCall(peer);
  }

 private:
  std::string mappedKey(int rank) const {
    return fmt::format("shm/{}/group-mapped/{}", options_.namePrefix, rank);
  }

  void checkPeer(int peer, int channel) const {
    if (peer < 0 || peer >= nranks_ || peer == rank_)
      throw CommError(fmt::format("rank {}: peer {} is not another rank of this {}-rank group",
                                  named(rank_), peer, nranks_));
    if (channel < 0 || channel >= kMaxChannel)
      throw CommError(fmt::format("rank {}: channel {} to rank {} is out of range (0..{})",
                                  named(rank_), channel, named(peer), kMaxChannel - 1));
  }

  // Leaving: removes the /dev/shm names of this rank's connections that nobody will open any
  // more. A segment the peer has not opened yet stays only if this rank created it and the
  // peer may still come for it (it holds messages already sent); the peer removes it when it
  // maps it or leaves. Never waits.
  void removeNames() noexcept {
    const std::string lead = options_.namePrefix + "-c";
    std::vector<std::string> doomed;
    std::error_code error;
    for (std::filesystem::directory_iterator it("/dev/shm", error), end; !error && it != end;
         it.increment(error)) {
      const std::string file = it->path().filename().string();
      int from = -1, to = -1, channel = -1;
      if (file.rfind(lead, 0) != 0 ||
          !parseConnection(file.substr(lead.size()), &from, &to, &channel))
        continue;
      if (from != rank_ && to != rank_) continue;
      const std::string name = "/" + file;
      const bool mine =
          std::find(createdNames_.begin(), createdNames_.end(), name) != createdNames_.end();
      if (mine && peerMayOpen(from == rank_ ? to : from)) continue;
      doomed.push_back(name);
    }
    for (const auto& name : createdNames_)
      if (name.rfind("/" + lead, 0) != 0) doomed.push_back(name);  // the group segment
    for (const auto& name : doomed)
      unlinkShmName(name);
  }

  // "<from>-<to>-<channel>" exactly.
  static bool parseConnection(std::string_view text, int* from, int* to, int* channel) {
    int* fields[] = {from, to, channel};
    for (int f = 0; f < 3; ++f) {
      const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *fields[f]);
      if (ec != std::errc() || ptr == text.data()) return false;
      text.remove_prefix(static_cast<std::size_t>(ptr - text.data()));
      if (f < 2) {
        if (text.empty() || text.front() != '-') return false;
        text.remove_prefix(1);
      }
    }
    return text.empty();
  }

  bool peerMayOpen(int peer) const {
    if (peer < 0 || peer >= nranks_ || !group_) return false;
    return !group_->departed(peer) && !liveness_->hasExited(peer);
  }

  // A peer that left the group cleanly before the collective this rank waits in aborts it: every
  // rank takes part in every collective, so the call can never complete.
  std::string checkDeparted() const {
    if (!collectiveRunning_.load(std::memory_order_relaxed) || !group_) return {};
    const std::uint64_t current = collectiveNumber_.load(std::memory_order_relaxed);
    for (int peer = 0; peer < nranks_; ++peer) {
      if (peer == rank_) continue;
      const auto started = group_->collectivesBeforeDeparting(peer);
      if (!started || *started > current) continue;
      group_->abort(departedPeerReason(named(peer), *started, named(rank_), current));
      return group_->abortReason();
    }
    return {};
  }

  // The first peer process found exited (not after leaving cleanly) aborts the group.
  std::string checkPeers() const {
    while (true) {
      const int exited = liveness_->findExited();
      if (exited < 0) return {};
      if (group_ && group_->departed(exited)) {
        liveness_->forget(exited);
        continue;
      }
      const std::string reason = exitReason(exited);
      if (!group_) return reason;
      group_->abort(reason);
      return group_->abortReason();
    }
  }

  // `rank`'s number in messages (ShmOptions::rankNames).
  int named(int rank) const {
    const auto& names = options_.rankNames;
    return rank >= 0 && static_cast<std::size_t>(rank) < names.size() ? names[rank] : rank;
  }

  std::string exitReason(int rank) const {
    return fmt::format(
        "rank {} (pid {}) exited before the group finished: it crashed, was killed or returned "
        "early; see that rank's own error",
        named(rank), liveness_->pidOf(rank));
  }

  std::string failedKey() const { return fmt::format("shm/{}/group-failed", options_.namePrefix); }

  // Why rank 0 gave up on the group segment, when it could still say so; never waits.
  std::string rankZeroFailure(Store& store) const {
    try {
      if (!store.check({failedKey()})) return {};
      const auto bytes = store.get(failedKey(), std::chrono::milliseconds(0));
      return {bytes.begin(), bytes.end()};
    } catch (const std::exception&) {
      return {};
    }
  }

  // The FIFO of a connection, set up on first use. Lookups are two vector indexings: the
  // interpreter asks for every threadblock's FIFOs on every call.
  Fifo& fifo(int from, int to, int channel) {
    const int peer = from == rank_ ? to : from;
    auto& byChannel = (from == rank_ ? sendFifos_ : recvFifos_)[static_cast<std::size_t>(peer)];
    if (static_cast<std::size_t>(channel) >= byChannel.size())
      byChannel.resize(static_cast<std::size_t>(channel) + 1);
    auto& slot = byChannel[static_cast<std::size_t>(channel)];
    if (!slot) {
      try {
        slot = openFifo(from, to, channel);
      } catch (const UserError& e) {
        abort(fmt::format("rank {} could not set up a FIFO: {}", named(rank_), e.what()));
        throw;
      }
    }
    return *slot;
  }

  // Creates the connection's segment, or opens it if the other end got there first.
  std::unique_ptr<ShmFifo> openFifo(int from, int to, int channel) {
    const FifoOptions& shape = options_.fifo;
    const std::string name = fmt::format("/{}-c{}-{}-{}", options_.namePrefix, from, to, channel);
    const std::string connection =
        fmt::format("rank {} -> rank {} channel {}", named(from), named(to), channel);
    const std::string purpose = fmt::format("the FIFO {}: {} slots of {}", connection, shape.slots,
                                            formatSize(shape.slotBytes));
    const std::string shrink =
        fmt::format("shrink the FIFOs with {} (now {}) or {} (now {})", options_.slotsVariable,
                    shape.slots, options_.slotBytesVariable, formatSize(shape.slotBytes));
    const std::string settings =
        fmt::format("{} and {}", options_.slotsVariable, options_.slotBytesVariable);
    const AbortCheck abortCheck = [this] { return abortReason(); };
    const auto deadline = deadlineAfter(options_.timeout);
    const bool sender = from == rank_;
    // process_vm_readv takes the sender's pid, which means the same process only inside one
    // pid namespace.
    const bool singleCopy = samePidNamespace_[static_cast<std::size_t>(sender ? to : from)];
    for (int attempt = 0;; ++attempt) {
      if (auto segment = createShmSegment(name, ShmFifo::segmentBytes(shape), purpose, shrink)) {
        createdNames_.push_back(name);
        ShmFifo::format(*segment, shape);
        return std::make_unique<ShmFifo>(std::move(*segment), shape, connection, settings, sender,
                                         singleCopy);
      }
      if (auto segment = openShmSegment(name, deadline, abortCheck, purpose)) {
        try {
          waitUntil([&] { return ShmFifo::isReady(*segment); }, deadline, abortCheck,
                    "the peer to publish " + name);
        } catch (...) {
          unlinkShmName(name);  // its creator is gone or stuck: nobody else will map it
          throw;
        }
        unlinkShmName(name);  // both ends have it mapped now
        return std::make_unique<ShmFifo>(std::move(*segment), shape, connection, settings, sender,
                                         singleCopy);
      }
      // The name vanished in between: its creator failed (and aborts the group). Retry.
      if (const std::string reason = abortReason(); !reason.empty())
        throw CommError(
            fmt::format("shm transport: setting up the FIFO {} failed: {}", connection, reason));
      if (Clock::now() >= deadline)
        throw TimeoutError(
            fmt::format("shm transport: timed out setting up the FIFO {}; raise "
                        "CHORUS_TIMEOUT if the peers are only slow",
                        connection));
      if (attempt > 16) std::this_thread::yield();
    }
  }

  const int rank_;
  const int nranks_;
  const ShmOptions options_;
  std::vector<std::string> createdNames_;
  std::unique_ptr<ShmGroup> group_;
  std::unique_ptr<PeerLiveness> liveness_;
  std::vector<bool> samePidNamespace_;  // by rank
  // [peer][channel]; empty until first use.
  std::vector<std::vector<std::unique_ptr<ShmFifo>>> sendFifos_, recvFifos_;
  mutable std::atomic<Clock::rep> nextLivenessCheck_{0};
  mutable std::mutex livenessMutex_;  // held by the thread running the liveness checks
  // The collective this rank runs (publishNumberedCall()), for checkDeparted(); set by the
  // calling thread, read by whichever thread polls abortReason().
  std::atomic<bool> collectiveRunning_ = false;
  std::atomic<std::uint64_t> collectiveNumber_ = 0;
  std::uint64_t collectivesStarted_ = 0;  // the calling thread's own
};

}  // namespace

std::unique_ptr<ConnectionSet> connectShm(Store& store, int rank, int nranks,
                                          const ShmOptions& options) {
  validateOptions(rank, nranks, options);
  auto identities = exchangeIdentities(store, options.namePrefix, rank, nranks, options.timeout);
  auto connections = std::make_unique<ShmConnections>(rank, nranks, options, std::move(identities));
  connections->attachGroup(store);
  return connections;
}

}  // namespace chorus::transport
