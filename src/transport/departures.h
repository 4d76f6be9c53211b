// Which peers left a group cleanly (destroyed their end) and after how many collectives, for
// transports that learn it from a peer's last message (tcp's bye frame, ucx's bye message; shm
// keeps the same facts in its group segment): a collective this rank runs that a departed peer
// never started can never complete, and fails at once instead of at the timeout. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace chorus::transport {

class Departures {
 public:
  Departures(int rank, int nranks);
  // This rank starts collective #number: "" or why it can never complete (departedPeerReason).
  std::string collectiveStarts(std::uint64_t number);
  // This rank starts a call that is no collective (point-to-point).
  void otherCallStarts();
  // `peer` left after starting `started` collectives (its first report counts): "" or why the
  // collective this rank runs can never complete.
  std::string peerLeft(int peer, std::uint64_t started);
  bool departed(int peer) const;
  // Collectives this rank started, for its own leave message.
  std::uint64_t collectivesStarted() const { return started_.load(std::memory_order_relaxed); }

 private:
  std::string dooming() const;  // mutex_ held

  const int rank_;
  mutable std::mutex mutex_;
  std::vector<std::optional<std::uint64_t>> departedAfter_;
  std::uint64_t collectiveNumber_ = 0;
  bool collectiveRunning_ = false;
  std::atomic<std::uint64_t> started_{0};
};

}  // namespace chorus::transport
