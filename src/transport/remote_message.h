// Single copy (Fifo::commitRemote): the record of a slot whose message is a reference to the
// sender's memory. The sender publishes it `pending`; the receiver claims it (`reading`) right
// before copying it out; a sender that must change the region first claims it itself
// (`evicting`), copies the message into the slot and marks it `evicted`. Exactly one of the two
// claims wins, so the region is never read after it changed. Shared by every transport that
// offers single copy; the copy itself is theirs (memcpy, process_vm_readv).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <sys/uio.h>

#include "transport/fifo.h"

namespace chorus::transport {

// A slot's single-copy record. `state` packs the message's ticket (its 1-based sequence
// number on the FIFO) with its phase, so a late eviction of a message whose slot was already
// released and reused fails instead of touching the new message.
struct RemoteSlot {
  RemoteRegion region;
  std::atomic<std::uint64_t> state;
};

enum class RemotePhase : std::uint64_t { evicting = 0, pending = 1, reading = 2, evicted = 3 };

static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "the single-copy state word must be lock-free to work across processes");

inline std::uint64_t remoteWord(std::uint64_t ticket, RemotePhase phase) {
  return ticket << 2 | static_cast<std::uint64_t>(phase);
}

// Sender, before publishing the slot (the FIFO's release store publishes this too).
inline void publishRemoteSlot(RemoteSlot& slot, const RemoteRegion& region, std::uint64_t ticket) {
  slot.region = region;
  slot.state.store(remoteWord(ticket, RemotePhase::pending), std::memory_order_relaxed);
}

// Receiver, right before copying message `ticket`: `read` if it now owns the read of the
// sender's memory; `evicted` if the sender copied the message into the slot (visible to the
// caller now); `wait` while the sender is doing so.
inline RemoteClaim claimRemoteSlot(RemoteSlot& slot, std::uint64_t ticket) {
  std::uint64_t expected = remoteWord(ticket, RemotePhase::pending);
  if (slot.state.compare_exchange_strong(expected, remoteWord(ticket, RemotePhase::reading),
                                         std::memory_order_acq_rel, std::memory_order_acquire))
    return RemoteClaim::read;
  return expected == remoteWord(ticket, RemotePhase::evicted) ? RemoteClaim::evicted
                                                              : RemoteClaim::wait;
}

// Sender: whether message `ticket` no longer needs its region; `released` is how many messages
// the receiver has released.
inline bool remoteSlotSettled(const RemoteSlot& slot, std::uint64_t ticket,
                              std::uint64_t released) {
  if (released >= ticket) return true;
  const std::uint64_t word = slot.state.load(std::memory_order_acquire);
  return word >> 2 != ticket || word == remoteWord(ticket, RemotePhase::evicted);
}

// Sender (one thread at a time): settles message `ticket` by copying it into its slot with
// `copyIntoSlot()` unless it is settled already. False while the receiver is reading it.
template <typename CopyIntoSlot>
bool evictRemoteSlot(RemoteSlot& slot, std::uint64_t ticket, std::uint64_t released,
                     CopyIntoSlot copyIntoSlot) {
  if (remoteSlotSettled(slot, ticket, released)) return true;
  std::uint64_t expected = remoteWord(ticket, RemotePhase::pending);
  if (!slot.state.compare_exchange_strong(expected, remoteWord(ticket, RemotePhase::evicting),
                                          std::memory_order_acq_rel, std::memory_order_acquire))
    return expected >> 2 != ticket;  // reused (so released), else the receiver claimed it first
  copyIntoSlot(slot.region);
  slot.state.store(remoteWord(ticket, RemotePhase::evicted), std::memory_order_release);
  return true;
}

// Bytes from the region's address to the end of its last piece (0 for no pieces).
inline std::uint64_t regionSpan(const RemoteRegion& region) {
  return region.pieces == 0 ? 0 : (region.pieces - 1) * region.stride + region.pieceBytes;
}

// Copies bytes [offset, offset + bytes) of `region`, which lies in this address space, to `dst`.
void copyFromRegion(const RemoteRegion& region, std::size_t offset, std::uint8_t* dst,
                    std::size_t bytes);

// Copies `bytes` from `src` into bytes [offset, offset + bytes) of `region`, which lies in
// this address space.
void copyIntoRegion(const RemoteRegion& region, std::size_t offset, const std::uint8_t* src,
                    std::size_t bytes);

// Describes bytes [offset, offset + bytes) of `region` (this address space) as iovecs for
// sendmsg/recvmsg, at most `capacity` of them into `iov`; `whole` says whether they cover all.
struct RegionIovecs {
  std::size_t count = 0;
  bool whole = true;
};
RegionIovecs regionIovecs(const RemoteRegion& region, std::size_t offset, std::size_t bytes,
                          iovec* iov, std::size_t capacity);

// Walks bytes [offset, offset + bytes) of `region` as (address, length) runs in order.
template <typename Visit>
void forEachRun(const RemoteRegion& region, std::size_t offset, std::size_t bytes, Visit visit) {
  const auto pieceBytes = static_cast<std::size_t>(region.pieceBytes);
  std::size_t piece = offset / pieceBytes;
  std::size_t within = offset % pieceBytes;
  while (bytes > 0) {
    const std::size_t take = pieceBytes - within < bytes ? pieceBytes - within : bytes;
    visit(region.address + piece * region.stride + within, take);
    bytes -= take;
    within = 0;
    ++piece;
  }
}

}  // namespace chorus::transport
