#include "transport/thread/thread_fifo.h"

#include "support/error.h"

namespace chorus::transport {

ThreadFifo::ThreadFifo(const FifoOptions& options)
    : slots_(options.slots),
      slotBytes_(options.slotBytes),
      singleCopyBytes_(options.singleCopyBytes),
      storage_(new std::uint8_t[static_cast<std::size_t>(options.slots) * options.slotBytes]),
      sizes_(options.slots, 0),
      tags_(options.slots, 0),
      remote_(options.slots, 0),
      remotes_(new RemoteSlot[static_cast<std::size_t>(options.slots)]) {}

std::uint8_t* ThreadFifo::trySendSlot() {
  const std::uint64_t head = head_.load(std::memory_order_relaxed);
  if (head - tail_.load(std::memory_order_acquire) >= static_cast<std::uint64_t>(slots_))
    return nullptr;
  return payload(head % slots_);
}

void ThreadFifo::publish(std::uint64_t head, std::size_t bytes, std::uint64_t tag, bool remote) {
  sizes_[head % slots_] = bytes;
  tags_[head % slots_] = tag;
  remote_[head % slots_] = remote ? 1 : 0;
  head_.store(head + 1, std::memory_order_release);
}

void ThreadFifo::commitSend(std::size_t bytes, std::uint64_t tag) {
  publish(head_.load(std::memory_order_relaxed), bytes, tag, false);
}

std::uint64_t ThreadFifo::commitRemote(const RemoteRegion& region, std::uint64_t tag) {
  CHORUS_INTERNAL_ASSERT(region.bytes() <= slotBytes_, "message by reference larger than a slot");
  const std::uint64_t head = head_.load(std::memory_order_relaxed);
  publishRemoteSlot(remotes_[head % slots_], region, head + 1);
  publish(head, region.bytes(), tag, true);
  return head + 1;
}

bool ThreadFifo::remoteSettled(std::uint64_t ticket) const {
  return remoteSlotSettled(remotes_[(ticket - 1) % slots_], ticket,
                           tail_.load(std::memory_order_acquire));
}

bool ThreadFifo::evictRemote(std::uint64_t ticket) {
  const std::uint64_t index = (ticket - 1) % slots_;
  return evictRemoteSlot(remotes_[index], ticket, tail_.load(std::memory_order_acquire),
                         [&](const RemoteRegion& region) {
                           copyFromRegion(region, 0, payload(index), region.bytes());
                         });
}

bool ThreadFifo::tryRecvSlot(RecvSlot* slot) {
  const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
  if (tail == head_.load(std::memory_order_acquire)) return false;
  const std::uint64_t index = tail % slots_;
  slot->bytes = sizes_[index];
  slot->tag = tags_[index];
  slot->remote = remote_[index] != 0;
  slot->data = slot->remote ? nullptr : payload(index);
  return true;
}

RemoteClaim ThreadFifo::claimRemote(RecvSlot* slot) {
  const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
  const RemoteClaim claim = claimRemoteSlot(remotes_[tail % slots_], tail + 1);
  if (claim == RemoteClaim::evicted) {
    slot->remote = false;
    slot->data = payload(tail % slots_);
  }
  return claim;
}

void ThreadFifo::readRemote(std::uint8_t* dst, std::size_t offset, std::size_t bytes) {
  const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
  copyFromRegion(remotes_[tail % slots_].region, offset, dst, bytes);
}

void ThreadFifo::releaseRecv() {
  tail_.store(tail_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

}  // namespace chorus::transport
