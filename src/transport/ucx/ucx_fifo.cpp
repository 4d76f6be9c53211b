#include "transport/ucx/ucx_fifo.h"

#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "support/error.h"

namespace chorus::transport {
namespace {

// How long unpost() waits for a rendezvous fetch into a posted region (it cannot be cancelled).
constexpr auto kUnpostLimit = std::chrono::seconds(5);

}  // namespace

UcxSendFifo::UcxSendFifo(UcxFifoOwner& owner, int peer, int channel, const FifoOptions& options)
    : UcxSlotRing(owner, peer, channel, options),
      headers_(static_cast<std::size_t>(options.slots)),
      sends_(std::make_unique<UcxSlotSend[]>(static_cast<std::size_t>(options.slots))) {
  for (std::uint64_t s = 0; s < slots_; ++s) {
    sends_[s].owner = &owner;
    sends_[s].peer = peer;
  }
}

std::uint8_t* UcxSendFifo::trySendSlot() {
  const std::uint64_t next = next_.load(std::memory_order_relaxed);
  const std::uint64_t s = next % slots_;
  if (next - credited_.load(std::memory_order_acquire) >= slots_ ||
      sends_[s].busy.load(std::memory_order_acquire)) {
    owner_.poke();
    if (next - credited_.load(std::memory_order_acquire) >= slots_ ||
        sends_[s].busy.load(std::memory_order_acquire))
      return nullptr;
  }
  return slotAt(s);
}

std::uint64_t UcxSendFifo::nextHeader(std::uint64_t tag) {
  const std::uint64_t next = next_.load(std::memory_order_relaxed);
  const std::uint64_t s = next % slots_;
  UcxRecvFifo* back = back_.load(std::memory_order_acquire);
  headers_[s] = {static_cast<std::uint32_t>(owner_.fifoRank()),
                 static_cast<std::uint32_t>(channel_),
                 tag,
                 owner_.currentCall(),
                 next,
                 back != nullptr ? back->takeCredits() : 0};
  next_.store(next + 1, std::memory_order_release);
  return s;
}

void UcxSendFifo::commitSend(std::size_t bytes, std::uint64_t tag) {
  CHORUS_INTERNAL_ASSERT(bytes <= slotBytes_, "ucx commit larger than a slot");
  const std::uint64_t s = nextHeader(tag);
  owner_.sendData(peer_, &headers_[s], slotAt(s), bytes, nullptr, &sends_[s]);
}

std::uint64_t UcxSendFifo::commitRemote(const RemoteRegion& region, std::uint64_t tag) {
  CHORUS_INTERNAL_ASSERT(region.bytes() <= slotBytes_, "ucx message by reference beyond a slot");
  const std::uint64_t s = nextHeader(tag);
  owner_.sendData(peer_, &headers_[s], nullptr, 0, &region, &sends_[s]);
  return headers_[s].seq + 1;
}

bool UcxSendFifo::evictRemote(std::uint64_t ticket) {
  if (remoteSettled(ticket)) return true;
  owner_.poke();
  return remoteSettled(ticket);
}

UcxRecvFifo::UcxRecvFifo(UcxFifoOwner& owner, int peer, int channel, const FifoOptions& options)
    : UcxSlotRing(owner, peer, channel, options),
      meta_(static_cast<std::size_t>(options.slots)),
      posts_(static_cast<std::size_t>(options.slots)),
      claimed_(static_cast<std::size_t>(options.slots), 0),
      ready_(
          std::make_unique<std::atomic<std::uint64_t>[]>(static_cast<std::size_t>(options.slots))) {
  for (std::uint64_t s = 0; s < slots_; ++s)
    ready_[s].store(0, std::memory_order_relaxed);
}

std::string UcxRecvFifo::land(std::uint64_t seq, std::size_t bytes, std::uint64_t tag,
                              std::uint8_t** at, const RemoteRegion** post) {
  if (bytes > slotBytes_)
    return fmt::format("a {}-byte message from rank {} on channel {}, larger than a {}-byte slot",
                       bytes, peer_, channel_, slotBytes_);
  const std::uint64_t consumed = consumed_.load(std::memory_order_acquire);
  const std::uint64_t s = seq % slots_;
  if (seq < consumed || seq >= consumed + slots_ || claimed_[s] == seq + 1)
    return fmt::format(
        "message #{} from rank {} on channel {}, outside its credits (messages "
        "#{} to #{}) or seen before",
        seq, peer_, channel_, consumed, consumed + slots_ - 1);
  claimed_[s] = seq + 1;
  meta_[s] = {bytes, tag, false, {}, nullptr};
  *at = slotAt(s);
  Post& posted = posts_[s];
  *post = nullptr;
  if (posted.active && posted.seq == seq && posted.tag == tag && posted.region.bytes() == bytes) {
    meta_[s].region = posted.region;
    *post = &meta_[s].region;
  }
  posted.active = false;
  return {};
}

void UcxRecvFifo::landed(std::uint64_t seq, bool delivered) {
  meta_[seq % slots_].delivered = delivered;
  ready_[seq % slots_].store(seq + 1, std::memory_order_release);
}

bool UcxRecvFifo::postRecv(const RemoteRegion& region, std::uint64_t tag, std::size_t ahead) {
  if (ahead >= slots_) return false;
  std::lock_guard lock(owner_.workerMutex());
  const std::uint64_t seq = consumed_.load(std::memory_order_acquire) + ahead;
  const std::uint64_t s = seq % slots_;
  if (claimed_[s] == seq + 1) return true;  // it arrived already: it lands in its slot
  posts_[s] = {region, tag, seq, true};
  return true;
}

void UcxRecvFifo::unpost() {
  std::lock_guard lock(owner_.workerMutex());
  for (Post& post : posts_)
    post.active = false;
  const auto deadline = std::chrono::steady_clock::now() + kUnpostLimit;
  while (fetchingIntoPosts > 0 && std::chrono::steady_clock::now() < deadline)
    owner_.progressWorkerLocked();
  // Messages already in their regions but not yet received move to their slots.
  const std::uint64_t consumed = consumed_.load(std::memory_order_acquire);
  for (std::uint64_t seq = consumed; seq < consumed + slots_; ++seq) {
    Meta& meta = meta_[seq % slots_];
    if (ready_[seq % slots_].load(std::memory_order_acquire) != seq + 1 || !meta.delivered)
      continue;
    std::uint8_t* to = slotAt(seq);
    for (std::uint32_t i = 0; i < meta.region.pieces; ++i, to += meta.region.pieceBytes)
      std::memcpy(to, reinterpret_cast<const void*>(meta.region.address + i * meta.region.stride),
                  meta.region.pieceBytes);
    meta.delivered = false;
  }
}

bool UcxRecvFifo::tryRecvSlot(RecvSlot* slot) {
  const std::uint64_t seq = consumed_.load(std::memory_order_relaxed);
  const std::uint64_t s = seq % slots_;
  if (ready_[s].load(std::memory_order_acquire) != seq + 1) {
    owner_.poke();
    if (ready_[s].load(std::memory_order_acquire) != seq + 1) return false;
  }
  slot->delivered = meta_[s].delivered;
  slot->data = slot->delivered ? nullptr
               : meta_[s].held ? static_cast<const std::uint8_t*>(meta_[s].held)
                               : slotAt(s);
  slot->bytes = meta_[s].bytes;
  slot->tag = meta_[s].tag;
  slot->remote = false;
  return true;
}

void UcxRecvFifo::releaseRecv() {
  if (void*& held = meta_[consumed_.load(std::memory_order_relaxed) % slots_].held) {
    owner_.releaseData(held);
    held = nullptr;
  }
  consumed_.fetch_add(1, std::memory_order_acq_rel);
  const std::uint64_t pending = pendingCredits_.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (pending * 2 >= slots_)
    owner_.creditNow(*this);
  else if (pending == 1)
    owner_.creditLater(*this);
}

}  // namespace chorus::transport
