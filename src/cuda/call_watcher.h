// The calls a CUDA executor has launched and not yet seen finish (cuda layer). Each call is an
// event recorded after its work on the executor's stream. Whoever waits (the caller of a call
// without a stream, or the watcher's own thread for calls queued on a caller's stream) polls
// the events in order and the communicator's connections: a failure the transport reports (a
// peer process that exited, chorusCommAbort) raises the abort word of every call still
// running, so its blocks end at once instead of at their timeout, as NCCL's proxy thread
// does. A queued call's failure becomes the communicator's asynchronous error and aborts the
// group, so every rank learns of it. docs/gpu.md "Streams".
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>

#include "transport/connections.h"

namespace chorus::cuda {

class CallWatcher {
 public:
  // A finished call's failure, or null. `stopReason`: the transport failure for which the
  // watcher raised the call's abort word ("" if it did not). Called under the watcher's lock,
  // on the thread that polls.
  using Check = std::function<std::exception_ptr(std::string_view stopReason)>;

  // Watches calls on GPU `device` for `rank` of the group behind `connections` (which must
  // outlive the watcher).
  CallWatcher(int device, int rank, transport::ConnectionSet& connections);
  // Waits for every call (aborting them if the group fails meanwhile), then stops the thread.
  ~CallWatcher();
  CallWatcher(const CallWatcher&) = delete;
  CallWatcher& operator=(const CallWatcher&) = delete;

  // Records that a call's work was enqueued on `stream`; `waiter` (may be null) then waits for
  // it too. Raising `abortWord` (device memory) stops the call's blocks. With `willWait`, the
  // caller takes the call's failure from wait(); otherwise it is the asynchronous error.
  std::uint64_t add(cudaStream_t stream, cudaStream_t waiter, std::uint32_t* abortWord, Check check,
                    bool willWait);
  // Waits until call `ticket` (added with willWait) has finished; rethrows its failure.
  void wait(std::uint64_t ticket);
  // Waits until every call added so far has finished.
  void waitAll();
  // The first failure of a call nobody waited for; "" while there is none.
  std::string asyncError() const;

 private:
  struct Call {
    std::uint64_t ticket = 0;
    cudaEvent_t done = nullptr;
    std::uint32_t* abortWord = nullptr;
    Check check;
    bool willWait = false;
  };
  // Settles the finished calls in order, then raises the abort words of the rest if the
  // connections report a failure. Under mutex_.
  void pollLocked();
  // Polls until `finished()` holds (under mutex_), as a waiting caller.
  template <class Finished>
  void pollUntil(Finished finished);
  void raiseAbortLocked(const Call& call);
  void watch();

  const int device_;
  const int rank_;
  transport::ConnectionSet& connections_;
  cudaStream_t abortStream_ = nullptr;

  mutable std::mutex mutex_;
  std::condition_variable wake_;  // a call was added, a waiter left, or stop
  std::deque<Call> calls_;
  std::vector<cudaEvent_t> freeEvents_;
  std::map<std::uint64_t, std::exception_ptr> results_;  // finished calls with willWait
  std::uint64_t nextTicket_ = 1;
  std::string asyncError_;
  std::string stopReason_;
  int waiters_ = 0;  // callers polling themselves: the thread leaves the polling to them
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace chorus::cuda
