// The shm transport's FIFO: one connection (sender process -> receiver process) as a ring of
// slots in its own shared segment, single producer and single consumer with acquire/release
// ordering like ThreadFifo, but signalled per slot so a small message costs the receiver one
// cache-line transfer. The fast path is loads, stores and copies only: no syscalls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "transport/fifo.h"
#include "transport/shm/shm_segment.h"

namespace chorus::transport {

// Slot payloads start on 4096-byte boundaries; messages of up to 40 bytes are handed to the
// receiver from the slot's metadata line instead (not page-aligned).
class ShmFifo final : public Fifo {
 public:
  // Bytes of a segment holding a FIFO of `options`' shape (header, slot metadata, payloads).
  static std::size_t segmentBytes(const FifoOptions& options);
  // Lays out a FIFO in a freshly created, zero-filled `segment` and publishes it: the ready
  // magic is stored last, with release ordering, so an opener that sees it sees the rest.
  static void format(const ShmSegment& segment, const FifoOptions& options);
  // True once `segment` (mapped by the opener) has been published by format().
  static bool isReady(const ShmSegment& segment);

  // Takes a published segment. Throws CommError naming `connection` (e.g. "rank 0 -> rank 1
  // channel 0") if its shape differs from `options` (the ranks disagree on the FIFO settings;
  // `settings` names the variables that set them).
  ShmFifo(ShmSegment segment, const FifoOptions& options, const std::string& connection,
          const std::string& settings);

  std::uint8_t* trySendSlot() override;
  void commitSend(std::size_t bytes, std::uint64_t tag) override;
  bool tryRecvSlot(RecvSlot* slot) override;
  void releaseRecv() override;
  std::size_t slotBytes() const override { return slotBytes_; }
  int slotCount() const override { return static_cast<int>(slots_); }

 private:
  static constexpr std::size_t kInlineBytes = 40;  // payloads this small travel in the slot's
                                                   // metadata line
  struct Control;
  struct SlotMeta;

  ShmSegment segment_;
  Control* control_ = nullptr;
  SlotMeta* meta_ = nullptr;
  std::uint8_t* payload_ = nullptr;
  std::uint64_t slots_ = 0;
  std::size_t slotBytes_ = 0;
  std::size_t stride_ = 0;
  // This process's end only: the sender's published count and the last tail it read, or the
  // receiver's released count.
  std::uint64_t head_ = 0;
  std::uint64_t cachedTail_ = 0;
  std::uint64_t tail_ = 0;
  std::uint64_t sendIndex_ = 0;  // head_ % slots_
  std::uint64_t recvIndex_ = 0;  // tail_ % slots_
};

}  // namespace chorus::transport
