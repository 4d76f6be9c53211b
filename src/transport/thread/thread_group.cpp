#include "transport/thread/thread_group.h"

#include <fmt/format.h>

#include "support/error.h"

namespace chorus::transport {

namespace {

constexpr std::size_t kMaxThreadCallBytes = 200;  // of a published call's text (connections.h)

}  // namespace

class ThreadGroup::RankView final : public ConnectionSet {
 public:
  RankView(ThreadGroup& group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int nranks() const override { return group_.nranks(); }
  Fifo& sendFifo(int peer, int channel) override {
    checkPeer(peer);
    return group_.fifo(rank_, peer, channel);
  }
  Fifo& recvFifo(int peer, int channel) override {
    checkPeer(peer);
    return group_.fifo(peer, rank_, channel);
  }
  void abort(const std::string& reason) override { group_.abort(reason); }
  std::string abortReason() const override {
    std::string reason = group_.abortReason();
    if (reason.empty()) reason = group_.departedReason(rank_);
    return reason;
  }
  bool peerDeparted(int peer) const override {
    return peer >= 0 && peer < group_.nranks() &&
           group_.departedAfter_[static_cast<std::size_t>(peer)].load(std::memory_order_acquire) >=
               0;
  }
  void publishCall(std::string_view description) override {
    group_.publishCall(rank_, description);
  }
  void publishNumberedCall(std::uint64_t shapeKey, std::string_view name, std::uint64_t number,
                           std::string_view details) override {
    group_.publishNumberedCall(rank_, shapeKey, name, number, details);
  }
  std::string peerCall(int peer) const override {
    checkPeer(peer);
    return group_.peerCall(peer);
  }

 private:
  void checkPeer(int peer) const {
    if (peer < 0 || peer >= group_.nranks() || peer == rank_)
      throw CommError(fmt::format("rank {}: peer {} is not another rank of this {}-rank group",
                                  rank_, peer, group_.nranks()));
  }
  ThreadGroup& group_;
  int rank_;
};

ThreadGroup::ThreadGroup(int nranks, FifoOptions options) : nranks_(nranks), options_(options) {
  if (nranks < 1)
    throw OptionError(fmt::format("a thread group needs at least 1 rank, got {}", nranks));
  calls_ = std::make_unique<PublishedCall[]>(static_cast<std::size_t>(nranks));
  started_ = std::make_unique<std::atomic<std::int64_t>[]>(static_cast<std::size_t>(nranks));
  departedAfter_ = std::make_unique<std::atomic<std::int64_t>[]>(static_cast<std::size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    started_[static_cast<std::size_t>(r)].store(0);
    departedAfter_[static_cast<std::size_t>(r)].store(-1);
  }
  if (options.slots < 1 || options.slotBytes < 64)
    throw OptionError("FIFOs need at least 1 slot of at least 64 bytes");
  for (int r = 0; r < nranks; ++r)
    views_.push_back(std::make_unique<RankView>(*this, r));
}

ThreadGroup::~ThreadGroup() = default;

ConnectionSet& ThreadGroup::rank(int r) {
  return *views_.at(r);
}

void ThreadGroup::leave(int r) {
  const auto i = static_cast<std::size_t>(r);
  departedAfter_[i].store(started_[i].load(std::memory_order_relaxed), std::memory_order_release);
  departures_.fetch_add(1, std::memory_order_release);
}

// Collective #n of `rank` (published, running) cannot complete once a peer left having started
// no more than n collectives: fails the group with that reason. "" otherwise.
std::string ThreadGroup::departedReason(int rank) {
  if (departures_.load(std::memory_order_acquire) == 0) return {};
  const std::uint64_t published =
      calls_[static_cast<std::size_t>(rank)].number.load(std::memory_order_acquire);
  if (published == 0) return {};  // not in a collective
  const std::uint64_t current = published - 1;
  for (int peer = 0; peer < nranks_; ++peer) {
    const std::int64_t started =
        departedAfter_[static_cast<std::size_t>(peer)].load(std::memory_order_acquire);
    if (peer == rank || started < 0 || static_cast<std::uint64_t>(started) > current) continue;
    abort(departedPeerReason(peer, static_cast<std::uint64_t>(started), rank, current));
    return abortReason();
  }
  return {};
}

Fifo& ThreadGroup::fifo(int from, int to, int channel) {
  std::lock_guard lock(mutex_);
  auto& slot = fifos_[{from, to, channel}];
  if (!slot) slot = std::make_unique<ThreadFifo>(options_);
  return *slot;
}

void ThreadGroup::abort(const std::string& reason) {
  std::lock_guard lock(abortMutex_);
  if (aborted_.load()) return;
  abortReason_ = reason;
  aborted_.store(true, std::memory_order_release);
}

std::string ThreadGroup::abortReason() const {
  if (!aborted_.load(std::memory_order_acquire)) return {};
  std::lock_guard lock(abortMutex_);
  return abortReason_;
}

void ThreadGroup::publishCall(int rank, std::string_view description) {
  PublishedCall& c = calls_[static_cast<std::size_t>(rank)];
  {
    std::lock_guard lock(c.mutex);
    c.text.assign(description.substr(0, kMaxThreadCallBytes));
    c.nameBytes = c.text.size();
  }
  c.shapeKey = 0;
  c.number.store(0, std::memory_order_release);
}

void ThreadGroup::publishNumberedCall(int rank, std::uint64_t shapeKey, std::string_view name,
                                      std::uint64_t number, std::string_view details) {
  PublishedCall& c = calls_[static_cast<std::size_t>(rank)];
  if (shapeKey == 0 || shapeKey != c.shapeKey) {
    std::lock_guard lock(c.mutex);
    c.text.assign(name.substr(0, kMaxThreadCallBytes));
    c.nameBytes = c.text.size();
    c.text.append(details.substr(0, kMaxThreadCallBytes - c.nameBytes));
    c.shapeKey = shapeKey;
  }
  // As on shm: a reader may pair the number with the previous text for a moment.
  c.number.store(number + 1, std::memory_order_release);
  auto& started = started_[static_cast<std::size_t>(rank)];
  if (static_cast<std::int64_t>(number) + 1 > started.load(std::memory_order_relaxed))
    started.store(static_cast<std::int64_t>(number) + 1, std::memory_order_relaxed);
}

std::string ThreadGroup::peerCall(int rank) const {
  CHORUS_INTERNAL_ASSERT(rank >= 0 && rank < nranks_, "thread group rank out of range");
  const PublishedCall& c = calls_[static_cast<std::size_t>(rank)];
  std::string text;
  std::size_t nameBytes = 0;
  {
    std::lock_guard lock(c.mutex);
    text = c.text;
    nameBytes = c.nameBytes;
  }
  const std::uint64_t number = c.number.load(std::memory_order_acquire);
  if (number == 0) return text;
  const std::string_view view(text);
  char out[kMaxCallTextBytes];
  return std::string(out, formatNumberedCall(out, sizeof out, view.substr(0, nameBytes), number - 1,
                                             view.substr(nameBytes)));
}

}  // namespace chorus::transport
