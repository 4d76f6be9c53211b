// CallWatchdog: one thread that sleeps until the armed call's deadline (or a change).
#include "torch/call_watchdog.h"

#include <fmt/format.h>

namespace chorus::torch_backend {

CallWatchdog::CallWatchdog(std::function<void(const std::string&)> onExpiry)
    : onExpiry_(std::move(onExpiry)) {}

CallWatchdog::~CallWatchdog() {
  stop();
}

void CallWatchdog::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    armed_ = false;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mutex_);
  stopping_ = false;
}

void CallWatchdog::arm(Clock::time_point deadline, std::string what,
                       std::chrono::milliseconds timeout) {
  {
    std::lock_guard lock(mutex_);
    armed_ = true;
    ++generation_;
    deadline_ = deadline;
    what_ = std::move(what);
    timeout_ = timeout;
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }
  changed_.notify_all();
}

void CallWatchdog::disarm() {
  std::lock_guard lock(mutex_);
  armed_ = false;
  ++generation_;
}

void CallWatchdog::loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (!armed_) {
      changed_.wait(lock);
      continue;
    }
    const std::uint64_t generation = generation_;
    if (changed_.wait_until(lock, deadline_,
                            [&] { return stopping_ || generation_ != generation; }))
      continue;
    // The same call is still running past its deadline.
    armed_ = false;
    const std::string message = fmt::format(
        "{} did not complete within its timeout of {} ms (the timeout passed to the call); the "
        "group is aborted, as NCCL's watchdog does: destroy it and create a new one",
        what_, timeout_.count());
    lock.unlock();
    onExpiry_(message);
    lock.lock();
  }
}

}  // namespace chorus::torch_backend
