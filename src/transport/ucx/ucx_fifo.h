// The two ends of a ucx FIFO (ucx_transport.h) and what they ask of their connections: a ring
// of `slots` local slots on each side; a commit sends the slot (or, by reference, the caller's
// region) as one active message with a UcxDataHeader, and the receiver's handler places it by
// its index (UCP does not promise order), in its slot, in UCX's own buffer (held until
// released) or in the region posted for it. Credits flow back so a sender never has more than
// `slots` messages the receiver has not released.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "transport/fifo.h"

namespace chorus::transport {

class UcxFifoOwner;
class UcxRecvFifo;

// The head of every data message.
struct UcxDataHeader {
  std::uint32_t from = 0;
  std::uint32_t channel = 0;
  std::uint64_t tag = 0;
  std::uint64_t call = 0;  // the sender's collective number + 1 (0: none)
  // The message's index on its FIFO: UCP does not promise to deliver active messages in order,
  // so the receiver places each by its index, not by when it came.
  std::uint64_t seq = 0;
  // Credits for the FIFO the other way on this channel (receiver -> sender): returned with
  // data where a pair exchanges messages both ways, instead of in a message of their own.
  std::uint64_t credits = 0;
};

// One slot's send state: busy from its commit until UCP completes the send. A message's ticket is
// its 1-based index on the FIFO; `done` is the last ticket of this slot UCP completed.
struct UcxSlotSend {
  UcxFifoOwner* owner = nullptr;
  int peer = 0;
  std::uint64_t ticket = 0;  // worker lock
  std::atomic<bool> busy{false};
  std::atomic<std::uint64_t> done{0};
  std::vector<ucp_dt_iov_t> iov;   // a message by reference in several pieces, until sent
  std::uint64_t registration = 0;  // worker lock: UcxRegistrations::acquire's use, until sent
};

// The pieces of `region` as UCP's iov datatype (UCX reads or writes them in order).
inline void regionIov(const RemoteRegion& region, std::vector<ucp_dt_iov_t>* iov) {
  iov->resize(region.pieces);
  for (std::uint32_t i = 0; i < region.pieces; ++i)
    (*iov)[i] = {reinterpret_cast<void*>(region.address + i * region.stride),
                 static_cast<std::size_t>(region.pieceBytes)};
}

// Whether `region` is one contiguous run of bytes.
inline bool contiguous(const RemoteRegion& region) {
  return region.pieces <= 1 || region.stride == region.pieceBytes;
}

// What a ucx FIFO asks of its connections (UcxConnections). Every method but workerMutex(),
// progressWorkerLocked() (worker lock held) and currentCall() takes the worker lock itself.
class UcxFifoOwner {
 public:
  virtual ~UcxFifoOwner() = default;
  virtual int fifoRank() const = 0;
  // The sender's collective number + 1 (0: none), for UcxDataHeader::call.
  virtual std::uint64_t currentCall() const = 0;
  // Sends message `header` to `peer`: `bytes` at `data`, or (`region` not nullptr) the pieces of
  // `region`; `slot` tracks completion.
  virtual void sendData(int peer, const UcxDataHeader* header, const std::uint8_t* data,
                        std::size_t bytes, const RemoteRegion* region, UcxSlotSend* slot) = 0;
  // Nothing to receive or no credit: move what the worker holds now and send pending credits,
  // unless another thread is doing so.
  virtual void poke() = 0;
  // A receive FIFO released enough slots: credit them now.
  virtual void creditNow(UcxRecvFifo& fifo) = 0;
  // A receive FIFO has credits to return (its first since the last were sent): the next
  // progress sends them.
  virtual void creditLater(UcxRecvFifo& fifo) = 0;
  virtual std::mutex& workerMutex() = 0;
  // Under the worker lock: moves what the worker holds now.
  virtual void progressWorkerLocked() = 0;
  // Returns a receive buffer UCX let a FIFO hold (UCP_AM_RECV_ATTR_FLAG_DATA).
  virtual void releaseData(void* data) = 0;
};

// What both ends of a ucx FIFO have: the connection they belong to and a ring of `slots` local
// slots of `slotBytes`. Each end implements its own side of Fifo; the other side's calls are
// internal errors.
class UcxSlotRing : public Fifo {
 public:
  UcxSlotRing(UcxFifoOwner& owner, int peer, int channel, const FifoOptions& options)
      : owner_(owner),
        peer_(peer),
        channel_(channel),
        slots_(static_cast<std::uint64_t>(options.slots)),
        slotBytes_(options.slotBytes),
        singleCopyBytes_(options.singleCopyBytes),
        buffer_(static_cast<std::size_t>(options.slots) * options.slotBytes) {}
  std::uint8_t* trySendSlot() override {
    CHORUS_INTERNAL_ASSERT(false, "trySendSlot on a ucx receive FIFO");
    return nullptr;
  }
  void commitSend(std::size_t, std::uint64_t) override {
    CHORUS_INTERNAL_ASSERT(false, "commitSend on a ucx receive FIFO");
  }
  bool tryRecvSlot(RecvSlot*) override {
    CHORUS_INTERNAL_ASSERT(false, "tryRecvSlot on a ucx send FIFO");
    return false;
  }
  void releaseRecv() override { CHORUS_INTERNAL_ASSERT(false, "releaseRecv on a ucx send FIFO"); }
  std::size_t slotBytes() const override { return slotBytes_; }
  int slotCount() const override { return static_cast<int>(slots_); }
  int peer() const { return peer_; }
  int channel() const { return channel_; }

 protected:
  std::uint8_t* slotAt(std::uint64_t seq) { return buffer_.data() + (seq % slots_) * slotBytes_; }

  UcxFifoOwner& owner_;
  const int peer_;
  const int channel_;
  const std::uint64_t slots_;
  const std::size_t slotBytes_;
  const std::size_t singleCopyBytes_;
  std::vector<std::uint8_t> buffer_;
};

class UcxSendFifo final : public UcxSlotRing {
 public:
  UcxSendFifo(UcxFifoOwner& owner, int peer, int channel, const FifoOptions& options);
  std::uint8_t* trySendSlot() override;
  void commitSend(std::size_t bytes, std::uint64_t tag) override;
  // Single copy: a message by reference leaves from the sender's region itself (UCP reads it,
  // by copy for eager sizes or zero-copy for rendezvous) and settles when UCP completes it.
  bool acceptsRemote(std::size_t bytes) const override {
    return singleCopyBytes_ != 0 && bytes >= singleCopyBytes_ && bytes <= slotBytes_;
  }
  bool remoteSavesACopy() const override { return true; }
  std::uint64_t commitRemote(const RemoteRegion& region, std::uint64_t tag) override;
  bool remoteSettled(std::uint64_t ticket) const override {
    return sends_[(ticket - 1) % slots_].done.load(std::memory_order_acquire) >= ticket;
  }
  // A send UCP has started cannot change its source: the message settles once the receiver's
  // progress (its progress thread) has taken it, without help from this side's interpreter.
  bool evictRemote(std::uint64_t ticket) override;
  void addCredits(std::uint64_t count) { credited_.fetch_add(count, std::memory_order_release); }
  // The receive FIFO from the same peer on the same channel, whose credits ride this FIFO's
  // messages (set once, under the connections' FIFO lock).
  void pairWith(UcxRecvFifo* back) { back_.store(back, std::memory_order_release); }
  bool busy() const {
    for (std::uint64_t s = 0; s < slots_; ++s)
      if (sends_[s].busy.load(std::memory_order_acquire)) return true;
    return false;
  }
  std::uint64_t outstanding() const {
    return next_.load(std::memory_order_acquire) - credited_.load(std::memory_order_acquire);
  }

 private:
  // Fills the header of the next message and returns its slot index.
  std::uint64_t nextHeader(std::uint64_t tag);

  std::vector<UcxDataHeader> headers_;
  std::unique_ptr<UcxSlotSend[]> sends_;
  std::atomic<UcxRecvFifo*> back_{nullptr};
  std::atomic<std::uint64_t> next_{0};  // messages committed
  std::atomic<std::uint64_t> credited_{0};
};

class UcxRecvFifo final : public UcxSlotRing {
 public:
  UcxRecvFifo(UcxFifoOwner& owner, int peer, int channel, const FifoOptions& options);
  bool tryRecvSlot(RecvSlot* slot) override;
  void releaseRecv() override;
  // Posted receives: a message that matches its post is written (or fetched, for a
  // rendezvous) straight into the region, not into its slot.
  bool acceptsPost(std::size_t bytes) const override {
    return singleCopyBytes_ != 0 && bytes >= singleCopyBytes_ && bytes <= slotBytes_;
  }
  bool postRecv(const RemoteRegion& region, std::uint64_t tag, std::size_t ahead) override;
  // Drops every post and waits (at most kUnpostLimit) for fetches into posted regions under way;
  // a message fetched there already moves to its slot.
  void unpost() override;

  // Under the worker lock (a UCP callback): where message `seq` lands: "" and its slot, or what
  // is wrong (a message the sender had no credit for, one seen before, one too large). `post`
  // gets its posted region, or nullptr.
  std::string land(std::uint64_t seq, std::size_t bytes, std::uint64_t tag, std::uint8_t** at,
                   const RemoteRegion** post);
  // Under the worker lock: message `seq` is complete, in its slot or (`delivered`) its region.
  void landed(std::uint64_t seq, bool delivered);
  // Under the worker lock: message `seq` is complete in UCX's buffer `data` (held: the receiver
  // reads it there, and releaseRecv() returns it to UCX).
  void landedHeld(std::uint64_t seq, void* data) {
    meta_[seq % slots_].held = data;
    landed(seq, false);
  }
  // Under the worker lock, when the connections close: returns every buffer still held.
  void releaseHeld(ucp_worker_h worker) {
    for (Meta& meta : meta_)
      if (meta.held != nullptr) ucp_am_data_release(worker, std::exchange(meta.held, nullptr));
  }
  // Credits released since the last credit message (taken by the caller, which sends them).
  std::uint64_t takeCredits() { return pendingCredits_.exchange(0, std::memory_order_acq_rel); }
  // Worker lock: fetches into posted regions under way.
  int fetchingIntoPosts = 0;

 private:
  struct Meta {
    std::size_t bytes = 0;
    std::uint64_t tag = 0;
    bool delivered = false;  // the payload went to `region`
    RemoteRegion region;
    // The payload left in UCX's receive buffer (held until releaseRecv()), instead of the slot.
    void* held = nullptr;
  };
  struct Post {
    RemoteRegion region;
    std::uint64_t tag = 0;
    std::uint64_t seq = 0;
    bool active = false;
  };
  std::vector<Meta> meta_;                               // per slot
  std::vector<Post> posts_;                              // per slot (worker lock)
  std::vector<std::uint64_t> claimed_;                   // seq + 1 once placed (worker lock)
  std::unique_ptr<std::atomic<std::uint64_t>[]> ready_;  // seq + 1 once landed
  std::atomic<std::uint64_t> consumed_{0};
  std::atomic<std::uint64_t> pendingCredits_{0};
};

}  // namespace chorus::transport
