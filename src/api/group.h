// NCCL-style groups (api layer): while the calling thread is inside groupStart()/groupEnd(),
// calls are queued here instead of run; the outermost groupEnd() runs the queue.
#pragma once

#include <cstddef>
#include <variant>

#include "api/communicator_impl.h"

namespace chorus::api {

// True while the calling thread is inside a group.
bool groupActive();
// Appends a checked call of `comm` to the calling thread's group (precondition: groupActive()).
void enqueueCall(Communicator::Impl* comm, std::variant<PreparedCollective, P2pCall> call);
// Drops `comm`'s queued calls from the calling thread's group (the communicator is going away).
void forgetQueuedCalls(const Communicator::Impl* comm);

// A group for code that may throw between its start and its end (the torch backend). end()
// ends it as groupEnd() does. Leaving the scope without end(), by an exception, drops the calls
// queued since it began and restores the thread's group depth, so the thread is as it was before;
// bare groupStart()/groupEnd() would leave the depth raised and every later call queued forever.
class GroupScope {
 public:
  GroupScope();
  ~GroupScope();
  GroupScope(const GroupScope&) = delete;
  GroupScope& operator=(const GroupScope&) = delete;
  // Runs the group (throws what groupEnd() throws).
  void end();

 private:
  int depth_;
  std::size_t queued_;
  bool ended_ = false;
};

// Who caused the failure thrown by the calling thread's last groupEnd(), for the C ABI.
FailureOrigin lastGroupFailureOrigin();

}  // namespace chorus::api
