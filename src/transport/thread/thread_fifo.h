// Thread transport: a FIFO between two threads of one process (single producer, single
// consumer ring of slots with acquire/release counters).
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "transport/fifo.h"

namespace chorus::transport {

class ThreadFifo final : public Fifo {
 public:
  ThreadFifo(int slots, std::size_t slotBytes);
  std::uint8_t* trySendSlot() override;
  void commitSend(std::size_t bytes, std::uint64_t tag) override;
  bool tryRecvSlot(RecvSlot* slot) override;
  void releaseRecv() override;
  std::size_t slotBytes() const override { return slotBytes_; }
  int slotCount() const override { return slots_; }

 private:
  const int slots_;
  const std::size_t slotBytes_;
  std::unique_ptr<std::uint8_t[]> storage_;
  std::vector<std::size_t> sizes_;
  std::vector<std::uint64_t> tags_;
  // Counters on separate cache lines: head_ = slots published, tail_ = slots released.
  alignas(64) std::atomic<std::uint64_t> head_{0};
  alignas(64) std::atomic<std::uint64_t> tail_{0};
};

}  // namespace chorus::transport
