#include "cuda/call_watcher.h"

#include <fmt/format.h>

#include "cuda/cuda_memory.h"
#include "support/error.h"

namespace chorus::cuda {

namespace {

// How often a waiter polls its calls and the connections (docs/gpu.md: the host's share of a
// small call's latency).
constexpr auto kPollInterval = std::chrono::microseconds(20);

}  // namespace

CallWatcher::CallWatcher(int device, int rank, transport::ConnectionSet& connections)
    : device_(device), rank_(rank), connections_(connections) {
  check(cudaStreamCreateWithFlags(&abortStream_, cudaStreamNonBlocking), "cudaStreamCreate");
  thread_ = std::thread([this] { watch(); });
}

CallWatcher::~CallWatcher() {
  try {
    waitAll();
  } catch (...) {
    // A broken CUDA context: nothing more can be learned from the calls.
  }
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  for (const Call& call : calls_)
    cudaEventDestroy(call.done);
  for (cudaEvent_t event : freeEvents_)
    cudaEventDestroy(event);
  cudaStreamDestroy(abortStream_);
}

std::uint64_t CallWatcher::add(cudaStream_t stream, cudaStream_t waiter, std::uint32_t* abortWord,
                               Check check, bool willWait) {
  std::uint64_t ticket = 0;
  {
    std::lock_guard lock(mutex_);
    cudaEvent_t done = nullptr;
    if (freeEvents_.empty()) {
      cuda::check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
    } else {
      done = freeEvents_.back();
      freeEvents_.pop_back();
    }
    const cudaError_t recorded = cudaEventRecord(done, stream);
    if (recorded != cudaSuccess) freeEvents_.push_back(done);
    cuda::check(recorded, "cudaEventRecord after a call");
    if (waiter != nullptr) cuda::check(cudaStreamWaitEvent(waiter, done, 0), "cudaStreamWaitEvent");
    ticket = nextTicket_++;
    calls_.push_back({ticket, done, abortWord, std::move(check), willWait});
    if (!stopReason_.empty()) raiseAbortLocked(calls_.back());
  }
  wake_.notify_all();
  return ticket;
}

void CallWatcher::raiseAbortLocked(const Call& call) {
  // Best effort: a context too broken for this memset also ends the blocks.
  if (cudaMemsetAsync(call.abortWord, 1, 1, abortStream_) != cudaSuccess) cudaGetLastError();
}

void CallWatcher::pollLocked() {
  while (!calls_.empty()) {
    Call& call = calls_.front();
    const cudaError_t state = cudaEventQuery(call.done);
    if (state == cudaErrorNotReady) break;
    std::exception_ptr failure;
    if (state != cudaSuccess) {
      failure = std::make_exception_ptr(CommError(fmt::format(
          "rank {}: CUDA reported {} ({}) for a call's kernel on GPU {}; the GPU context is "
          "unusable: destroy the communicator",
          rank_, cudaGetErrorString(state), cudaGetErrorName(state), device_)));
    } else {
      failure = call.check(stopReason_);
    }
    if (call.willWait) {
      results_[call.ticket] = failure;
    } else if (failure && asyncError_.empty()) {
      try {
        std::rethrow_exception(failure);
      } catch (const std::exception& error) {
        asyncError_ = error.what();
      }
      connections_.abort(fmt::format("rank {} failed: {}", rank_, asyncError_));
    }
    freeEvents_.push_back(call.done);
    calls_.pop_front();
  }
  if (calls_.empty() || !stopReason_.empty()) return;
  stopReason_ = connections_.abortReason();
  if (stopReason_.empty()) return;
  for (const Call& call : calls_)
    raiseAbortLocked(call);
}

template <class Finished>
void CallWatcher::pollUntil(Finished finished) {
  std::unique_lock lock(mutex_);
  ++waiters_;
  struct Leave {
    CallWatcher& watcher;
    ~Leave() {
      --watcher.waiters_;
      watcher.wake_.notify_all();
    }
  } leave{*this};
  for (;;) {
    pollLocked();
    if (finished()) return;
    lock.unlock();
    std::this_thread::sleep_for(kPollInterval);
    lock.lock();
  }
}

void CallWatcher::wait(std::uint64_t ticket) {
  std::exception_ptr failure;
  pollUntil([&] {
    const auto it = results_.find(ticket);
    if (it == results_.end()) return false;
    failure = it->second;
    results_.erase(it);
    return true;
  });
  if (failure) std::rethrow_exception(failure);
}

void CallWatcher::waitAll() {
  pollUntil([&] { return calls_.empty(); });
}

std::string CallWatcher::asyncError() const {
  std::lock_guard lock(mutex_);
  return asyncError_;
}

void CallWatcher::watch() {
  if (cudaSetDevice(device_) != cudaSuccess) cudaGetLastError();
  std::unique_lock lock(mutex_);
  while (!stop_) {
    if (calls_.empty() || waiters_ > 0) {
      wake_.wait(lock);
      continue;
    }
    pollLocked();
    lock.unlock();
    std::this_thread::sleep_for(kPollInterval);
    lock.lock();
  }
}

}  // namespace chorus::cuda
