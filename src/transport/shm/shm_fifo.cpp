#include "transport/shm/shm_fifo.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
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
constexpr std::uint32_t kFifoVersion = 5;
constexpr std::size_t kPageBytes = 4096;
// SlotMeta::bytes of a message by reference carries this flag.
constexpr std::uint64_t kRemoteFlag = std::uint64_t{1} << 63;
// SlotMeta::bytes of a flagged message carries its LineFormat in these bits (0: Simple), so a
// receiver expecting another format can say so instead of waiting for flags that never come.
constexpr int kFormatShift = 61;
constexpr std::uint64_t kFormatMask = std::uint64_t{3} << kFormatShift;
constexpr std::uint64_t kSizeMask = ~(kRemoteFlag | kFormatMask);

// LL: 8-byte words of 4 data bytes (low half) and the 4-byte flag (high half), one store each.
constexpr std::size_t kLlDataBytes = 4;
// LL128: 64-byte lines, 56 data bytes then the 8-byte flag, stored last. 64 bytes, not NCCL's
// 128, because 64 bytes is the x86 cache line: one line is one coherence transfer. On x86 (TSO:
// Intel SDM vol. 3A §8.2.2, "writes are not reordered with other writes", "reads are not
// reordered with other reads") plain stores in program order suffice for a reader that sees
// the flag to see the 56 bytes before it; in C++ that is a release store of the flag and an
// acquire load, which compile to plain movs there (and stay correct on weaker machines).
constexpr std::size_t kLineBytes = 64;
constexpr std::size_t kLl128DataBytes = 56;

// Bytes of the flagged region holding one message of up to `cap` bytes (header included).
std::size_t llRegionBytes(std::size_t cap) {
  return roundUp((16 + cap + kLlDataBytes - 1) / kLlDataBytes * 8, kLineBytes);
}
std::size_t ll128RegionBytes(std::size_t cap) {
  return (16 + cap + kLl128DataBytes - 1) / kLl128DataBytes * kLineBytes;
}
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

// Segment tail: after the Simple payloads, `slots` LL regions, then `slots` LL128 regions.
struct Geometry {
  std::size_t stride;
  std::size_t payloadOffset;
  std::size_t llCap;
  std::size_t ll128Cap;
  std::size_t llStride;
  std::size_t ll128Stride;
  std::size_t llOffset;
  std::size_t ll128Offset;
  std::size_t totalBytes;
};

template <typename Control, typename SlotMeta, typename SlotMapping>
Geometry geometryOf(const FifoOptions& options) {
  const auto slots = static_cast<std::size_t>(options.slots);
  Geometry g{};
  g.stride = roundUp(options.slotBytes, kPageBytes);
  g.payloadOffset =
      roundUp(sizeof(Control) + slots * (sizeof(SlotMeta) + sizeof(SlotMapping)), kPageBytes);
  g.llCap = std::min(options.slotBytes, kLlMaxMessageBytes);
  g.ll128Cap = std::min(options.slotBytes, kLl128MaxMessageBytes);
  g.llStride = llRegionBytes(g.llCap);
  g.ll128Stride = ll128RegionBytes(g.ll128Cap);
  g.llOffset = g.payloadOffset + slots * g.stride;
  g.ll128Offset = g.llOffset + slots * g.llStride;
  g.totalBytes = roundUp(g.ll128Offset + slots * g.ll128Stride, kPageBytes);
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
  llLines_ = segment_.data() + g.llOffset;
  ll128Lines_ = segment_.data() + g.ll128Offset;
  llStride_ = g.llStride;
  ll128Stride_ = g.ll128Stride;
  llCap_ = g.llCap;
  ll128Cap_ = g.ll128Cap;
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
  if (format_ != LineFormat::simple) return stream() + kHeaderBytes;
  return payload_ + sendIndex_ * stride_;
}

bool ShmFifo::acceptsRemote(std::size_t bytes) const {
  return format_ == LineFormat::simple && singleCopyBytes_ != 0 && bytes >= singleCopyBytes_ &&
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
  if (format_ != LineFormat::simple) return commitFlagged(bytes, tag);
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
  if (format_ != LineFormat::simple) return tryRecvFlagged(slot);
  const SlotMeta& meta = meta_[recvIndex_];
  if (meta.sequence.load(std::memory_order_acquire) != tail_ + 1) return false;
  if ((meta.bytes & kFormatMask) != 0) checkSentFormat(meta);
  slot->remote = (meta.bytes & kRemoteFlag) != 0;
  slot->bytes = meta.bytes & kSizeMask;
  slot->tag = meta.tag;
  slot->data = slot->remote                 ? nullptr
               : meta.bytes <= kInlineBytes ? meta.inlined
                                            : payload(recvIndex_);
  return true;
}

void ShmFifo::releaseRecv() {
  units_ = 0;
  unitsTotal_ = 0;
  ++tail_;
  if (++recvIndex_ == slots_) recvIndex_ = 0;
  control_->tail.store(tail_, std::memory_order_release);
}

// ---- Flagged formats (LL, LL128) ----------------------------------------------------------------

void ShmFifo::setLineFormat(LineFormat format) {
  if (format == format_) return;
  // A message partly decoded (by a call that failed) is read again from its start.
  units_ = 0;
  unitsTotal_ = 0;
  format_ = format;
  if (format != LineFormat::simple && staging_ == nullptr) {
    // The stream, rounded up to whole words or lines (the encoder and decoder move whole
    // units), after kStreamOffset, plus room to align the start to 64 bytes.
    const std::size_t bytes =
        kStreamOffset + kHeaderBytes + std::max(llCap_, ll128Cap_) + kLineBytes + kLineBytes;
    stagingStorage_ = std::make_unique<std::uint8_t[]>(bytes);
    staging_ = reinterpret_cast<std::uint8_t*>(
        roundUp(reinterpret_cast<std::uintptr_t>(stagingStorage_.get()), kLineBytes));
  }
}

// Algorithm (sender; the receiver mirrors it in tryRecvFlagged()):
//  1. The staged stream is the 16-byte header (bytes, tag) and the payload trySendSlot() gave.
//  2. LL: each 4 stream bytes go out as one 8-byte relaxed atomic store together with the flag
//     llFlag(sequence): data and flag arrive together, so no ordering is needed at all.
//     LL128: each 56 stream bytes are copied into a line, then its flag (the sequence) is
//     stored with release ordering.
//     Both go from the last unit to the first: the receiver polls the first unit, and finds
//     the rest there too when it arrives (TSO keeps stores in order; elsewhere each unit's own
//     flag is still checked). Front to back, a receiver polling from the front chases the
//     writer, and a line can cross between the cores several times while it is written (on
//     the 2-core VM the difference was within its noise: docs/performance.md, "LL and LL128
//     on shm").
//  3. The slot's metadata line gets the size and format (for mismatch reports only; the
//     receiver does not read it while flags keep arriving).
void ShmFifo::commitFlagged(std::size_t bytes, std::uint64_t tag) {
  const std::size_t cap = format_ == LineFormat::ll ? llCap_ : ll128Cap_;
  CHORUS_INTERNAL_ASSERT(bytes <= cap, "flagged message larger than its format carries");
  std::uint8_t* const s = stream();
  const std::uint64_t header[2] = {bytes, tag};
  std::memcpy(s, header, kHeaderBytes);
  const std::uint64_t sequence = head_ + 1;
  if (format_ == LineFormat::ll) {
    auto* words = reinterpret_cast<std::uint64_t*>(llLines_ + sendIndex_ * llStride_);
    const std::uint64_t flag = std::uint64_t{llFlag(sequence)} << 32;
    const std::size_t n = (kHeaderBytes + bytes + kLlDataBytes - 1) / kLlDataBytes;
    for (std::size_t i = n; i-- > 0;) {
      std::uint32_t data;
      std::memcpy(&data, s + i * kLlDataBytes, kLlDataBytes);
      std::atomic_ref<std::uint64_t>(words[i]).store(flag | data, std::memory_order_relaxed);
    }
  } else {
    std::uint8_t* lines = ll128Lines_ + sendIndex_ * ll128Stride_;
    const std::size_t n = (kHeaderBytes + bytes + kLl128DataBytes - 1) / kLl128DataBytes;
    for (std::size_t i = n; i-- > 0;) {
      std::uint8_t* line = lines + i * kLineBytes;
      std::memcpy(line, s + i * kLl128DataBytes, kLl128DataBytes);
      std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(line + kLl128DataBytes))
          .store(sequence, std::memory_order_release);
    }
  }
  SlotMeta& meta = meta_[sendIndex_];
  meta.bytes = bytes | (std::uint64_t{static_cast<std::uint8_t>(format_)} << kFormatShift);
  meta.tag = tag;
  ++head_;
  if (++sendIndex_ == slots_) sendIndex_ = 0;
  meta.sequence.store(head_, std::memory_order_release);
}

bool ShmFifo::tryRecvFlagged(RecvSlot* slot) {
  std::uint8_t* const s = stream();
  const std::uint64_t sequence = tail_ + 1;
  // Units of the header; the header says how many the message has.
  const std::size_t unitBytes = format_ == LineFormat::ll ? kLlDataBytes : kLl128DataBytes;
  const std::size_t headerUnits = (kHeaderBytes + unitBytes - 1) / unitBytes;
  const std::size_t wanted = unitsTotal_ != 0 ? unitsTotal_ : headerUnits;
  bool complete = true;
  if (format_ == LineFormat::ll) {
    auto* words = reinterpret_cast<std::uint64_t*>(llLines_ + recvIndex_ * llStride_);
    const std::uint32_t flag = llFlag(sequence);
    for (; units_ < wanted; ++units_) {
      const std::uint64_t word =
          std::atomic_ref<std::uint64_t>(words[units_]).load(std::memory_order_relaxed);
      if (static_cast<std::uint32_t>(word >> 32) != flag) {
        complete = false;
        break;
      }
      const auto data = static_cast<std::uint32_t>(word);
      std::memcpy(s + units_ * kLlDataBytes, &data, kLlDataBytes);
    }
  } else {
    std::uint8_t* lines = ll128Lines_ + recvIndex_ * ll128Stride_;
    for (; units_ < wanted; ++units_) {
      const std::uint8_t* line = lines + units_ * kLineBytes;
      if (std::atomic_ref<std::uint64_t>(
              *reinterpret_cast<std::uint64_t*>(lines + units_ * kLineBytes + kLl128DataBytes))
              .load(std::memory_order_acquire) != sequence) {
        complete = false;
        break;
      }
      std::memcpy(s + units_ * kLl128DataBytes, line, kLl128DataBytes);
    }
  }
  if (!complete) {
    // Now and then, whether the sender wrote this message in another format (its metadata
    // line is written after the lines; reading it on every poll would pull it from the sender).
    if ((++misses_ & 63) == 0 &&
        meta_[recvIndex_].sequence.load(std::memory_order_acquire) == sequence)
      checkSentFormat(meta_[recvIndex_]);
    return false;
  }
  std::uint64_t header[2];
  std::memcpy(header, s, kHeaderBytes);
  if (unitsTotal_ == 0) {
    const std::size_t cap = format_ == LineFormat::ll ? llCap_ : ll128Cap_;
    if (header[0] > cap)
      throw CommError(fmt::format(
          "shm transport: message {} on {} says it holds {} bytes, more than an {} message "
          "carries ({}); the peer runs another chorus build",
          sequence, connection_, header[0], lineFormatName(format_), cap));
    unitsTotal_ =
        std::max<std::size_t>(headerUnits, (kHeaderBytes + header[0] + unitBytes - 1) / unitBytes);
    if (units_ < unitsTotal_) return tryRecvFlagged(slot);  // the rest may be there already
  }
  slot->data = s + kHeaderBytes;
  slot->bytes = header[0];
  slot->tag = header[1];
  slot->remote = false;
  slot->delivered = false;
  return true;
}

void ShmFifo::checkSentFormat(const SlotMeta& meta) const {
  const auto sent = static_cast<LineFormat>((meta.bytes & kFormatMask) >> kFormatShift);
  if (sent == format_) return;
  throw CommError(fmt::format(
      "shm transport: message {} on {} was sent in the {} format but this end receives {}; the "
      "ranks run plans with different protocols: give every rank the same plan (the same "
      "CHORUS_ALGO, plan files and protocol setting)",
      tail_ + 1, connection_, lineFormatName(sent), lineFormatName(format_)));
}

}  // namespace chorus::transport
