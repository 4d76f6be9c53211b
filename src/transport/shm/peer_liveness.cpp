#include "transport/shm/peer_liveness.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>

namespace chorus::transport {

namespace {

int openPidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  errno = ENOSYS;
  return -1;
#endif
}

// Without a pidfd: gone (reaped) or a zombie / dead per /proc/<pid>/stat.
bool exitedByFallback(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  const std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  if (text.empty()) return ::kill(pid, 0) != 0 && errno == ESRCH;  // reaped meanwhile
  // "pid (comm) S ...": the state follows the last ')' (comm may contain parentheses).
  const auto close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return false;
  const char state = text[close + 2];
  return state == 'Z' || state == 'X' || state == 'x';
}

}  // namespace

PeerLiveness::PeerLiveness(std::vector<pid_t> pids, const std::vector<bool>& watch, bool usePidfds)
    : pids_(std::move(pids)),
      pidfds_(pids_.size(), -1),
      watched_(pids_.size(), false),
      fallback_(pids_.size(), false) {
  for (std::size_t r = 0; r < pids_.size(); ++r) {
    if (r >= watch.size() || !watch[r] || pids_[r] <= 0) continue;
    watched_[r] = true;
    const int fd = usePidfds ? openPidfd(pids_[r]) : -1;
    if (fd >= 0) {
      pidfds_[r] = fd;
    } else if (usePidfds && errno == ESRCH) {
      exitedEarly_.push_back(static_cast<int>(r));
    } else {
      fallback_[r] = true;  // no pidfd_open (old kernel, seccomp): poll the pid instead
    }
  }
  rebuildPollSet();
}

PeerLiveness::~PeerLiveness() {
  for (int fd : pidfds_)
    if (fd >= 0) ::close(fd);
}

void PeerLiveness::rebuildPollSet() {
  pollSet_.clear();
  pollRanks_.clear();
  for (std::size_t r = 0; r < pids_.size(); ++r) {
    if (!watched_[r] || pidfds_[r] < 0) continue;
    pollSet_.push_back({pidfds_[r], POLLIN, 0});
    pollRanks_.push_back(static_cast<int>(r));
  }
}

int PeerLiveness::findExited() {
  for (int rank : exitedEarly_)
    if (watched_[rank]) return rank;
  if (!pollSet_.empty()) {
    for (auto& entry : pollSet_)
      entry.revents = 0;
    int ready = 0;
    do {
      ready = ::poll(pollSet_.data(), pollSet_.size(), 0);
    } while (ready < 0 && errno == EINTR);
    if (ready > 0)
      for (std::size_t i = 0; i < pollSet_.size(); ++i)
        if (pollSet_[i].revents != 0) return pollRanks_[i];
  }
  for (std::size_t r = 0; r < pids_.size(); ++r)
    if (watched_[r] && fallback_[r] && exitedByFallback(pids_[r])) return static_cast<int>(r);
  return -1;
}

bool PeerLiveness::hasExited(int rank) {
  if (rank < 0 || rank >= static_cast<int>(pids_.size()) || !watched_[rank]) return false;
  if (std::find(exitedEarly_.begin(), exitedEarly_.end(), rank) != exitedEarly_.end()) return true;
  if (fallback_[rank]) return exitedByFallback(pids_[rank]);
  pollfd entry{pidfds_[rank], POLLIN, 0};
  int ready = 0;
  do {
    ready = ::poll(&entry, 1, 0);
  } while (ready < 0 && errno == EINTR);
  return ready > 0 && entry.revents != 0;
}

void PeerLiveness::forget(int rank) {
  if (rank < 0 || rank >= static_cast<int>(pids_.size()) || !watched_[rank]) return;
  watched_[rank] = false;
  if (pidfds_[rank] >= 0) ::close(pidfds_[rank]);
  pidfds_[rank] = -1;
  rebuildPollSet();
}

}  // namespace chorus::transport
