#include "transport/tcp/tcp_fifo.h"

#include "support/error.h"
#include "transport/remote_message.h"

namespace chorus::transport {

TcpSlotRing::TcpSlotRing(const FifoOptions& options, TcpProgress& progress)
    : slots_(static_cast<std::uint64_t>(options.slots)),
      slotBytes_(options.slotBytes),
      singleCopyBytes_(options.singleCopyBytes),
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
  meta(committed) = {bytes, tag, false, {}, false};
  committed_.store(committed + 1, std::memory_order_release);
  progress_.kick();
}

std::uint64_t TcpSendFifo::commitRemote(const RemoteRegion& region, std::uint64_t tag) {
  const std::uint64_t committed = committed_.load(std::memory_order_relaxed);
  CHORUS_INTERNAL_ASSERT(region.bytes() <= slotBytes_, "a message larger than its slot");
  meta(committed) = {region.bytes(), tag, true, region, false};
  committed_.store(committed + 1, std::memory_order_release);
  progress_.kick();
  return committed + 1;
}

bool TcpSendFifo::evictRemote(std::uint64_t ticket) {
  if (!remoteSettled(ticket)) progress_.evict(*this, ticket);
  return true;
}

const std::uint8_t* TcpSendFifo::localize(std::uint64_t ticket) {
  Meta& m = meta(ticket - 1);
  if (m.remote) {
    copyFromRegion(m.region, 0, slot(ticket - 1), m.bytes);
    m.remote = false;
  }
  return slot(ticket - 1);
}

bool TcpSendFifo::nextToSend(Outbound* message) {
  if (queued_ == committed_.load(std::memory_order_acquire)) return false;
  const Meta& m = meta(queued_);
  message->data = slot(queued_);
  message->bytes = m.bytes;
  message->tag = m.tag;
  message->ticket = queued_ + 1;
  message->region = m.remote ? &m.region : nullptr;
  ++queued_;
  return true;
}

bool TcpRecvFifo::tryRecvSlot(RecvSlot* slot) {
  const std::uint64_t released = released_.load(std::memory_order_relaxed);
  if (released == arrived_.load(std::memory_order_acquire)) {
    progress_.poke();
    if (released == arrived_.load(std::memory_order_acquire)) return false;
  }
  const Meta& m = meta(released);
  slot->delivered = m.delivered;
  slot->data = m.delivered ? nullptr : this->slot(released);
  slot->bytes = m.bytes;
  slot->tag = m.tag;
  return true;
}

bool TcpRecvFifo::postRecv(const RemoteRegion& region, std::uint64_t tag, std::size_t ahead) {
  CHORUS_INTERNAL_ASSERT(ahead < slots_, "a post further ahead than the slots");
  // The next message the interpreter takes is the one after those it released.
  const std::uint64_t sequence = released_.load(std::memory_order_relaxed) + ahead;
  std::unique_lock lock(progress_.bytesMutex(), std::try_to_lock);
  if (!lock) return false;  // the holder is moving bytes: post on the next poll
  posts_[sequence % slots_] = {region, tag, sequence, true};
  return true;
}

const RemoteRegion* TcpRecvFifo::claimPost(std::size_t bytes, std::uint64_t tag) {
  const std::uint64_t sequence = arrived_.load(std::memory_order_relaxed);
  Post& post = posts_[sequence % slots_];
  if (!post.active || post.sequence != sequence || post.tag != tag || post.region.bytes() != bytes)
    return nullptr;
  post.active = false;
  return &post.region;
}

void TcpRecvFifo::releaseRecv() {
  const std::uint64_t released = released_.fetch_add(1, std::memory_order_release) + 1;
  if (released - credited_.load(std::memory_order_relaxed) >= creditBatch()) progress_.kick();
}

std::uint8_t* TcpRecvFifo::arrivalSlot() {
  const std::uint64_t arrived = arrived_.load(std::memory_order_relaxed);
  if (arrived - released_.load(std::memory_order_acquire) >= slots_) return nullptr;
  return slot(arrived);
}

void TcpRecvFifo::commitArrival(std::size_t bytes, std::uint64_t tag, bool delivered) {
  const std::uint64_t arrived = arrived_.load(std::memory_order_relaxed);
  meta(arrived) = {bytes, tag, false, {}, delivered};
  arrived_.store(arrived + 1, std::memory_order_release);
}

std::uint64_t TcpRecvFifo::takeCredits(bool now) {
  const std::uint64_t released = released_.load(std::memory_order_acquire);
  const std::uint64_t credits = released - credited_.load(std::memory_order_relaxed);
  if (credits == 0 || (!now && credits < creditBatch())) return 0;
  credited_.store(released, std::memory_order_relaxed);
  return credits;
}

}  // namespace chorus::transport
