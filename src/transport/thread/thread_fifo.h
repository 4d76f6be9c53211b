// Thread transport: a FIFO between two threads of one process (single producer, single
// consumer ring of slots with acquire/release counters). Messages of at least
// FifoOptions::singleCopyBytes may go by reference: the receiver copies them straight out of
// the sender's buffers (remote_message.h).
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "transport/fifo.h"
#include "transport/remote_message.h"

namespace chorus::transport {

class ThreadFifo final : public Fifo {
 public:
  explicit ThreadFifo(const FifoOptions& options);
  std::uint8_t* trySendSlot() override;
  void commitSend(std::size_t bytes, std::uint64_t tag) override;
  bool tryRecvSlot(RecvSlot* slot) override;
  void releaseRecv() override;
  std::size_t slotBytes() const override { return slotBytes_; }
  int slotCount() const override { return slots_; }

  bool acceptsRemote(std::size_t bytes) const override {
    return singleCopyBytes_ != 0 && bytes >= singleCopyBytes_;
  }
  std::uint64_t commitRemote(const RemoteRegion& region, std::uint64_t tag) override;
  bool remoteSettled(std::uint64_t ticket) const override;
  bool evictRemote(std::uint64_t ticket) override;
  RemoteClaim claimRemote(RecvSlot* slot) override;
  void readRemote(std::uint8_t* dst, std::size_t offset, std::size_t bytes) override;

 private:
  std::uint8_t* payload(std::uint64_t index) const { return storage_.get() + index * slotBytes_; }
  void publish(std::uint64_t head, std::size_t bytes, std::uint64_t tag, bool remote);

  const int slots_;
  const std::size_t slotBytes_;
  const std::size_t singleCopyBytes_;
  std::unique_ptr<std::uint8_t[]> storage_;
  std::vector<std::size_t> sizes_;
  std::vector<std::uint64_t> tags_;
  std::vector<char> remote_;  // the slot's message is a reference (remotes_)
  std::unique_ptr<RemoteSlot[]> remotes_;
  // Counters on separate cache lines: head_ = slots published, tail_ = slots released.
  alignas(64) std::atomic<std::uint64_t> head_{0};
  alignas(64) std::atomic<std::uint64_t> tail_{0};
};

}  // namespace chorus::transport
