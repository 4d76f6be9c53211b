// The shm transport's FIFO: one connection (sender process -> receiver process) as a ring of
// slots in its own shared segment, single producer and single consumer with acquire/release
// ordering like ThreadFifo, but signalled per slot so a small message costs the receiver one
// cache-line transfer. The fast path is loads, stores and copies only: no syscalls.
//
// Single copy: a message of at least FifoOptions::singleCopyBytes may go by reference, and the
// receiver copies it straight out of the sender's memory with process_vm_readv (Linux's
// cross-memory attach, as Open MPI's vader uses). The receiver first proves it can read the
// sender (one probe read of a known word); until then, or if it cannot (ptrace restrictions,
// another pid namespace), every message is copied through the slots. A message in registered
// memory (chorus::memAlloc) also names its allocation, which the receiver maps and reads with
// plain loads (remoteData()); process_vm_readv remains the fallback.
//
// Flagged formats (LineFormat ll, ll128; the plan's protocol): each slot also has an LL region
// and an LL128 region of its own (a region only ever holds lines of its format, so stale data of
// another format is never read as a flag). The sender stages the message in private memory
// (trySendSlot() returns that), and commitSend() writes it out as flagged words or lines; the
// receiver polls the flags of the current slot's region, decoding into private memory as they
// arrive, and tryRecvSlot() hands out the decoded message once the last flag has arrived.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "transport/fifo.h"
#include "transport/shm/registered_memory.h"
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

  // Takes a published segment as its sending end (`sender`) or receiving end. Throws CommError
  // naming `connection` (e.g. "rank 0 -> rank 1 channel 0") if its shape differs from `options`
  // (the ranks disagree on the FIFO settings; `settings` names the variables that set them).
  // `singleCopy` false: never by reference (e.g. the peer lives in another pid namespace).
  ShmFifo(ShmSegment segment, const FifoOptions& options, const std::string& connection,
          const std::string& settings, bool sender, bool singleCopy);

  std::uint8_t* trySendSlot() override;
  void commitSend(std::size_t bytes, std::uint64_t tag) override;
  bool tryRecvSlot(RecvSlot* slot) override;
  void releaseRecv() override;
  std::size_t slotBytes() const override { return slotBytes_; }
  int slotCount() const override { return static_cast<int>(slots_); }
  void setLineFormat(LineFormat format) override;
  LineFormat lineFormat() const override { return format_; }

  // The 4-byte LL flag of message number `sequence` (>= 1): never 0 (the value of a line never
  // written), and equal for two messages only 2^32 - 1 messages apart, so a line left in a slot
  // by an earlier use is never taken for the current one.
  static std::uint32_t llFlag(std::uint64_t sequence) {
    return static_cast<std::uint32_t>((sequence - 1) % 0xffffffffull) + 1;
  }

  bool acceptsRemote(std::size_t bytes) const override;
  std::uint64_t commitRemote(const RemoteRegion& region, std::uint64_t tag) override;
  bool remoteSettled(std::uint64_t ticket) const override;
  bool evictRemote(std::uint64_t ticket) override;
  RemoteClaim claimRemote(RecvSlot* slot) override;
  void readRemote(std::uint8_t* dst, std::size_t offset, std::size_t bytes) override;
  bool mapsRemote(const RemoteRegion& region) const override;
  const std::uint8_t* remoteData(std::size_t offset, std::size_t bytes) override;

 private:
  static constexpr std::size_t kInlineBytes = 40;  // payloads this small travel in the slot's
                                                   // metadata line
  struct Control;
  struct SlotMeta;
  struct SlotMapping;

  // The SlotMapping array of a segment laid out for `slots` slots.
  static SlotMapping* mappingsOf(std::uint8_t* segment, int slots);
  void probeSender();
  void commitFlagged(std::size_t bytes, std::uint64_t tag);
  bool tryRecvFlagged(RecvSlot* slot);
  // Receiver: throws CommError if the current message was sent in another format than format_.
  void checkSentFormat(const SlotMeta& meta) const;
  std::uint8_t* stream() const { return staging_ + kStreamOffset; }
  std::uint8_t* payload(std::uint64_t index) const { return payload_ + index * stride_; }

  ShmSegment segment_;
  Control* control_ = nullptr;
  SlotMeta* meta_ = nullptr;
  SlotMapping* mappings_ = nullptr;  // one per slot, beside meta_
  std::uint8_t* payload_ = nullptr;
  std::uint64_t slots_ = 0;
  std::size_t slotBytes_ = 0;
  std::size_t stride_ = 0;
  // This process's end only: the sender's published count and the last tail it read, or the
  // receiver's released count.
  std::uint64_t head_ = 0;
  std::uint64_t cachedTail_ = 0;
  std::uint64_t tail_ = 0;
  std::uint64_t sendIndex_ = 0;      // head_ % slots_
  std::uint64_t recvIndex_ = 0;      // tail_ % slots_
  std::size_t singleCopyBytes_ = 0;  // 0: never by reference
  // Flagged formats: per slot, the LL and LL128 regions; the private staging buffer (sender:
  // the message to encode; receiver: the message decoded so far), 64-byte aligned, where the
  // stream (16-byte header: bytes, tag; then the payload) starts at kStreamOffset.
  static constexpr std::size_t kStreamOffset = 48;
  static constexpr std::size_t kHeaderBytes = 16;
  LineFormat format_ = LineFormat::simple;
  std::uint8_t* llLines_ = nullptr;
  std::uint8_t* ll128Lines_ = nullptr;
  std::size_t llStride_ = 0;
  std::size_t ll128Stride_ = 0;
  std::size_t llCap_ = 0;     // largest LL message
  std::size_t ll128Cap_ = 0;  // largest LL128 message
  std::unique_ptr<std::uint8_t[]> stagingStorage_;
  std::uint8_t* staging_ = nullptr;
  // Receiver: words (LL) or lines (LL128) of the current message decoded, how many it has (0
  // until its header is decoded), and polls that found no new flag.
  std::size_t units_ = 0;
  std::size_t unitsTotal_ = 0;
  std::uint32_t misses_ = 0;
  std::string connection_;
  // Receiver: the sender's pid once probeSender() has run (0 before).
  bool probed_ = false;
  int senderPid_ = 0;
  // Receiver: the sender's registered allocation the last message by reference lay in.
  std::shared_ptr<const PeerMapping> peerMapping_;
  std::uint64_t peerMappingId_ = 0;
};

}  // namespace chorus::transport
