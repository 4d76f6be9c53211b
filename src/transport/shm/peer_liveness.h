// Watches the processes of a group's peers so a rank notices one that has exited (crashed,
// killed, returned early) instead of waiting for it until the timeout. shm transport.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <chrono>
#include <vector>

namespace chorus::transport {

// How often a transport's abortReason() checks its peers' processes: a dead peer is noticed
// within this, and a caller polling in a loop pays one poll() syscall per interval.
inline constexpr auto kPeerLivenessInterval = std::chrono::milliseconds(1);

class PeerLiveness {
 public:
  // Watches pids[r] for every r with watch[r] set. Uses a pidfd per peer (pidfd_open, poll),
  // opened now so a pid reused later is never mistaken for the peer; where pidfds are not
  // available (or when `usePidfds` is false) it checks kill(pid, 0) and /proc/<pid>/stat
  // (zombie or dead) instead.
  PeerLiveness(std::vector<pid_t> pids, const std::vector<bool>& watch, bool usePidfds = true);
  PeerLiveness(const PeerLiveness&) = delete;
  PeerLiveness& operator=(const PeerLiveness&) = delete;
  ~PeerLiveness();

  // A watched rank whose process has exited (zombie or reaped), or -1. One poll() syscall.
  int findExited();
  // True if watched `rank`'s process has exited (zombie or reaped). One syscall.
  bool hasExited(int rank);
  // Stops watching `rank` (it left cleanly).
  void forget(int rank);
  pid_t pidOf(int rank) const { return pids_[rank]; }

 private:
  void rebuildPollSet();

  std::vector<pid_t> pids_;
  std::vector<int> pidfds_;       // per rank; -1 where not watched or not available
  std::vector<bool> watched_;     // per rank
  std::vector<bool> fallback_;    // per rank: watched without a pidfd
  std::vector<int> exitedEarly_;  // ranks already gone when the watch started
  std::vector<pollfd> pollSet_;
  std::vector<int> pollRanks_;  // rank of each pollSet_ entry
};

}  // namespace chorus::transport
