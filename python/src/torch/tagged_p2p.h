// TaggedP2p: torch.distributed's point-to-point semantics (send/recv/isend/irecv with tags) over
// a chorus communicator of its own, as gloo provides them:
// - a message matches the first receive posted for its source and tag (messages of one source
//   and tag match in the order they were sent, whatever the order of the tags);
// - a send starts when it is made and completes without its caller: one progress thread per
//   group moves every send and receive, so a rank that isends and then blocks elsewhere (on the
//   store, on another group) still delivers, and isend/irecv pairs never deadlock;
// - a message that arrives before its receive is held in memory until the receive is posted.
// Wire format per direction of a pair (the FIFO of channel 0 of the communicator): a message is a
// first slot with a 24-byte header (magic, tag, byte count) and the first bytes of the payload,
// then full slots of payload.
// Failures: the group failing (a dead peer, an abort), a peer that left with messages owed, or
// an operation outliving the communicator's timeout fail the operations concerned with a
// RuntimeError naming the call, this rank and the cause; a receive whose size differs from the
// message fails alone (the message is dropped) and the group stays usable.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "chorus/chorus.h"

namespace chorus::transport {
class ConnectionSet;
}

namespace chorus::torch_backend {

class TaggedP2p {
 public:
  using Clock = std::chrono::steady_clock;

  // Takes `comm` (a communicator made for point-to-point only: its connections are used by this
  // object's thread alone). `groupFailure()` returns why the rest of the group failed ("" while
  // healthy); `onFailure(message)` is told when this object fails the group (a timeout).
  TaggedP2p(Communicator comm, std::function<std::string()> groupFailure,
            std::function<void(const std::string&)> onFailure);
  // Fails whatever is still pending ("the group was shut down") and stops the thread.
  ~TaggedP2p();
  TaggedP2p(const TaggedP2p&) = delete;
  TaggedP2p& operator=(const TaggedP2p&) = delete;

  // `data` (contiguous, on the CPU) must stay unchanged until the Work completes; `result` is the
  // Work's result(). The peer is a rank of the group other than this one or this one.
  c10::intrusive_ptr<c10d::Work> send(int peer, int tag, at::Tensor data, at::Tensor result);
  // Receives into `into` (contiguous); `onDone` runs on success before the Work completes (it
  // copies a staged result into the caller's tensor).
  c10::intrusive_ptr<c10d::Work> recv(int peer, int tag, at::Tensor into, at::Tensor result,
                                      std::function<void()> onDone);

  // Fails every pending operation with `reason` and stops the thread; later calls raise it.
  void shutdown(const std::string& reason);

 private:
  struct Operation;
  struct Incoming;
  struct Lanes;

  void start();
  void loop();
  // One pass over every lane; returns whether anything moved. Called with mutex_ held.
  bool progress(std::vector<std::shared_ptr<Operation>>& done);
  bool progressSend(int peer, std::vector<std::shared_ptr<Operation>>& done);
  bool progressRecv(int peer, std::vector<std::shared_ptr<Operation>>& done);
  // Checks failures, departed peers and deadlines; fails what they doom. mutex_ held.
  void checkHealth(std::vector<std::shared_ptr<Operation>>& done, bool& departureSeen);
  void failAll(const std::string& reason, std::vector<std::shared_ptr<Operation>>& done);
  // Gives a complete message to a posted receive (or fails it for a size mismatch).
  void deliver(Incoming& message, Operation& receive);
  std::shared_ptr<Operation> takePostedRecv(int peer, std::int64_t tag);
  static void complete(const std::vector<std::shared_ptr<Operation>>& done);

  Communicator comm_;
  transport::ConnectionSet& connections_;
  const int rank_;
  const int size_;
  const std::chrono::milliseconds timeout_;
  std::function<std::string()> groupFailure_;
  std::function<void(const std::string&)> onFailure_;

  std::mutex mutex_;
  std::condition_variable posted_;
  std::unique_ptr<Lanes> lanes_;
  std::string failure_;  // once set, every call fails with it
  bool stopping_ = false;
  Clock::time_point lastActivity_;
  std::thread thread_;
};

}  // namespace chorus::torch_backend
