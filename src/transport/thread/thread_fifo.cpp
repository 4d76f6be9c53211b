#include "transport/thread/thread_fifo.h"

namespace chorus::transport {

ThreadFifo::ThreadFifo(int slots, std::size_t slotBytes)
    : slots_(slots),
      slotBytes_(slotBytes),
      storage_(new std::uint8_t[static_cast<std::size_t>(slots) * slotBytes]),
      sizes_(slots, 0),
      tags_(slots, 0) {}

std::uint8_t* ThreadFifo::trySendSlot() {
  const std::uint64_t head = head_.load(std::memory_order_relaxed);
  if (head - tail_.load(std::memory_order_acquire) >= static_cast<std::uint64_t>(slots_))
    return nullptr;
  return storage_.get() + (head % slots_) * slotBytes_;
}

void ThreadFifo::commitSend(std::size_t bytes, std::uint64_t tag) {
  const std::uint64_t head = head_.load(std::memory_order_relaxed);
  sizes_[head % slots_] = bytes;
  tags_[head % slots_] = tag;
  head_.store(head + 1, std::memory_order_release);
}

bool ThreadFifo::tryRecvSlot(RecvSlot* slot) {
  const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
  if (tail == head_.load(std::memory_order_acquire)) return false;
  slot->bytes = sizes_[tail % slots_];
  slot->tag = tags_[tail % slots_];
  slot->data = storage_.get() + (tail % slots_) * slotBytes_;
  return true;
}

void ThreadFifo::releaseRecv() {
  tail_.store(tail_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

}  // namespace chorus::transport
