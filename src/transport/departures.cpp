#include "transport/departures.h"

#include <algorithm>

#include "support/index.h"
#include "transport/connections.h"

namespace chorus::transport {

Departures::Departures(int rank, int nranks) : rank_(rank), departedAfter_(ix(nranks)) {}

std::string Departures::collectiveStarts(std::uint64_t number) {
  started_.store(std::max(started_.load(std::memory_order_relaxed), number + 1),
                 std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  collectiveRunning_ = true;
  collectiveNumber_ = number;
  return dooming();
}

void Departures::otherCallStarts() {
  std::lock_guard lock(mutex_);
  collectiveRunning_ = false;
}

std::string Departures::peerLeft(int peer, std::uint64_t started) {
  std::lock_guard lock(mutex_);
  if (peer < 0 || ix(peer) >= departedAfter_.size()) return {};
  if (!departedAfter_[ix(peer)]) departedAfter_[ix(peer)] = started;
  return dooming();
}

bool Departures::departed(int peer) const {
  std::lock_guard lock(mutex_);
  return peer >= 0 && ix(peer) < departedAfter_.size() && departedAfter_[ix(peer)].has_value();
}

std::string Departures::dooming() const {
  if (!collectiveRunning_) return {};
  for (std::size_t peer = 0; peer < departedAfter_.size(); ++peer) {
    const auto& started = departedAfter_[peer];
    if (started && *started <= collectiveNumber_)
      return departedPeerReason(static_cast<int>(peer), *started, rank_, collectiveNumber_);
  }
  return {};
}

}  // namespace chorus::transport
