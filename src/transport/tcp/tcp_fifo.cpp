#include "transport/tcp/tcp_fifo.h"

#include "support/error.h"

namespace chorus::transport {

TcpSlotRing::TcpSlotRing(const FifoOptions& options, TcpProgress& progress)
    : slots_(static_cast<std::uint64_t>(options.slots)),
      slotBytes_(options.slotBytes),
      progress_(progress),
      buffer_(static_cast<std::size_t>(options.slots) * options.slotBytes),
      meta_(static_cast<std::size_t>(options.slots)) {}

std::uint8_t* TcpSendFifo::trySendSlot() {
  const std::uint64_t committed = committed_.load(std::memory_order_relaxed);
  if (committed - credited_.load(std::memory_order_acquire) >= slots_) {
    progress_.poke();  // credits may be waiting on the socket
    if (committed - credited_.load(std::memory_order_acquire) >= slots_) return nullptr;
  }
  return slot(committed);
}

void TcpSendFifo::commitSend(std::size_t bytes, std::uint64_t tag) {
  const std::uint64_t committed = committed_.load(std::memory_order_relaxed);
  CHORUS_INTERNAL_ASSERT(bytes <= slotBytes_, "a message larger than its slot");
  meta(committed) = {bytes, tag};
  committed_.store(committed + 1, std::memory_order_release);
  progress_.kick();
}

bool TcpSendFifo::nextToSend(const std::uint8_t** data, std::size_t* bytes, std::uint64_t* tag) {
  if (queued_ == committed_.load(std::memory_order_acquire)) return false;
  *data = slot(queued_);
  *bytes = meta(queued_).bytes;
  *tag = meta(queued_).tag;
  ++queued_;
  return true;
}

bool TcpRecvFifo::tryRecvSlot(RecvSlot* slot) {
  const std::uint64_t released = released_.load(std::memory_order_relaxed);
  if (released == arrived_.load(std::memory_order_acquire)) {
    progress_.poke();
    if (released == arrived_.load(std::memory_order_acquire)) return false;
  }
  slot->data = this->slot(released);
  slot->bytes = meta(released).bytes;
  slot->tag = meta(released).tag;
  return true;
}

void TcpRecvFifo::releaseRecv() {
  released_.fetch_add(1, std::memory_order_release);
  progress_.kick();
}

std::uint8_t* TcpRecvFifo::arrivalSlot() {
  const std::uint64_t arrived = arrived_.load(std::memory_order_relaxed);
  if (arrived - released_.load(std::memory_order_acquire) >= slots_) return nullptr;
  return slot(arrived);
}

void TcpRecvFifo::commitArrival(std::size_t bytes, std::uint64_t tag) {
  const std::uint64_t arrived = arrived_.load(std::memory_order_relaxed);
  meta(arrived) = {bytes, tag};
  arrived_.store(arrived + 1, std::memory_order_release);
}

std::uint64_t TcpRecvFifo::takeCredits() {
  const std::uint64_t released = released_.load(std::memory_order_acquire);
  const std::uint64_t credits = released - credited_;
  credited_ = released;
  return credits;
}

}  // namespace chorus::transport
