// How a polling loop waits when nothing progressed (runtime layer): spin, then yield, then
// sleep briefly. Used by the interpreter and by point-to-point progress.
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>

namespace chorus::runtime {

class IdleBackoff {
 public:
  // With no more ranks on this host than cores, a peer is running right now: keep spinning,
  // since a yield or a sleep costs microseconds. Oversubscribed, yield early so the peer gets
  // the core.
  explicit IdleBackoff(int ranksOnHost) : spinLimit_(ranksOnHost <= cores() ? 4096 : 64) {}

  void reset() { idle_ = 0; }
  // Idle rounds since the last reset().
  int idleRounds() const { return idle_; }

  // One idle round: spins, yields or sleeps. True every 64th round, when the caller should
  // check for failures and its deadline.
  bool pause() {
    ++idle_;
    if (idle_ > spinLimit_ + 2048)
      std::this_thread::sleep_for(std::chrono::microseconds(idle_ > spinLimit_ + 8192 ? 200 : 20));
    else if (idle_ > spinLimit_)
      std::this_thread::yield();
    return (idle_ & 63) == 0;
  }

 private:
  static int cores() {
    static const int n = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    return n;
  }

  int idle_ = 0;
  const int spinLimit_;
};

}  // namespace chorus::runtime
