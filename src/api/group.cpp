// groupStart()/groupEnd(): a thread-local queue of checked calls, run at the outermost
// groupEnd(). Communicators of one group run concurrently (one thread each; the calling thread
// takes the first); each runs its own calls in issue order, with consecutive send/recv calls
// progressing together in one batch.
#include "api/group.h"

#include <algorithm>
#include <exception>
#include <thread>
#include <vector>

#include "support/error.h"

namespace chorus {

namespace api {

namespace {

struct QueuedCall {
  Communicator::Impl* comm = nullptr;
  std::variant<PreparedCollective, P2pCall> call;
};

// Plain ints so that a communicator destroyed during static destruction can still ask.
thread_local int groupDepth = 0;
thread_local FailureOrigin lastFailure = FailureOrigin::none;
thread_local std::vector<QueuedCall> groupQueue;

// Runs one communicator's calls in order; stops at its first failure.
void runCalls(Communicator::Impl& comm, const std::vector<const QueuedCall*>& calls) {
  std::vector<P2pCall> batch;
  auto flush = [&] {
    if (batch.empty()) return;
    comm.runP2p(batch);
    batch.clear();
  };
  for (const QueuedCall* queued : calls) {
    if (const auto* p2p = std::get_if<P2pCall>(&queued->call)) {
      batch.push_back(*p2p);
      continue;
    }
    flush();
    comm.run(std::get<PreparedCollective>(queued->call));
  }
  flush();
}

// Runs `calls` on `comm`; on failure records it so the peers' waits end, and returns the error.
std::exception_ptr runGuarded(Communicator::Impl& comm,
                              const std::vector<const QueuedCall*>& calls) {
  try {
    runCalls(comm, calls);
    return nullptr;
  } catch (const std::exception& e) {
    comm.recordFailure(e);
    return std::current_exception();
  } catch (...) {
    comm.recordFailure(InternalError("unknown exception in a group call"));
    return std::current_exception();
  }
}

void runQueue(std::vector<QueuedCall> queue) {
  // Per communicator, in order of first appearance, its calls in issue order.
  std::vector<Communicator::Impl*> comms;
  std::vector<std::vector<const QueuedCall*>> calls;
  for (const auto& queued : queue) {
    auto at = std::find(comms.begin(), comms.end(), queued.comm);
    if (at == comms.end()) {
      comms.push_back(queued.comm);
      calls.emplace_back();
      at = comms.end() - 1;
    }
    calls[static_cast<std::size_t>(at - comms.begin())].push_back(&queued);
  }
  std::vector<std::exception_ptr> errors(comms.size());
  {
    std::vector<std::jthread> threads;
    for (std::size_t i = 1; i < comms.size(); ++i)
      threads.emplace_back([&, i] { errors[i] = runGuarded(*comms[i], calls[i]); });
    if (!comms.empty()) errors[0] = runGuarded(*comms[0], calls[0]);
  }
  // Report the root cause first: an error a rank hit itself before the aborts it caused.
  std::exception_ptr first;
  FailureOrigin origin = FailureOrigin::none;
  for (std::size_t i = 0; i < errors.size(); ++i) {
    if (!errors[i]) continue;
    const FailureOrigin o = comms[i]->failureOrigin();
    if (!first || (origin == FailureOrigin::remote && o != FailureOrigin::remote)) {
      first = errors[i];
      origin = o;
    }
  }
  lastFailure = origin;
  if (first) std::rethrow_exception(first);
}

}  // namespace

bool groupActive() {
  return groupDepth > 0;
}

void enqueueCall(Communicator::Impl* comm, std::variant<PreparedCollective, P2pCall> call) {
  CHORUS_INTERNAL_ASSERT(groupDepth > 0, "enqueueCall outside a group");
  groupQueue.push_back({comm, std::move(call)});
}

void forgetQueuedCalls(const Communicator::Impl* comm) {
  if (groupDepth == 0) return;  // nothing queued
  std::erase_if(groupQueue, [&](const QueuedCall& q) { return q.comm == comm; });
}

GroupScope::GroupScope() : depth_(groupDepth), queued_(groupQueue.size()) {
  groupStart();
}

GroupScope::~GroupScope() {
  if (ended_) return;
  groupQueue.erase(groupQueue.begin() + static_cast<std::ptrdiff_t>(queued_), groupQueue.end());
  groupDepth = depth_;
}

void GroupScope::end() {
  ended_ = true;
  groupEnd();
}

FailureOrigin lastGroupFailureOrigin() {
  return lastFailure;
}

}  // namespace api

void groupStart() {
  ++api::groupDepth;
}

void groupEnd() {
  if (api::groupDepth == 0)
    throw OptionError(
        "groupEnd() without a matching groupStart() on this thread; call groupStart() first");
  if (--api::groupDepth > 0) return;
  api::lastFailure = api::FailureOrigin::none;
  std::vector<api::QueuedCall> queue;
  queue.swap(api::groupQueue);
  api::runQueue(std::move(queue));
}

}  // namespace chorus
