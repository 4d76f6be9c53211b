// The two ends of a TCP connection's FIFO as the interpreter sees them, each a ring of
// `slots` local slot buffers shared between the interpreter thread and whichever thread moves
// bytes on the socket (single producer, single consumer, acquire/release counters). The
// interpreter's own calls drive the sockets when they can (TcpProgress: send at once, read
// when empty), so a message needs no thread handoff; the transport's progress thread covers
// the rest.
//
// Flow control is credit-based: the sender may have at most `slots` slots that the receiver
// has not released, so the receiver always has a free slot for an arriving data frame. The
// receiver returns a credit per released slot (tcp_frame.h): with the next frame it sends that
// way, once half the slots wait for theirs, or as soon as this rank waits for anything (an
// empty receive FIFO, a send FIFO out of credits) or its progress thread runs; so a call that
// sends and receives one message costs one frame each way, not two.
//
// Single copy: a message of at least FifoOptions::singleCopyBytes may be committed by reference
// (Fifo::commitRemote). Its data frame is then written to the socket straight from the
// sender's buffer, and the message settles once the kernel has taken every byte; an eviction
// copies what is not yet written into the slot. On the receiving side a message of that size
// may be posted for (Fifo::postRecv): its payload is then read from the socket straight into
// the receiver's buffer, not into the slot.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "transport/fifo.h"

namespace chorus::transport {

class TcpSendFifo;
class TcpRecvFifo;

// What a FIFO asks of its transport; kick() and poke() never block.
class TcpProgress {
 public:
  virtual ~TcpProgress() = default;
  // New work to send (a committed slot, a batch of credits): send it now if no other thread
  // is moving bytes, else make sure one will.
  virtual void kick() = 0;
  // Nothing to receive or no credit: read what the sockets hold now and return every pending
  // credit, if no other thread is moving bytes.
  virtual void poke() = 0;
  // Held by whichever thread moves bytes; a receive FIFO's posts change only under it.
  virtual std::mutex& bytesMutex() = 0;
  // Withdraws `fifo`'s posts, moving a payload partly read into a posted region to its slot.
  // Waits for the thread moving bytes, if any.
  virtual void unpost(TcpRecvFifo& fifo) = 0;
  // Copies message `ticket` of `fifo`, sent by reference, into its slot wherever it waits to
  // be written, so its region may change. Waits for the thread moving bytes, if any.
  virtual void evict(TcpSendFifo& fifo, std::uint64_t ticket) = 0;
};

// The slots of one FIFO end: `slots` payload buffers of `slotBytes`, each with its message
// size and call tag, and the transport that moves them.
class TcpSlotRing : public Fifo {
 public:
  TcpSlotRing(const FifoOptions& options, TcpProgress& progress);
  std::size_t slotBytes() const override { return slotBytes_; }
  int slotCount() const override { return static_cast<int>(slots_); }

 protected:
  struct Meta {
    std::size_t bytes = 0;
    std::uint64_t tag = 0;
    bool remote = false;  // the payload is `region`, in the sender's buffers (single copy)
    RemoteRegion region;
    bool delivered = false;  // receiver: the payload went to the posted region
  };
  std::uint8_t* slot(std::uint64_t sequence) {
    return buffer_.data() + (sequence % slots_) * slotBytes_;
  }
  Meta& meta(std::uint64_t sequence) { return meta_[sequence % slots_]; }

  std::uint64_t slots_;
  std::size_t slotBytes_;
  std::size_t singleCopyBytes_;
  TcpProgress& progress_;

 private:
  std::vector<std::uint8_t> buffer_;
  std::vector<Meta> meta_;
};

// Sender end. The interpreter fills and commits slots (or commits references); the thread
// moving bytes sends committed messages in order (nextToSend), counts those the socket took
// (frameWritten) and adds the receiver's credits. A message's ticket is its 1-based sequence
// number.
class TcpSendFifo final : public TcpSlotRing {
 public:
  using TcpSlotRing::TcpSlotRing;

  std::uint8_t* trySendSlot() override;
  void commitSend(std::size_t bytes, std::uint64_t tag) override;
  bool tryRecvSlot(RecvSlot*) override { return false; }
  void releaseRecv() override {}

  bool acceptsRemote(std::size_t bytes) const override {
    return singleCopyBytes_ != 0 && bytes >= singleCopyBytes_ && bytes <= slotBytes_;
  }
  bool remoteSavesACopy() const override { return true; }
  std::uint64_t commitRemote(const RemoteRegion& region, std::uint64_t tag) override;
  bool remoteSettled(std::uint64_t ticket) const override {
    return written_.load(std::memory_order_acquire) >= ticket;
  }
  bool evictRemote(std::uint64_t ticket) override;

  // A committed message as the thread moving bytes sends it: the slot's bytes, or `region`.
  struct Outbound {
    const std::uint8_t* data = nullptr;
    std::size_t bytes = 0;
    std::uint64_t tag = 0;
    std::uint64_t ticket = 0;
    const RemoteRegion* region = nullptr;
  };
  // Thread moving bytes: the next committed message not yet handed to the socket, if any.
  bool nextToSend(Outbound* message);
  // Thread moving bytes: the socket took the next message handed out (or it will never be
  // sent: its connection is lost), so its region may change.
  void frameWritten() { written_.fetch_add(1, std::memory_order_release); }
  // Thread moving bytes (TcpProgress::evict): copies message `ticket`'s region into its slot
  // and returns the slot; the message is sent from there from now on.
  const std::uint8_t* localize(std::uint64_t ticket);
  void addCredits(std::uint64_t n) { credited_.fetch_add(n, std::memory_order_release); }
  // Slots the receiver has not released (a protocol check on credits).
  std::uint64_t outstanding() const {
    return committed_.load(std::memory_order_acquire) - credited_.load(std::memory_order_acquire);
  }

 private:
  std::atomic<std::uint64_t> committed_{0};  // interpreter
  std::atomic<std::uint64_t> credited_{0};   // progress thread
  std::atomic<std::uint64_t> written_{0};    // thread moving bytes
  std::uint64_t queued_ = 0;                 // thread moving bytes only
};

// Receiver end. The progress thread writes arriving data frames into free slots; the
// interpreter consumes them in order and releases them; the progress thread returns credits.
class TcpRecvFifo final : public TcpSlotRing {
 public:
  TcpRecvFifo(const FifoOptions& options, TcpProgress& progress)
      : TcpSlotRing(options, progress), posts_(slots_) {}

  std::uint8_t* trySendSlot() override { return nullptr; }
  void commitSend(std::size_t, std::uint64_t) override {}
  bool tryRecvSlot(RecvSlot* slot) override;
  void releaseRecv() override;

  bool acceptsPost(std::size_t bytes) const override {
    return singleCopyBytes_ != 0 && bytes >= singleCopyBytes_ && bytes <= slotBytes_;
  }
  bool postRecv(const RemoteRegion& region, std::uint64_t tag, std::size_t ahead) override;
  void unpost() override { progress_.unpost(*this); }

  // Progress thread: the slot the next data frame goes to, or nullptr if the sender overran
  // its credits (every slot is still unreleased).
  std::uint8_t* arrivalSlot();
  // Thread moving bytes: the posted region the next data frame (of `bytes`, tagged `tag`) may
  // be read into, or nullptr; a region returned is claimed (the post is used up).
  const RemoteRegion* claimPost(std::size_t bytes, std::uint64_t tag);
  // Thread moving bytes (TcpProgress::unpost): drops every post.
  void dropPosts() {
    for (Post& post : posts_)
      post.active = false;
  }
  // Progress thread: publishes the arrival written into arrivalSlot() (or, `delivered`, into
  // the region claimPost() returned).
  void commitArrival(std::size_t bytes, std::uint64_t tag, bool delivered);
  // Thread moving bytes: slots released since the credit last taken (the credit to send
  // back); 0 while fewer than half the slots wait for theirs, unless `now`.
  std::uint64_t takeCredits(bool now);

 private:
  std::uint64_t creditBatch() const { return slots_ / 2 > 0 ? slots_ / 2 : 1; }

  // Where message `sequence` may land, at posts_[sequence % slots]; changed under the
  // transport's byte-moving lock.
  struct Post {
    RemoteRegion region;
    std::uint64_t tag = 0;
    std::uint64_t sequence = 0;
    bool active = false;
  };

  std::atomic<std::uint64_t> arrived_{0};   // thread moving bytes
  std::atomic<std::uint64_t> released_{0};  // interpreter
  std::atomic<std::uint64_t> credited_{0};  // thread moving bytes
  std::vector<Post> posts_;
};

}  // namespace chorus::transport
