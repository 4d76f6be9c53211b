#include "transport/shm/shm_fifo.h"

#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <system_error>

#include <fmt/format.h>

#include "support/error.h"
#include "support/size.h"
#include "transport/remote_message.h"

namespace chorus::transport {

namespace {

constexpr std::uint64_t kFifoMagic = 0x6f6669662d6d6873ull;  // "shm-fifo"
constexpr std::uint32_t kFifoVersion = 4;
constexpr std::size_t kPageBytes = 4096;
// SlotMeta::bytes of a message by reference carries this flag.
constexpr std::uint64_t kRemoteFlag = std::uint64_t{1} << 63;
// The word a receiver reads from the sender's memory to prove it may (probeSender()).
constexpr std::uint64_t kProbeMagic = 0x65626f72702d616dull;  // "ma-probe"
const volatile std::uint64_t senderProbeWord = kProbeMagic;

enum : std::uint32_t { kRemoteUnknown = 0, kRemoteReadable = 1, kRemoteUnreadable = 2 };

static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "the shm FIFO counters must be lock-free to work across processes");

}  // namespace

// Segment layout: this header, then `slots` SlotMeta (one cache line each), `slots`
// SlotMapping, then the payloads, each starting on a 4096-byte boundary. tail = slots released
// by the receiver, on its own cache line. The sending end publishes its pid and the address of
// senderProbeWord; the receiving end says whether it could read that word (single copy), on a line
// of their own.
struct ShmFifo::Control {
  std::atomic<std::uint64_t> magic;
  std::uint32_t version;
  std::uint32_t slots;
  std::uint64_t slotBytes;
  std::uint64_t stride;
  std::uint64_t payloadOffset;
  alignas(64) std::atomic<std::uint64_t> tail;
  alignas(64) std::atomic<std::int64_t> senderPid;
  std::atomic<std::uint64_t> senderProbe;
  std::atomic<std::uint32_t> remoteReadable;
};

// Written by the sender; `sequence` last, with release ordering: it becomes k + 1 when message
// number k is in the slot, so the receiver polls this one line and finds the size, the tag
// and (for messages of up to kInlineBytes) the payload in it - one cache-line transfer for a
// small message instead of three (counter, metadata, payload). A message by reference keeps
// its RemoteSlot there instead.
struct alignas(64) ShmFifo::SlotMeta {
  std::atomic<std::uint64_t> sequence;
  std::uint64_t bytes;  // | kRemoteFlag for a message by reference
  std::uint64_t tag;
  alignas(8) std::uint8_t inlined[kInlineBytes];

  RemoteSlot& remote() { return *std::launder(reinterpret_cast<RemoteSlot*>(inlined)); }
};

static_assert(sizeof(RemoteSlot) <= 40 && alignof(RemoteSlot) <= 8,
              "a slot's single-copy record must fit its metadata line");

// A message by reference in registered memory: the allocation holding it (fd < 0: none).
// Written before the slot's sequence, on a line the small-message path never touches.
struct ShmFifo::SlotMapping {
  std::int32_t fd;
  std::uint64_t id;
  std::uint64_t base;
  std::uint64_t bytes;
};

ShmFifo::SlotMapping* ShmFifo::mappingsOf(std::uint8_t* segment, int slots) {
  return reinterpret_cast<SlotMapping*>(segment + sizeof(Control) +
                                        static_cast<std::size_t>(slots) * sizeof(SlotMeta));
}

namespace {

struct Geometry {
  std::size_t stride;
  std::size_t payloadOffset;
  std::size_t totalBytes;
};

template <typename Control, typename SlotMeta, typename SlotMapping>
Geometry geometryOf(const FifoOptions& options) {
  const auto slots = static_cast<std::size_t>(options.slots);
  Geometry g{};
  g.stride = roundUp(options.slotBytes, kPageBytes);
  g.payloadOffset =
      roundUp(sizeof(Control) + slots * (sizeof(SlotMeta) + sizeof(SlotMapping)), kPageBytes);
  g.totalBytes = g.payloadOffset + slots * g.stride;
  return g;
}

}  // namespace

std::size_t ShmFifo::segmentBytes(const FifoOptions& options) {
  static_assert(sizeof(SlotMeta) == 64 && sizeof(Control) % 64 == 0,
                "each slot's metadata must fill exactly one cache line");
  return geometryOf<Control, SlotMeta, SlotMapping>(options).totalBytes;
}

void ShmFifo::format(const ShmSegment& segment, const FifoOptions& options) {
  const Geometry g = geometryOf<Control, SlotMeta, SlotMapping>(options);
  CHORUS_INTERNAL_ASSERT(segment.size() >= g.totalBytes,
                         "shm FIFO segment smaller than its layout");
  auto* control = new (segment.data()) Control{};
  control->version = kFifoVersion;
  control->slots = static_cast<std::uint32_t>(options.slots);
  control->slotBytes = options.slotBytes;
  control->stride = g.stride;
  control->payloadOffset = g.payloadOffset;
  control->tail.store(0, std::memory_order_relaxed);
  control->senderPid.store(0, std::memory_order_relaxed);
  control->senderProbe.store(0, std::memory_order_relaxed);
  control->remoteReadable.store(kRemoteUnknown, std::memory_order_relaxed);
  for (int s = 0; s < options.slots; ++s)
    new (segment.data() + sizeof(Control) + s * sizeof(SlotMeta)) SlotMeta{};
  for (int s = 0; s < options.slots; ++s)
    new (mappingsOf(segment.data(), options.slots) + s) SlotMapping{-1, 0, 0, 0};
  control->magic.store(kFifoMagic, std::memory_order_release);
}

bool ShmFifo::isReady(const ShmSegment& segment) {
  if (segment.size() < sizeof(Control)) return false;
  return reinterpret_cast<const Control*>(segment.data())->magic.load(std::memory_order_acquire) ==
         kFifoMagic;
}

ShmFifo::ShmFifo(ShmSegment segment, const FifoOptions& options, const std::string& connection,
                 const std::string& settings, bool sender, bool singleCopy)
    : segment_(std::move(segment)), connection_(connection) {
  CHORUS_INTERNAL_ASSERT(isReady(segment_), "shm FIFO segment used before it was published");
  control_ = reinterpret_cast<Control*>(segment_.data());
  const Geometry g = geometryOf<Control, SlotMeta, SlotMapping>(options);
  if (control_->version != kFifoVersion ||
      control_->slots != static_cast<std::uint32_t>(options.slots) ||
      control_->slotBytes != options.slotBytes || control_->stride != g.stride ||
      control_->payloadOffset != g.payloadOffset || segment_.size() < g.totalBytes)
    throw CommError(fmt::format(
        "shm transport: the FIFO {} was set up by the peer with {} slots of {} (layout version "
        "{}), but this rank uses {} slots of {} (version {}); every rank must use the same {} "
        "and the same chorus build",
        connection, control_->slots, formatSize(control_->slotBytes), control_->version,
        options.slots, formatSize(options.slotBytes), kFifoVersion, settings));
  meta_ = reinterpret_cast<SlotMeta*>(segment_.data() + sizeof(Control));
  mappings_ = mappingsOf(segment_.data(), options.slots);
  payload_ = segment_.data() + g.payloadOffset;
  slots_ = static_cast<std::uint64_t>(options.slots);
  slotBytes_ = options.slotBytes;
  stride_ = g.stride;
  // Each end is opened once per process (prefixes are unique per communicator), so this
  // process's end starts at message 0; only the receiver's progress is shared.
  cachedTail_ = control_->tail.load(std::memory_order_acquire);
  if (!singleCopy || options.singleCopyBytes == 0) {
    // This end never sends by reference, or refuses to read by reference.
    if (!sender) control_->remoteReadable.store(kRemoteUnreadable, std::memory_order_release);
    probed_ = true;
  } else if (sender) {
    singleCopyBytes_ = options.singleCopyBytes;
    control_->senderProbe.store(reinterpret_cast<std::uintptr_t>(&senderProbeWord),
                                std::memory_order_relaxed);
    control_->senderPid.store(static_cast<std::int64_t>(::getpid()), std::memory_order_release);
  }
}

// Receiver: once the sender has published its pid, reads its probe word through
// process_vm_readv, and tells the sender whether that worked (then it may send by reference).
void ShmFifo::probeSender() {
  const std::int64_t pid = control_->senderPid.load(std::memory_order_acquire);
  if (pid == 0) return;  // the sending end is not open yet
  probed_ = true;
  std::uint64_t word = 0;
  iovec local{&word, sizeof word};
  iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(
                   control_->senderProbe.load(std::memory_order_relaxed))),
               sizeof word};
  const bool readable = ::process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0) ==
                            static_cast<ssize_t>(sizeof word) &&
                        word == kProbeMagic;
  senderPid_ = static_cast<int>(pid);
  control_->remoteReadable.store(readable ? kRemoteReadable : kRemoteUnreadable,
                                 std::memory_order_release);
}

std::uint8_t* ShmFifo::trySendSlot() {
  if (head_ - cachedTail_ >= slots_) {
    cachedTail_ = control_->tail.load(std::memory_order_acquire);
    if (head_ - cachedTail_ >= slots_) return nullptr;
  }
  return payload_ + sendIndex_ * stride_;
}

bool ShmFifo::acceptsRemote(std::size_t bytes) const {
  return singleCopyBytes_ != 0 && bytes >= singleCopyBytes_ &&
         control_->remoteReadable.load(std::memory_order_acquire) == kRemoteReadable;
}

std::uint64_t ShmFifo::commitRemote(const RemoteRegion& region, std::uint64_t tag) {
  CHORUS_INTERNAL_ASSERT(region.bytes() <= slotBytes_, "message by reference larger than a slot");
  SlotMeta& meta = meta_[sendIndex_];
  meta.bytes = region.bytes() | kRemoteFlag;
  meta.tag = tag;
  publishRemoteSlot(*new (meta.inlined) RemoteSlot, region, head_ + 1);
  SlotMapping& mapping = mappings_[sendIndex_];
  if (const auto range = findRegistered(region.address, regionSpan(region)))
    mapping = SlotMapping{range->fd, range->id, range->base, range->bytes};
  else
    mapping.fd = -1;
  ++head_;
  if (++sendIndex_ == slots_) sendIndex_ = 0;
  meta.sequence.store(head_, std::memory_order_release);
  return head_;
}

bool ShmFifo::remoteSettled(std::uint64_t ticket) const {
  return remoteSlotSettled(meta_[(ticket - 1) % slots_].remote(), ticket,
                           control_->tail.load(std::memory_order_acquire));
}

bool ShmFifo::evictRemote(std::uint64_t ticket) {
  const std::uint64_t index = (ticket - 1) % slots_;
  return evictRemoteSlot(meta_[index].remote(), ticket,
                         control_->tail.load(std::memory_order_acquire),
                         [&](const RemoteRegion& region) {
                           copyFromRegion(region, 0, payload(index), region.bytes());
                         });
}

RemoteClaim ShmFifo::claimRemote(RecvSlot* slot) {
  const RemoteClaim claim = claimRemoteSlot(meta_[recvIndex_].remote(), tail_ + 1);
  if (claim == RemoteClaim::evicted) {
    slot->remote = false;
    slot->data = payload(recvIndex_);
  }
  return claim;
}

void ShmFifo::readRemote(std::uint8_t* dst, std::size_t offset, std::size_t bytes) {
  const RemoteRegion& region = meta_[recvIndex_].remote().region;
  CHORUS_INTERNAL_ASSERT(offset + bytes <= region.bytes(), "read past a message by reference");
  constexpr std::size_t kBatch = 64;
  iovec remote[kBatch];
  std::size_t runs = 0;
  std::size_t batchBytes = 0;
  auto flush = [&] {
    iovec local{dst, batchBytes};
    std::size_t done = 0;
    while (done < batchBytes) {
      const ssize_t got = ::process_vm_readv(senderPid_, &local, 1, remote, runs, 0);
      if (got <= 0)
        throw CommError(fmt::format(
            "shm transport: copying a message on {} out of the sender's memory (pid {}) failed: "
            "{}; the sender has probably exited",
            connection_, senderPid_,
            got == 0 ? "nothing was copied"
                     : std::error_code(errno, std::generic_category()).message()));
      done += static_cast<std::size_t>(got);
      if (done < batchBytes) {  // partial: skip what arrived and go again
        std::size_t skip = static_cast<std::size_t>(got);
        std::size_t first = 0;
        while (skip >= remote[first].iov_len)
          skip -= remote[first++].iov_len;
        remote[first].iov_base = static_cast<std::uint8_t*>(remote[first].iov_base) + skip;
        remote[first].iov_len -= skip;
        std::memmove(remote, remote + first, (runs - first) * sizeof(iovec));
        runs -= first;
        local.iov_base = dst + done;
        local.iov_len = batchBytes - done;
      }
    }
    dst += batchBytes;
    runs = 0;
    batchBytes = 0;
  };
  forEachRun(region, offset, bytes, [&](std::uint64_t address, std::size_t length) {
    remote[runs++] = iovec{reinterpret_cast<void*>(static_cast<std::uintptr_t>(address)), length};
    batchBytes += length;
    if (runs == kBatch) flush();
  });
  if (runs > 0) flush();
}

bool ShmFifo::mapsRemote(const RemoteRegion& region) const {
  return singleCopyBytes_ != 0 &&
         control_->remoteReadable.load(std::memory_order_acquire) == kRemoteReadable &&
         findRegistered(region.address, regionSpan(region)).has_value();
}

const std::uint8_t* ShmFifo::remoteData(std::size_t offset, std::size_t bytes) {
  const SlotMapping& mapping = mappings_[recvIndex_];
  if (mapping.fd < 0) return nullptr;
  const RemoteRegion& region = meta_[recvIndex_].remote().region;
  const std::size_t piece = offset / region.pieceBytes;
  const std::size_t within = offset % region.pieceBytes;
  if (within + bytes > region.pieceBytes) return nullptr;  // not one run
  if (peerMappingId_ != mapping.id || peerMapping_ == nullptr) {
    peerMapping_ = mapPeerAllocation(
        senderPid_, RegisteredRange{mapping.fd, mapping.id, mapping.base, mapping.bytes});
    peerMappingId_ = mapping.id;
    if (peerMapping_ == nullptr) return nullptr;
  }
  const std::uint64_t address = region.address + piece * region.stride + within;
  CHORUS_INTERNAL_ASSERT(address >= mapping.base && address + bytes <= mapping.base + mapping.bytes,
                         "a message by reference outside its registered allocation");
  countMappedRead();
  return peerMapping_->data() + (address - mapping.base);
}

void ShmFifo::commitSend(std::size_t bytes, std::uint64_t tag) {
  CHORUS_INTERNAL_ASSERT(bytes <= slotBytes_, "message larger than a FIFO slot");
  SlotMeta& meta = meta_[sendIndex_];
  meta.bytes = bytes;
  meta.tag = tag;
  if (bytes <= kInlineBytes) std::memcpy(meta.inlined, payload_ + sendIndex_ * stride_, bytes);
  ++head_;
  if (++sendIndex_ == slots_) sendIndex_ = 0;
  meta.sequence.store(head_, std::memory_order_release);
}

bool ShmFifo::tryRecvSlot(RecvSlot* slot) {
  if (!probed_) probeSender();
  const SlotMeta& meta = meta_[recvIndex_];
  if (meta.sequence.load(std::memory_order_acquire) != tail_ + 1) return false;
  slot->remote = (meta.bytes & kRemoteFlag) != 0;
  slot->bytes = meta.bytes & ~kRemoteFlag;
  slot->tag = meta.tag;
  slot->data = slot->remote                 ? nullptr
               : meta.bytes <= kInlineBytes ? meta.inlined
                                            : payload(recvIndex_);
  return true;
}

void ShmFifo::releaseRecv() {
  ++tail_;
  if (++recvIndex_ == slots_) recvIndex_ = 0;
  control_->tail.store(tail_, std::memory_order_release);
}

}  // namespace chorus::transport
