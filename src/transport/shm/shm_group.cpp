#include "transport/shm/shm_group.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <new>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "support/error.h"
#include "transport/connections.h"

namespace chorus::transport {

namespace {

constexpr std::uint64_t kGroupMagic = 0x70757267'2d6d6873ull;  // "shm-grup"
constexpr std::uint32_t kGroupVersion = 3;
constexpr std::size_t kReasonBytes = 4096 - 128;
constexpr std::size_t kCallWords = 32;  // 256 bytes of text
constexpr std::size_t kMaxCallBytes = 200;

enum AbortState : std::uint32_t { kHealthy = 0, kWriting = 1, kComplete = 2 };

static_assert(std::atomic<std::uint32_t>::is_always_lock_free &&
                  std::atomic<std::uint64_t>::is_always_lock_free,
              "the shm group's flags must be lock-free to work across processes");

}  // namespace

struct ShmGroup::Control {
  std::atomic<std::uint64_t> magic;
  std::uint32_t version;
  std::int32_t nranks;
  alignas(64) std::atomic<std::uint32_t> abortState;
  std::uint32_t reasonBytes;  // written by the abort winner before abortState = kComplete
  char reason[kReasonBytes];
};

// One per rank, on its own cache lines. The call text is a seqlock: callSequence is odd while
// the owner writes; readers retry until they see the same even value before and after.
struct alignas(64) ShmGroup::RankRecord {
  std::atomic<std::uint32_t> callSequence;
  std::atomic<std::uint32_t> callBytes;
  std::atomic<std::uint32_t> reserved;
  // 0 while the rank is in the group; once it left, 1 + the collectives it had started.
  std::atomic<std::uint64_t> departed;
  // publishNumberedCall(): the text is the name and the details back to back, the name's
  // first callNameBytes bytes; callNumber is the call's number + 1 (0: a plain description).
  std::atomic<std::uint32_t> callNameBytes;
  std::atomic<std::uint64_t> callNumber;
  std::atomic<std::uint64_t> callText[kCallWords];
};

namespace {

template <typename Control, typename RankRecord>
std::size_t recordsOffset() {
  return roundUp(sizeof(Control), alignof(RankRecord));
}

}  // namespace

std::size_t ShmGroup::segmentBytes(int nranks) {
  return recordsOffset<Control, RankRecord>() +
         static_cast<std::size_t>(nranks) * sizeof(RankRecord);
}

void ShmGroup::format(const ShmSegment& segment, int nranks) {
  CHORUS_INTERNAL_ASSERT(segment.size() >= segmentBytes(nranks),
                         "shm group segment smaller than its layout");
  auto* control = new (segment.data()) Control{};
  control->version = kGroupVersion;
  control->nranks = nranks;
  for (int r = 0; r < nranks; ++r)
    new (segment.data() + recordsOffset<Control, RankRecord>() + r * sizeof(RankRecord))
        RankRecord{};
  control->magic.store(kGroupMagic, std::memory_order_release);
}

bool ShmGroup::isReady(const ShmSegment& segment) {
  if (segment.size() < sizeof(Control)) return false;
  return reinterpret_cast<const Control*>(segment.data())->magic.load(std::memory_order_acquire) ==
         kGroupMagic;
}

ShmGroup::ShmGroup(ShmSegment segment, int nranks) : segment_(std::move(segment)), nranks_(nranks) {
  CHORUS_INTERNAL_ASSERT(isReady(segment_), "shm group segment used before it was published");
  control_ = reinterpret_cast<Control*>(segment_.data());
  if (control_->version != kGroupVersion || control_->nranks != nranks ||
      segment_.size() < segmentBytes(nranks))
    throw CommError(fmt::format(
        "shm transport: the group segment was set up by rank 0 for {} ranks (layout version {}), "
        "but this rank was started with {} ranks (version {}); start every rank with the same "
        "number of ranks and the same chorus build",
        control_->nranks, control_->version, nranks, kGroupVersion));
}

ShmGroup::RankRecord& ShmGroup::record(int rank) const {
  CHORUS_INTERNAL_ASSERT(rank >= 0 && rank < nranks_, "shm group rank out of range");
  return reinterpret_cast<RankRecord*>(segment_.data() +
                                       recordsOffset<Control, RankRecord>())[rank];
}

void ShmGroup::abort(std::string_view reason) {
  std::uint32_t expected = kHealthy;
  if (!control_->abortState.compare_exchange_strong(expected, kWriting, std::memory_order_acquire))
    return;
  const std::size_t bytes = std::min(reason.size(), kReasonBytes);
  std::memcpy(control_->reason, reason.data(), bytes);
  if (bytes < reason.size()) std::memcpy(control_->reason + bytes - 3, "...", 3);
  control_->reasonBytes = static_cast<std::uint32_t>(bytes);
  control_->abortState.store(kComplete, std::memory_order_release);
}

bool ShmGroup::aborted() const {
  return control_->abortState.load(std::memory_order_acquire) != kHealthy;
}

std::string ShmGroup::abortReason() const {
  std::uint32_t state = control_->abortState.load(std::memory_order_acquire);
  if (state == kHealthy) return {};
  // The winner is a memcpy away from completing the text, unless it died in between.
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
  while (state != kComplete && std::chrono::steady_clock::now() < giveUp) {
    std::this_thread::yield();
    state = control_->abortState.load(std::memory_order_acquire);
  }
  if (state != kComplete)
    return "another rank aborted the group but did not finish writing why (it may have died)";
  return std::string(control_->reason, control_->reasonBytes);
}

void ShmGroup::publishCall(int rank, std::string_view description) {
  storeCallText(rank, description, description.size());
  record(rank).callNumber.store(0, std::memory_order_release);
  publishedShape_ = 0;
}

void ShmGroup::publishNumberedCall(int rank, std::uint64_t shapeKey, std::string_view name,
                                   std::uint64_t number, std::string_view details) {
  RankRecord& r = record(rank);
  if (shapeKey == 0 || shapeKey != publishedShape_ || publishedRank_ != rank) {
    char text[kCallWords * 8];
    const std::size_t nameBytes = std::min(name.size(), sizeof text);
    const std::size_t detailBytes = std::min(details.size(), sizeof text - nameBytes);
    std::memcpy(text, name.data(), nameBytes);
    std::memcpy(text + nameBytes, details.data(), detailBytes);
    storeCallText(rank, {text, nameBytes + detailBytes}, nameBytes);
    publishedShape_ = shapeKey;
  }
  // The number travels alone: one store per call. A reader may pair it with the text of the
  // call before for the few nanoseconds in between; peers read it only once a call is stuck.
  r.callNumber.store(number + 1, std::memory_order_release);
}

void ShmGroup::storeCallText(int rank, std::string_view text, std::size_t nameBytes) {
  static_assert(kCallWords <= kPublishedWords, "publishCall keeps a copy of every word");
  RankRecord& r = record(rank);
  const std::size_t bytes = std::min(text.size(), kMaxCallBytes);
  std::uint64_t words[kCallWords] = {};
  std::memcpy(words, text.data(), bytes);
  // Release stores of the text (no fences, which ThreadSanitizer does not model): a reader
  // that sees any new word also sees the odd sequence number stored before it.
  const std::uint32_t sequence = r.callSequence.load(std::memory_order_relaxed);
  r.callSequence.store(sequence + 1, std::memory_order_relaxed);
  const bool known = publishedRank_ == rank;
  for (std::size_t w = 0; w < (bytes + 7) / 8; ++w) {
    if (known && published_[w] == words[w]) continue;
    r.callText[w].store(words[w], std::memory_order_release);
    published_[w] = words[w];
  }
  publishedRank_ = rank;
  r.callBytes.store(static_cast<std::uint32_t>(bytes), std::memory_order_release);
  r.callNameBytes.store(static_cast<std::uint32_t>(std::min(nameBytes, bytes)),
                        std::memory_order_release);
  r.callSequence.store(sequence + 2, std::memory_order_release);
}

std::string ShmGroup::peerCall(int rank) const {
  const RankRecord& r = record(rank);
  std::uint64_t words[kCallWords];
  for (int attempt = 0; attempt < 10'000; ++attempt) {
    const std::uint32_t before = r.callSequence.load(std::memory_order_acquire);
    if (before & 1u) {
      std::this_thread::yield();
      continue;
    }
    const std::size_t bytes =
        std::min<std::size_t>(r.callBytes.load(std::memory_order_acquire), kMaxCallBytes);
    const std::size_t nameBytes =
        std::min<std::size_t>(r.callNameBytes.load(std::memory_order_acquire), bytes);
    for (std::size_t w = 0; w < (bytes + 7) / 8; ++w)
      words[w] = r.callText[w].load(std::memory_order_acquire);
    const std::uint64_t number = r.callNumber.load(std::memory_order_acquire);
    if (r.callSequence.load(std::memory_order_relaxed) != before) continue;
    const std::string_view text(reinterpret_cast<const char*>(words), bytes);
    if (number == 0) return std::string(text);
    char out[kMaxCallTextBytes];
    return std::string(out, formatNumberedCall(out, sizeof out, text.substr(0, nameBytes),
                                               number - 1, text.substr(nameBytes)));
  }
  return {};
}

void ShmGroup::markDeparted(int rank, std::uint64_t collectivesStarted) {
  record(rank).departed.store(collectivesStarted + 1, std::memory_order_release);
}

bool ShmGroup::departed(int rank) const {
  return record(rank).departed.load(std::memory_order_acquire) != 0;
}

std::optional<std::uint64_t> ShmGroup::collectivesBeforeDeparting(int rank) const {
  const std::uint64_t value = record(rank).departed.load(std::memory_order_acquire);
  if (value == 0) return std::nullopt;
  return value - 1;
}

}  // namespace chorus::transport
