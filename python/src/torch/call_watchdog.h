// CallWatchdog: enforces the timeout a torch.distributed call passes in its options
// (opts.timeout), which can be shorter than the group's. A call armed with a deadline that is
// still running when the deadline passes fails its group, as NCCL's watchdog does: `onExpiry`
// runs (on the watchdog's own thread) with a message naming the call and the timeout, and
// aborts the communicator, so the call and its peers' calls end with that error at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace chorus::torch_backend {

class CallWatchdog {
 public:
  using Clock = std::chrono::steady_clock;

  // `onExpiry(message)` must be callable from any thread while a call runs (chorus's
  // Communicator::abort is).
  explicit CallWatchdog(std::function<void(const std::string&)> onExpiry);
  // Stops the thread (stop()).
  ~CallWatchdog();
  CallWatchdog(const CallWatchdog&) = delete;
  CallWatchdog& operator=(const CallWatchdog&) = delete;

  // Watches the call that starts now on the calling thread until disarm(). `what` names it
  // ("all_reduce"), `timeout` is what the caller passed (for the message). Starts the thread on
  // first use. One call at a time (the group's calls run one after another).
  void arm(Clock::time_point deadline, std::string what, std::chrono::milliseconds timeout);
  void disarm();
  // Stops and joins the thread; an armed call is no longer watched, and onExpiry is not running
  // once it returns. Later arm() calls start it again.
  void stop();

 private:
  void loop();

  std::function<void(const std::string&)> onExpiry_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool armed_ = false;
  bool stopping_ = false;
  std::uint64_t generation_ = 0;
  Clock::time_point deadline_;
  std::string what_;
  std::chrono::milliseconds timeout_{0};
  std::thread thread_;
};

}  // namespace chorus::torch_backend
