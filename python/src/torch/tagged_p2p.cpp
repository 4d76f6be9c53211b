// TaggedP2p: per peer a send lane (messages in posting order) and a receive lane (the message
// arriving now, posted receives, messages that arrived before their receive), all moved by one
// thread through the non-blocking FIFOs of a communicator of its own.
#include "torch/tagged_p2p.h"

#include <algorithm>
#include <cstring>
#include <list>
#include <optional>

#include <ATen/core/ivalue.h>
#include <fmt/format.h>
#include <pybind11/pybind11.h>

#include "api/communicator_impl.h"
#include "transport/connections.h"
#include "transport/fifo.h"

namespace chorus::torch_backend {

namespace {

constexpr std::uint32_t kMagic = 0x50'54'43'48;               // "HCTP"
constexpr std::uint64_t kSlotTag = 0x7461'6767'6564'7032ull;  // every slot of this protocol
constexpr std::size_t kHeaderBytes = 24;
// Idle passes of the thread before it sleeps between looks (a message may still arrive).
constexpr auto kSpinFor = std::chrono::milliseconds(20);
constexpr auto kIdleSleep = std::chrono::microseconds(500);
constexpr auto kHealthInterval = std::chrono::milliseconds(2);

struct WireHeader {
  std::uint32_t magic = kMagic;
  std::uint32_t reserved = 0;
  std::int64_t tag = 0;
  std::uint64_t bytes = 0;
};
static_assert(sizeof(WireHeader) == kHeaderBytes);

const c10::TypePtr& tensorListType() {
  static const c10::TypePtr type = c10::ListType::create(c10::TensorType::get());
  return type;
}

// The Work of one send or receive: completed by the progress thread.
class P2pWork : public c10d::Work {
 public:
  P2pWork(int rank, c10d::OpType opType, at::Tensor result)
      : Work(rank, opType),
        result_(std::move(result)),
        future_(c10::make_intrusive<c10::ivalue::Future>(tensorListType())) {}

  bool isCompleted() override {
    std::lock_guard lock(mutex_);
    return completed_;
  }

  bool wait(std::chrono::milliseconds timeout) override {
    // Never make the progress thread's completions (futures with Python callbacks) wait for
    // the GIL this thread holds.
    std::optional<pybind11::gil_scoped_release> release;
    if (Py_IsInitialized() != 0 && PyGILState_Check() != 0) release.emplace();
    std::unique_lock lock(mutex_);
    const auto done = [&] { return completed_; };
    if (timeout == kNoTimeout) {
      cv_.wait(lock, done);
    } else if (!cv_.wait_for(lock, timeout, done)) {
      lock.unlock();
      release.reset();
      TORCH_CHECK(false, "chorus: ", opType_ == c10d::OpType::SEND ? "send" : "recv",
                  " did not complete within ", timeout.count(),
                  " ms (the timeout given to wait()); it is still pending");
    }
    const std::exception_ptr error = exception_;
    lock.unlock();
    release.reset();
    if (error) std::rethrow_exception(error);
    return true;
  }

  void synchronize() override {}
  std::vector<at::Tensor> result() override { return {result_}; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

  void settle(std::exception_ptr error) {
    finish(error);
    if (error)
      future_->setError(error);
    else
      future_->markCompleted(c10::IValue(std::vector<at::Tensor>{result_}));
  }

 private:
  at::Tensor result_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace

struct TaggedP2p::Operation {
  bool isSend = true;
  int peer = 0;
  std::int64_t tag = 0;
  at::Tensor data;  // the send's input or the receive's destination (contiguous)
  std::size_t bytes = 0;
  std::size_t moved = 0;  // payload bytes sent so far (sends)
  Clock::time_point deadline;
  std::function<void()> onDone;
  c10::intrusive_ptr<P2pWork> work;
  std::exception_ptr error;

  std::string describe(int rank) const {
    return fmt::format("{} {} rank {} with tag {} ({} bytes) on rank {}", isSend ? "send" : "recv",
                       isSend ? "to" : "from", peer, tag, bytes, rank);
  }
};

// A message being received, or received before its receive was posted.
struct TaggedP2p::Incoming {
  std::int64_t tag = 0;
  std::size_t bytes = 0;
  std::size_t received = 0;
  std::shared_ptr<Operation> receive;  // where it lands; null: into `held`
  std::vector<std::uint8_t> held;
  bool discard = false;  // its receive failed for a size mismatch
  bool complete() const { return received == bytes; }
};

struct TaggedP2p::Lanes {
  struct Peer {
    std::deque<std::shared_ptr<Operation>> sends;
    std::list<std::shared_ptr<Operation>> receives;  // posted, in posting order
    std::unique_ptr<Incoming> arriving;              // whose header has been read
    std::list<Incoming> unexpected;                  // complete, in arrival order
  };
  std::vector<Peer> peers;
};

TaggedP2p::TaggedP2p(Communicator comm, std::function<std::string()> groupFailure,
                     std::function<void(const std::string&)> onFailure)
    : comm_(std::move(comm)),
      connections_(Communicator::Impl::of(comm_).connections()),
      rank_(comm_.rank()),
      size_(comm_.size()),
      timeout_(Communicator::Impl::of(comm_).config().timeout),
      groupFailure_(std::move(groupFailure)),
      onFailure_(std::move(onFailure)),
      lanes_(std::make_unique<Lanes>()) {
  lanes_->peers.resize(static_cast<std::size_t>(size_));
}

TaggedP2p::~TaggedP2p() {
  shutdown("the group was shut down (destroy_process_group) before the call completed");
}

void TaggedP2p::shutdown(const std::string& reason) {
  std::vector<std::shared_ptr<Operation>> done;
  {
    std::lock_guard lock(mutex_);
    if (failure_.empty()) failure_ = reason;
    failAll(failure_, done);
    stopping_ = true;
  }
  posted_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  complete(done);
}

c10::intrusive_ptr<c10d::Work> TaggedP2p::send(int peer, int tag, at::Tensor data,
                                               at::Tensor result) {
  auto op = std::make_shared<Operation>();
  op->isSend = true;
  op->peer = peer;
  op->tag = tag;
  op->bytes = static_cast<std::size_t>(data.numel()) * data.element_size();
  op->data = std::move(data);
  op->work = c10::make_intrusive<P2pWork>(rank_, c10d::OpType::SEND, std::move(result));
  auto work = op->work;
  std::vector<std::shared_ptr<Operation>> done;
  {
    std::lock_guard lock(mutex_);
    TORCH_CHECK(failure_.empty(), "chorus: send to rank ", peer, " failed on rank ", rank_, ": ",
                failure_);
    op->deadline = Clock::now() + timeout_;
    if (peer == rank_) {
      // To itself: the message is there at once (a copy, so the send completes now).
      Incoming message;
      message.tag = tag;
      message.bytes = message.received = op->bytes;
      const auto* bytes = static_cast<const std::uint8_t*>(op->data.data_ptr());
      if (op->bytes > 0) message.held.assign(bytes, bytes + op->bytes);
      if (auto receive = takePostedRecv(peer, tag)) {
        deliver(message, *receive);
        done.push_back(receive);
      } else {
        lanes_->peers[static_cast<std::size_t>(peer)].unexpected.push_back(std::move(message));
      }
      done.push_back(op);
    } else {
      lanes_->peers[static_cast<std::size_t>(peer)].sends.push_back(op);
      start();
    }
  }
  posted_.notify_all();
  complete(done);
  return work;
}

c10::intrusive_ptr<c10d::Work> TaggedP2p::recv(int peer, int tag, at::Tensor into,
                                               at::Tensor result, std::function<void()> onDone) {
  auto op = std::make_shared<Operation>();
  op->isSend = false;
  op->peer = peer;
  op->tag = tag;
  op->bytes = static_cast<std::size_t>(into.numel()) * into.element_size();
  op->data = std::move(into);
  op->onDone = std::move(onDone);
  op->work = c10::make_intrusive<P2pWork>(rank_, c10d::OpType::RECV, std::move(result));
  auto work = op->work;
  std::vector<std::shared_ptr<Operation>> done;
  {
    std::lock_guard lock(mutex_);
    TORCH_CHECK(failure_.empty(), "chorus: recv from rank ", peer, " failed on rank ", rank_, ": ",
                failure_);
    op->deadline = Clock::now() + timeout_;
    auto& lane = lanes_->peers[static_cast<std::size_t>(peer)];
    const auto held = std::find_if(lane.unexpected.begin(), lane.unexpected.end(),
                                   [&](const Incoming& m) { return m.tag == tag; });
    if (held != lane.unexpected.end()) {
      deliver(*held, *op);
      lane.unexpected.erase(held);
      done.push_back(op);
    } else {
      lane.receives.push_back(op);
      if (peer != rank_) start();
    }
  }
  posted_.notify_all();
  complete(done);
  return work;
}

void TaggedP2p::start() {
  lastActivity_ = Clock::now();
  if (!thread_.joinable() && !stopping_) thread_ = std::thread([this] { loop(); });
}

std::shared_ptr<TaggedP2p::Operation> TaggedP2p::takePostedRecv(int peer, std::int64_t tag) {
  auto& receives = lanes_->peers[static_cast<std::size_t>(peer)].receives;
  const auto at = std::find_if(receives.begin(), receives.end(),
                               [&](const auto& op) { return op->tag == tag; });
  if (at == receives.end()) return nullptr;
  auto op = *at;
  receives.erase(at);
  return op;
}

void TaggedP2p::deliver(Incoming& message, Operation& receive) {
  if (message.bytes != receive.bytes) {
    receive.error = std::make_exception_ptr(std::runtime_error(fmt::format(
        "chorus: recv failed on rank {}: the recv from rank {} with tag {} takes {} bytes, but "
        "rank {} sent {} bytes with that tag; the message is dropped (sizes must match)",
        rank_, receive.peer, receive.tag, receive.bytes, receive.peer, message.bytes)));
    return;
  }
  if (message.receive.get() != &receive && message.bytes > 0)
    std::memcpy(receive.data.data_ptr(), message.held.data(), message.bytes);
}

void TaggedP2p::loop() {
  std::unique_lock lock(mutex_);
  auto nextHealthCheck = Clock::now();
  bool departureSeen = false;
  while (!stopping_) {
    std::vector<std::shared_ptr<Operation>> done;
    const bool moved = progress(done);
    const auto now = Clock::now();
    if (moved) {
      lastActivity_ = now;
      departureSeen = false;
    }
    if (now >= nextHealthCheck) {
      checkHealth(done, departureSeen);
      nextHealthCheck = now + kHealthInterval;
    }
    if (!done.empty()) {
      lock.unlock();
      complete(done);
      lock.lock();
      continue;
    }
    if (moved) continue;
    // Nothing moved: spin (yielding) for a while after activity, then look every kIdleSleep, and
    // wake at once for a new operation.
    if (now - lastActivity_ < kSpinFor) {
      lock.unlock();
      std::this_thread::yield();
      lock.lock();
    } else {
      posted_.wait_for(lock, kIdleSleep);
    }
  }
}

bool TaggedP2p::progress(std::vector<std::shared_ptr<Operation>>& done) {
  if (!failure_.empty()) return false;
  bool moved = false;
  try {
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      moved |= progressSend(peer, done);
      moved |= progressRecv(peer, done);
    }
  } catch (const std::exception& e) {
    // The connections failed (a dead peer's memory, a broken socket): the group has failed.
    failure_ = e.what();
    failAll(failure_, done);
  }
  return moved;
}

bool TaggedP2p::progressSend(int peer, std::vector<std::shared_ptr<Operation>>& done) {
  auto& sends = lanes_->peers[static_cast<std::size_t>(peer)].sends;
  if (sends.empty()) return false;
  transport::Fifo& fifo = connections_.sendFifo(peer, 0);
  bool moved = false;
  while (!sends.empty()) {
    Operation& op = *sends.front();
    std::uint8_t* slot = fifo.trySendSlot();
    if (slot == nullptr) break;
    const auto* payload = static_cast<const std::uint8_t*>(op.data.data_ptr());
    std::size_t used = 0;
    if (op.moved == 0) {  // the first slot carries the header
      WireHeader header;
      header.tag = op.tag;
      header.bytes = op.bytes;
      std::memcpy(slot, &header, kHeaderBytes);
      used = kHeaderBytes;
    }
    const std::size_t chunk = std::min(fifo.slotBytes() - used, op.bytes - op.moved);
    if (chunk > 0) std::memcpy(slot + used, payload + op.moved, chunk);
    fifo.commitSend(used + chunk, kSlotTag);
    op.moved += chunk;
    moved = true;
    if (op.moved == op.bytes) {
      done.push_back(sends.front());
      sends.pop_front();
    }
  }
  return moved;
}

bool TaggedP2p::progressRecv(int peer, std::vector<std::shared_ptr<Operation>>& done) {
  auto& lane = lanes_->peers[static_cast<std::size_t>(peer)];
  // Only lanes with a receive posted or a message arriving are read: a FIFO is set up on first
  // use, and a sender whose receiver has posted nothing yet waits once the FIFO is full.
  if (lane.receives.empty() && !lane.arriving) return false;
  transport::Fifo& fifo = connections_.recvFifo(peer, 0);
  bool moved = false;
  transport::RecvSlot slot;
  while (fifo.tryRecvSlot(&slot)) {
    moved = true;
    const std::uint8_t* bytes = slot.data;
    std::size_t available = slot.bytes;
    if (!lane.arriving) {
      WireHeader header;
      if (slot.tag != kSlotTag || available < kHeaderBytes ||
          (std::memcpy(&header, bytes, kHeaderBytes), header.magic != kMagic)) {
        fifo.releaseRecv();
        throw CommError(fmt::format(
            "rank {}: point-to-point: rank {} sent a slot that is not a message header (the two "
            "ranks run different chorus builds, or the connection is corrupt)",
            rank_, peer));
      }
      auto message = std::make_unique<Incoming>();
      message->tag = header.tag;
      message->bytes = header.bytes;
      message->receive = takePostedRecv(peer, header.tag);
      if (message->receive && message->receive->bytes != message->bytes) {
        deliver(*message, *message->receive);  // fails it for the size
        done.push_back(message->receive);
        message->receive = nullptr;
        message->discard = true;
      } else if (!message->receive) {
        message->held.resize(message->bytes);
      }
      lane.arriving = std::move(message);
      bytes += kHeaderBytes;
      available -= kHeaderBytes;
    }
    Incoming& message = *lane.arriving;
    const std::size_t chunk = std::min(available, message.bytes - message.received);
    if (chunk > 0 && !message.discard) {
      auto* into = message.receive ? static_cast<std::uint8_t*>(message.receive->data.data_ptr())
                                   : message.held.data();
      std::memcpy(into + message.received, bytes, chunk);
    }
    message.received += chunk;
    fifo.releaseRecv();
    if (!message.complete()) continue;
    if (message.receive) {
      done.push_back(message.receive);
    } else if (!message.discard) {
      lane.unexpected.push_back(std::move(message));
    }
    lane.arriving.reset();
  }
  return moved;
}

void TaggedP2p::checkHealth(std::vector<std::shared_ptr<Operation>>& done, bool& departureSeen) {
  if (!failure_.empty()) return;
  std::string reason = connections_.abortReason();
  if (reason.empty() && groupFailure_) reason = groupFailure_();
  if (!reason.empty()) {
    failure_ = reason;
    failAll(failure_, done);
    return;
  }
  const auto now = Clock::now();
  for (int peer = 0; peer < size_; ++peer) {
    auto& lane = lanes_->peers[static_cast<std::size_t>(peer)];
    std::shared_ptr<Operation> waiting = !lane.sends.empty()      ? lane.sends.front()
                                         : !lane.receives.empty() ? lane.receives.front()
                                                                  : nullptr;
    if (!waiting || peer == rank_) continue;
    // A peer that left wrote everything it sent before it left: after one more pass over the
    // FIFOs, an operation still waiting on it never ends.
    if (connections_.peerDeparted(peer)) {
      if (!departureSeen) {
        departureSeen = true;
        return;
      }
      failure_ = fmt::format(
          "{} cannot complete: rank {} left the group (destroyed it) without the matching {}",
          waiting->describe(rank_), peer, waiting->isSend ? "recv" : "send");
      failAll(failure_, done);
      return;
    }
    if (now > waiting->deadline) {
      failure_ = fmt::format(
          "{} timed out after {} ms; the peer may have died or not posted the matching {} (raise "
          "the group's timeout or CHORUS_TIMEOUT if it is only slow)",
          waiting->describe(rank_), timeout_.count(), waiting->isSend ? "recv" : "send");
      connections_.abort(failure_);
      failAll(failure_, done);
      if (onFailure_) onFailure_(failure_);
      return;
    }
  }
}

void TaggedP2p::failAll(const std::string& reason, std::vector<std::shared_ptr<Operation>>& done) {
  std::vector<std::shared_ptr<Operation>> doomed;
  for (auto& lane : lanes_->peers) {
    doomed.insert(doomed.end(), lane.sends.begin(), lane.sends.end());
    doomed.insert(doomed.end(), lane.receives.begin(), lane.receives.end());
    if (lane.arriving && lane.arriving->receive) doomed.push_back(lane.arriving->receive);
    lane.sends.clear();
    lane.receives.clear();
    lane.arriving.reset();
  }
  for (auto& op : doomed) {
    op->error = std::make_exception_ptr(std::runtime_error(fmt::format(
        "chorus: {} failed on rank {}: {}", op->isSend ? "send" : "recv", rank_, reason)));
    done.push_back(op);
  }
}

void TaggedP2p::complete(const std::vector<std::shared_ptr<Operation>>& done) {
  for (const auto& op : done) {
    if (op->work->isCompleted()) continue;
    std::exception_ptr error = op->error;
    if (!error && op->onDone) {
      try {
        op->onDone();
      } catch (...) {
        error = std::current_exception();
      }
    }
    op->work->settle(error);
  }
}

}  // namespace chorus::torch_backend
