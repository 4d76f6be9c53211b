// NCCL-style groups (api layer): while the calling thread is inside groupStart()/groupEnd(),
// calls are queued here instead of run; the outermost groupEnd() runs the queue.
#pragma once

#include <variant>

#include "api/communicator_impl.h"

namespace chorus::api {

// True while the calling thread is inside a group.
bool groupActive();
// Appends a checked call of `comm` to the calling thread's group (precondition: groupActive()).
void enqueueCall(Communicator::Impl* comm, std::variant<PreparedCollective, P2pCall> call);
// Drops `comm`'s queued calls from the calling thread's group (the communicator is going away).
void forgetQueuedCalls(const Communicator::Impl* comm);

// Who caused the failure thrown by the calling thread's last groupEnd(), for the C ABI.
FailureOrigin lastGroupFailureOrigin();

}  // namespace chorus::api
