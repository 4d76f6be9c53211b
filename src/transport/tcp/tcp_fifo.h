// The two ends of a TCP connection's FIFO as the interpreter sees them, each a ring of
// `slots` local slot buffers shared between the interpreter thread and whichever thread moves
// bytes on the socket (single producer, single consumer, acquire/release counters). The
// interpreter's own calls drive the sockets when they can (TcpProgress: send at once, read
// when empty), so a message needs no thread handoff; the transport's progress thread covers
// the rest.
//
// Flow control is credit-based: the sender may have at most `slots` slots that the receiver
// has not released, so the receiver always has a free slot for an arriving data frame. The
// receiver returns a credit per released slot (tcp_frame.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "transport/fifo.h"

namespace chorus::transport {

// What a FIFO asks of its transport; both never block.
class TcpProgress {
 public:
  virtual ~TcpProgress() = default;
  // New work to send (a committed slot, a released slot's credit): send it now if no other
  // thread is moving bytes, else make sure one will.
  virtual void kick() = 0;
  // Nothing to receive or no credit: read what the sockets hold now if no other thread is.
  virtual void poke() = 0;
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
  };
  std::uint8_t* slot(std::uint64_t sequence) {
    return buffer_.data() + (sequence % slots_) * slotBytes_;
  }
  Meta& meta(std::uint64_t sequence) { return meta_[sequence % slots_]; }

  std::uint64_t slots_;
  std::size_t slotBytes_;
  TcpProgress& progress_;

 private:
  std::vector<std::uint8_t> buffer_;
  std::vector<Meta> meta_;
};

// Sender end. The interpreter fills and commits slots; the progress thread sends committed
// slots in order (nextToSend) and adds the receiver's credits.
class TcpSendFifo final : public TcpSlotRing {
 public:
  using TcpSlotRing::TcpSlotRing;

  std::uint8_t* trySendSlot() override;
  void commitSend(std::size_t bytes, std::uint64_t tag) override;
  bool tryRecvSlot(RecvSlot*) override { return false; }
  void releaseRecv() override {}
  // Progress thread: the next committed slot not yet handed to the socket, if any.
  bool nextToSend(const std::uint8_t** data, std::size_t* bytes, std::uint64_t* tag);
  void addCredits(std::uint64_t n) { credited_.fetch_add(n, std::memory_order_release); }
  // Slots the receiver has not released (a protocol check on credits).
  std::uint64_t outstanding() const {
    return committed_.load(std::memory_order_acquire) - credited_.load(std::memory_order_acquire);
  }

 private:
  std::atomic<std::uint64_t> committed_{0};  // interpreter
  std::atomic<std::uint64_t> credited_{0};   // progress thread
  std::uint64_t queued_ = 0;                 // progress thread only
};

// Receiver end. The progress thread writes arriving data frames into free slots; the
// interpreter consumes them in order and releases them; the progress thread returns credits.
class TcpRecvFifo final : public TcpSlotRing {
 public:
  using TcpSlotRing::TcpSlotRing;

  std::uint8_t* trySendSlot() override { return nullptr; }
  void commitSend(std::size_t, std::uint64_t) override {}
  bool tryRecvSlot(RecvSlot* slot) override;
  void releaseRecv() override;

  // Progress thread: the slot the next data frame goes to, or nullptr if the sender overran
  // its credits (every slot is still unreleased).
  std::uint8_t* arrivalSlot();
  // Progress thread: publishes the arrival written into arrivalSlot().
  void commitArrival(std::size_t bytes, std::uint64_t tag);
  // Progress thread: slots released since the last call (the credit to send back).
  std::uint64_t takeCredits();

 private:
  std::atomic<std::uint64_t> arrived_{0};   // progress thread
  std::atomic<std::uint64_t> released_{0};  // interpreter
  std::uint64_t credited_ = 0;              // progress thread only
};

}  // namespace chorus::transport
