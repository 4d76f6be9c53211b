// OrderedExecutor (api layer): runs one communicator's calls asynchronously and strictly in the
// order they were submitted, on a worker thread of its own or on a thread that waits for them.
// The torch backend (python/) queues every collective of a group here.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>

namespace chorus::api {

// Contract:
// - Tasks run one at a time, in submission order, each exactly once; its `settle` is called
//   right after it ran, with the exception it threw (or null), before the next task starts.
// - A collective task may start as soon as it reaches the head of the queue: on a thread that
//   waits for it or a later task (wait() without a timeout runs queued tasks on the caller's
//   thread when no other thread is running one, so a synchronous call costs no thread hand-off),
//   else on the worker thread, which is woken by poll(), a timed wait() or drain(), and otherwise
//   finds it within a millisecond.
// - Point-to-point tasks are deferred: a run of consecutive ones at the head starts only once
//   something needs it (a wait or poll on one of them or on a later task, a later collective, or
//   drain). The whole run then executes inside one chorus::groupStart()/groupEnd(), so an
//   isend/irecv pair that both ranks issue in the same order cannot deadlock, whatever the size.
// Thread-safe: submit, wait, poll and drain may be called from any thread but not from inside a
// task; the worker thread keeps the shared state alive, so destruction never joins it.
class OrderedExecutor {
 public:
  enum class Kind { collective, pointToPoint };
  struct Task {
    Kind kind = Kind::collective;
    // Issues the call (inside a group for point-to-point tasks); throws what the call throws.
    std::function<void()> run;
    // Called once with run's error (or, for a point-to-point run, the group's); must not throw.
    std::function<void(std::exception_ptr)> settle;
  };
  using Ticket = std::uint64_t;

  OrderedExecutor();
  // Drains, then stops the worker.
  ~OrderedExecutor();
  OrderedExecutor(const OrderedExecutor&) = delete;
  OrderedExecutor& operator=(const OrderedExecutor&) = delete;

  Ticket submit(Task task);
  // Blocks until task `ticket` has settled, running queued tasks on this thread when it may.
  // Returns false if `timeout` passed first (the task then still runs later).
  bool wait(Ticket ticket, std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // True once task `ticket` has settled. Otherwise releases deferred point-to-point tasks up to
  // it and wakes the worker to run them (an asynchronous caller's way to start its call).
  bool poll(Ticket ticket);
  // Runs every queued task (point-to-point ones included) and returns once all have settled.
  void drain();

 private:
  struct State;  // shared with the worker thread, which may outlive this object by one batch
  std::shared_ptr<State> state_;
};

}  // namespace chorus::api
