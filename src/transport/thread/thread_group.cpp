#include "transport/thread/thread_group.h"

#include <fmt/format.h>

#include "support/error.h"

namespace chorus::transport {

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
  std::string abortReason() const override { return group_.abortReason(); }
  void publishCall(std::string_view description) override {
    group_.publishCall(rank_, description);
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

ThreadGroup::ThreadGroup(int nranks, FifoOptions options)
    : nranks_(nranks), options_(options), calls_(nranks > 0 ? nranks : 0) {
  if (nranks < 1)
    throw OptionError(fmt::format("a thread group needs at least 1 rank, got {}", nranks));
  if (options.slots < 1 || options.slotBytes < 64)
    throw OptionError("FIFOs need at least 1 slot of at least 64 bytes");
  for (int r = 0; r < nranks; ++r)
    views_.push_back(std::make_unique<RankView>(*this, r));
}

ThreadGroup::~ThreadGroup() = default;

ConnectionSet& ThreadGroup::rank(int r) {
  return *views_.at(r);
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
  std::lock_guard lock(callMutex_);
  calls_.at(rank).assign(description.substr(0, 200));
}

std::string ThreadGroup::peerCall(int rank) const {
  std::lock_guard lock(callMutex_);
  return calls_.at(rank);
}

}  // namespace chorus::transport
