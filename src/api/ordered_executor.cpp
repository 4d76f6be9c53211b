// OrderedExecutor: a FIFO of tasks, one runner at a time (the worker or a waiting thread).
#include "api/ordered_executor.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "chorus/chorus.h"

namespace chorus::api {

struct OrderedExecutor::State {
  struct Entry {
    Ticket ticket;
    Task task;
  };
  using Clock = std::chrono::steady_clock;
  // How often a worker with work in sight looks at the queue without being woken, and how long
  // it keeps doing so after the last submission before it sleeps until woken.
  static constexpr auto kPollInterval = std::chrono::milliseconds(1);
  static constexpr auto kIdleBeforeSleep = std::chrono::milliseconds(100);

  std::mutex mutex;
  std::condition_variable workerWake;  // the worker waits here
  std::condition_variable settled;     // waiters wait here
  std::deque<Entry> queue;
  Ticket nextTicket = 0;
  Ticket settledBelow = 0;   // every ticket below this has settled
  Ticket releasedBelow = 0;  // deferred point-to-point tasks below this may run
  bool running = false;      // a batch is running on some thread
  bool stopping = false;
  bool workerAsleep = false;  // waiting without a deadline: must be woken to see new work
  int waiters = 0;
  Clock::time_point lastSubmit;

  // Caller holds mutex.
  bool headRunnable() const {
    if (running || queue.empty()) return false;
    const Entry& head = queue.front();
    return head.task.kind == Kind::collective || head.ticket < releasedBelow;
  }
  void release(Ticket ticket) { releasedBelow = std::max(releasedBelow, ticket + 1); }

  // Removes the next batch (one collective, or every queued point-to-point task at the head) and
  // runs it with the mutex released; `lock` holds it on entry and again on return.
  void runBatch(std::unique_lock<std::mutex>& lock) {
    std::vector<Task> batch;
    const Kind kind = queue.front().task.kind;
    do {
      batch.push_back(std::move(queue.front().task));
      queue.pop_front();
    } while (kind == Kind::pointToPoint && !queue.empty() &&
             queue.front().task.kind == Kind::pointToPoint);
    running = true;
    lock.unlock();

    std::exception_ptr error;
    if (kind == Kind::collective) {
      try {
        batch.front().run();
      } catch (...) {
        error = std::current_exception();
      }
    } else {
      // Every send and receive of the run progresses together (chorus.h, groupStart()).
      groupStart();
      for (auto& task : batch) {
        try {
          task.run();
        } catch (...) {
          if (!error) error = std::current_exception();
        }
      }
      try {
        groupEnd();
      } catch (...) {
        if (!error) error = std::current_exception();
      }
    }
    for (auto& task : batch)
      task.settle(error);
    const auto count = batch.size();
    batch.clear();  // drop the closures (and what they own) before anyone sees them settled

    lock.lock();
    running = false;
    settledBelow += count;
    if (waiters > 0) settled.notify_all();
  }

  bool waitFor(Ticket ticket, std::unique_lock<std::mutex>& lock,
               std::optional<Clock::time_point> deadline) {
    release(ticket);
    if (deadline) workerWake.notify_one();  // the worker runs what was released
    ++waiters;
    while (settledBelow <= ticket) {
      // A waiter with a deadline never runs a task itself: it could not return in time.
      if (!deadline && headRunnable()) {
        runBatch(lock);
        continue;
      }
      if (!deadline) {
        settled.wait(lock);
      } else if (settled.wait_until(lock, *deadline) == std::cv_status::timeout) {
        break;
      }
    }
    --waiters;
    return settledBelow > ticket;
  }

  // The worker runs what nobody waits for: it is woken for explicitly asynchronous use (poll, a
  // future, a timed wait) and otherwise looks every kPollInterval while calls keep coming, so a
  // synchronous call (submit, then wait at once) runs on the caller's thread and never pays for
  // waking it. After kIdleBeforeSleep without a submission it sleeps until woken.
  void workerLoop() {
    std::unique_lock lock(mutex);
    while (!stopping) {
      if (headRunnable()) {
        runBatch(lock);
        continue;
      }
      if (Clock::now() - lastSubmit > kIdleBeforeSleep) {
        workerAsleep = true;
        workerWake.wait(lock);
        workerAsleep = false;
      } else {
        workerWake.wait_for(lock, kPollInterval);
      }
    }
  }
};

OrderedExecutor::OrderedExecutor() : state_(std::make_shared<State>()) {
  // The worker holds its own reference to the state and exits when told to stop.
  std::thread([state = state_] { state->workerLoop(); }).detach();
}

OrderedExecutor::~OrderedExecutor() {
  drain();
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
  }
  state_->workerWake.notify_all();
}

OrderedExecutor::Ticket OrderedExecutor::submit(Task task) {
  Ticket ticket = 0;
  {
    std::lock_guard lock(state_->mutex);
    ticket = state_->nextTicket++;
    // A collective runs after every earlier task, so it releases deferred point-to-point ones.
    if (task.kind == Kind::collective) state_->release(ticket);
    state_->queue.push_back(State::Entry{ticket, std::move(task)});
    state_->lastSubmit = State::Clock::now();
    if (state_->workerAsleep) state_->workerWake.notify_one();
  }
  return ticket;
}

bool OrderedExecutor::wait(Ticket ticket, std::optional<std::chrono::milliseconds> timeout) {
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (timeout) deadline = std::chrono::steady_clock::now() + *timeout;
  std::unique_lock lock(state_->mutex);
  return state_->waitFor(ticket, lock, deadline);
}

bool OrderedExecutor::poll(Ticket ticket) {
  bool settled = false;
  {
    std::lock_guard lock(state_->mutex);
    state_->release(ticket);
    settled = state_->settledBelow > ticket;
  }
  if (!settled) state_->workerWake.notify_one();
  return settled;
}

void OrderedExecutor::drain() {
  std::unique_lock lock(state_->mutex);
  if (state_->nextTicket == 0) return;
  state_->waitFor(state_->nextTicket - 1, lock, std::nullopt);
}

}  // namespace chorus::api
