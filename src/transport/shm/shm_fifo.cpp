#include "transport/shm/shm_fifo.h"

#include <atomic>
#include <cstring>
#include <new>

#include <fmt/format.h>

#include "support/error.h"
#include "support/size.h"

namespace chorus::transport {

namespace {

constexpr std::uint64_t kFifoMagic = 0x6f6669662d6d6873ull;  // "shm-fifo"
constexpr std::uint32_t kFifoVersion = 2;
constexpr std::size_t kPageBytes = 4096;

static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "the shm FIFO counters must be lock-free to work across processes");

}  // namespace

// Segment layout: this header, then `slots` SlotMeta (one cache line each), then the payloads,
// each starting on a 4096-byte boundary. tail = slots released by the receiver, on its own
// cache line.
struct ShmFifo::Control {
  std::atomic<std::uint64_t> magic;
  std::uint32_t version;
  std::uint32_t slots;
  std::uint64_t slotBytes;
  std::uint64_t stride;
  std::uint64_t payloadOffset;
  alignas(64) std::atomic<std::uint64_t> tail;
};

// Written by the sender; `sequence` last, with release ordering: it becomes k + 1 when message
// number k is in the slot, so the receiver polls this one line and finds the size, the tag
// and (for messages of up to kInlineBytes) the payload in it - one cache-line transfer for a
// small message instead of three (counter, metadata, payload).
struct alignas(64) ShmFifo::SlotMeta {
  std::atomic<std::uint64_t> sequence;
  std::uint64_t bytes;
  std::uint64_t tag;
  std::uint8_t inlined[kInlineBytes];
};

namespace {

struct Geometry {
  std::size_t stride;
  std::size_t payloadOffset;
  std::size_t totalBytes;
};

template <typename Control, typename SlotMeta>
Geometry geometryOf(const FifoOptions& options) {
  const auto slots = static_cast<std::size_t>(options.slots);
  Geometry g{};
  g.stride = roundUp(options.slotBytes, kPageBytes);
  g.payloadOffset = roundUp(sizeof(Control) + slots * sizeof(SlotMeta), kPageBytes);
  g.totalBytes = g.payloadOffset + slots * g.stride;
  return g;
}

}  // namespace

std::size_t ShmFifo::segmentBytes(const FifoOptions& options) {
  static_assert(sizeof(SlotMeta) == 64 && sizeof(Control) % 64 == 0,
                "each slot's metadata must fill exactly one cache line");
  return geometryOf<Control, SlotMeta>(options).totalBytes;
}

void ShmFifo::format(const ShmSegment& segment, const FifoOptions& options) {
  const Geometry g = geometryOf<Control, SlotMeta>(options);
  CHORUS_INTERNAL_ASSERT(segment.size() >= g.totalBytes,
                         "shm FIFO segment smaller than its layout");
  auto* control = new (segment.data()) Control{};
  control->version = kFifoVersion;
  control->slots = static_cast<std::uint32_t>(options.slots);
  control->slotBytes = options.slotBytes;
  control->stride = g.stride;
  control->payloadOffset = g.payloadOffset;
  control->tail.store(0, std::memory_order_relaxed);
  for (int s = 0; s < options.slots; ++s)
    new (segment.data() + sizeof(Control) + s * sizeof(SlotMeta)) SlotMeta{};
  control->magic.store(kFifoMagic, std::memory_order_release);
}

bool ShmFifo::isReady(const ShmSegment& segment) {
  if (segment.size() < sizeof(Control)) return false;
  return reinterpret_cast<const Control*>(segment.data())->magic.load(std::memory_order_acquire) ==
         kFifoMagic;
}

ShmFifo::ShmFifo(ShmSegment segment, const FifoOptions& options, const std::string& connection,
                 const std::string& settings)
    : segment_(std::move(segment)) {
  CHORUS_INTERNAL_ASSERT(isReady(segment_), "shm FIFO segment used before it was published");
  control_ = reinterpret_cast<Control*>(segment_.data());
  const Geometry g = geometryOf<Control, SlotMeta>(options);
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
  payload_ = segment_.data() + g.payloadOffset;
  slots_ = static_cast<std::uint64_t>(options.slots);
  slotBytes_ = options.slotBytes;
  stride_ = g.stride;
  // Each end is opened once per process (prefixes are unique per communicator), so this
  // process's end starts at message 0; only the receiver's progress is shared.
  cachedTail_ = control_->tail.load(std::memory_order_acquire);
}

std::uint8_t* ShmFifo::trySendSlot() {
  if (head_ - cachedTail_ >= slots_) {
    cachedTail_ = control_->tail.load(std::memory_order_acquire);
    if (head_ - cachedTail_ >= slots_) return nullptr;
  }
  return payload_ + sendIndex_ * stride_;
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
  const SlotMeta& meta = meta_[recvIndex_];
  if (meta.sequence.load(std::memory_order_acquire) != tail_ + 1) return false;
  slot->bytes = meta.bytes;
  slot->tag = meta.tag;
  slot->data = meta.bytes <= kInlineBytes ? meta.inlined : payload_ + recvIndex_ * stride_;
  return true;
}

void ShmFifo::releaseRecv() {
  ++tail_;
  if (++recvIndex_ == slots_) recvIndex_ = 0;
  control_->tail.store(tail_, std::memory_order_release);
}

}  // namespace chorus::transport
