// The shm transport's group segment: the state every rank process shares besides the FIFOs -
// the abort flag with the first failure's reason, and per rank the call it published and
// whether it has left cleanly.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "transport/shm/shm_segment.h"

namespace chorus::transport {

class ShmGroup {
 public:
  // Bytes of the segment for `nranks` ranks.
  static std::size_t segmentBytes(int nranks);
  // Lays out the group in a freshly created, zero-filled segment and publishes it (ready magic
  // last, release ordering).
  static void format(const ShmSegment& segment, int nranks);
  // True once `segment` has been published by format().
  static bool isReady(const ShmSegment& segment);

  // Takes a published segment; throws CommError if it was made for another group size.
  ShmGroup(ShmSegment segment, int nranks);

  // Marks the group failed. The first reason wins (a compare-and-swap on the state word, then
  // the text, then a "reason complete" state); later calls change nothing. Thread-safe.
  void abort(std::string_view reason);
  // Empty while healthy, else the first reason. One acquire load while healthy. Thread-safe.
  std::string abortReason() const;
  // True once abort() has begun. One acquire load.
  bool aborted() const;

  // Stores rank `rank`'s current call (at most 200 bytes kept) under a seqlock. Only the words
  // that differ from what this object last stored are written: consecutive calls usually
  // differ in their sequence number only (it runs on every collective call).
  void publishCall(int rank, std::string_view description);
  // ConnectionSet::publishNumberedCall(): while the shape repeats, one store of the number.
  void publishNumberedCall(int rank, std::uint64_t shapeKey, std::string_view name,
                           std::uint64_t number, std::string_view details);
  // Rank `rank`'s last published call; never torn ("" if none or if its writer died mid-way).
  std::string peerCall(int rank) const;

  // Rank `rank` finished with the group and is about to unmap it; its exit is not a failure.
  // `collectivesStarted`: how many collective calls it had made (numbered from 0), so a peer
  // waiting in a later one knows it will never come.
  void markDeparted(int rank, std::uint64_t collectivesStarted);
  bool departed(int rank) const;
  // The collectivesStarted of a departed rank; nullopt while it is in the group.
  std::optional<std::uint64_t> collectivesBeforeDeparting(int rank) const;

 private:
  struct Control;
  struct RankRecord;
  RankRecord& record(int rank) const;
  // Stores the text under the seqlock; its first `nameBytes` bytes are the call's name.
  void storeCallText(int rank, std::string_view text, std::size_t nameBytes);

  ShmSegment segment_;
  Control* control_ = nullptr;
  int nranks_ = 0;
  // What publishCall() last stored, for rank publishedRank_ (-1: nothing yet).
  static constexpr std::size_t kPublishedWords = 32;
  std::uint64_t published_[kPublishedWords] = {};
  int publishedRank_ = -1;
  std::uint64_t publishedShape_ = 0;  // the shapeKey of the text stored last (0: none)
};

}  // namespace chorus::transport
