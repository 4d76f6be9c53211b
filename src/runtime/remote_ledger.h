// The messages one rank has sent by reference (single copy, Fifo::commitRemote) and not yet seen
// settled: their regions of this rank's buffers must not change until the receiver has copied
// them out. A step about to write such a region first evicts the message into its slot (one
// extra copy, only in that case); the call returns only once every message has settled, since
// the buffers are the caller's again after it. Shared by a rank's executor threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "transport/fifo.h"

namespace chorus::runtime {

class RemoteLedger {
 public:
  bool empty() const { return size_.load(std::memory_order_acquire) == 0; }

  void add(transport::Fifo& fifo, std::uint64_t ticket, const transport::RemoteRegion& region);

  // Whether `write` (pieces of this rank's memory a step is about to write) may change now:
  // messages whose regions overlap it are dropped once settled, or (with `evict`) evicted.
  // False while such a message is unsettled and not evicted (try again later): receivers
  // usually copy it soon, and an eviction costs a copy, so callers evict only when stuck.
  bool clearForWrite(const transport::RemoteRegion& write, bool evict);

  // Drops settled messages; true when none is left.
  bool settle();

  // After a failure: evicts what nobody is reading and waits (at most `patienceMs`) for the
  // reads in progress, so no peer copies a buffer the caller may free or change.
  void abandon(int patienceMs);

  // Messages evicted so far (each cost one extra copy).
  std::uint64_t evictions() const { return evictions_; }

 private:
  struct Entry {
    transport::Fifo* fifo;
    std::uint64_t ticket;
    transport::RemoteRegion region;
  };

  std::mutex mutex_;
  std::vector<Entry> entries_;
  std::atomic<std::size_t> size_{0};
  std::uint64_t evictions_ = 0;
};

// Whether two sets of pieces share a byte.
bool regionsOverlap(const transport::RemoteRegion& a, const transport::RemoteRegion& b);

}  // namespace chorus::runtime
