// The events of both event simulators (sim stage; simulator.cpp, one_sided_sim.cpp) and the
// queue they pop them from: earliest time first, ties in posting order. Internal to src/sim.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace chorus::sim {

// An event of an event loop: what happens (`kind`, to `id`) at `time`; `version` tells a flow's
// current end from stale ones.
template <typename Kind>
struct TimedEvent {
  double time = 0;
  Kind kind{};
  int id = 0;
  std::uint32_t version = 0;
};

// A min-priority queue of events (anything with a `double time`, never NaN): pop() gives the
// earliest, and of events with the same time the one pushed first, so the events pop in the
// one order of (time, push number). A plain value: copying it copies the pending events.
//
// Algorithm: a simulation of symmetric ranks posts most events at a time many others share
// (a 1024-rank ring: 99.8% of events pop at the time of the one before), so the events of one
// time wait in one FIFO bucket, and only buckets go through a binary heap on their times.
//   1. push() finds the bucket of the event's time (among the kRecent looked up last, else in a
//      hash index), creates it if there is none, and appends the event.
//   2. pop() takes the next event of the earliest bucket. An emptied bucket leaves the heap and
//      the index at the next pop(), so events posted for the current time meanwhile join it.
template <typename Event>
class EventQueue {
 public:
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }

  // Queues `event` after every event pushed before it.
  void push(const Event& event) {
    buckets_[bucketFor(event.time)].events.push_back(event);
    ++size_;
  }

  // Removes and returns the earliest event. Precondition: !empty().
  Event pop() {
    for (;;) {
      Bucket& bucket = buckets_[heap_.front().bucket];
      if (bucket.head < bucket.events.size()) {
        --size_;
        return bucket.events[bucket.head++];
      }
      retireFirst();
    }
  }

 private:
  static constexpr std::size_t kRecent = 4;
  static constexpr std::uint32_t kNoBucket = UINT32_MAX;

  struct Bucket {
    std::vector<Event> events;  // in push order; [head, size) pending
    std::size_t head = 0;
    std::uint64_t key = 0;  // index_'s key of its time
  };
  struct Entry {
    double time = 0;
    std::uint32_t bucket = 0;
  };
  static std::array<std::uint32_t, kRecent> noBuckets() {
    std::array<std::uint32_t, kRecent> none;
    none.fill(kNoBucket);
    return none;
  }
  // The heap's order, reversed for std::push_heap (a max-heap). Bucket times are distinct.
  static bool later(const Entry& a, const Entry& b) { return a.time > b.time; }

  // The bucket of `time`, created if there is none.
  std::uint32_t bucketFor(double time) {
    const std::uint64_t key = std::bit_cast<std::uint64_t>(time + 0.0);  // -0.0 as 0.0
    for (std::size_t i = 0; i < kRecent; ++i)
      if (recentBucket_[i] != kNoBucket && recentKey_[i] == key) return recentBucket_[i];
    auto [it, inserted] = index_.try_emplace(key, 0);
    if (inserted) {
      if (freeBuckets_.empty()) {
        it->second = static_cast<std::uint32_t>(buckets_.size());
        buckets_.emplace_back();
      } else {
        it->second = freeBuckets_.back();
        freeBuckets_.pop_back();
      }
      buckets_[it->second].key = key;
      heap_.push_back(Entry{time, it->second});
      std::push_heap(heap_.begin(), heap_.end(), later);
    }
    recentKey_[nextRecent_] = key;
    recentBucket_[nextRecent_] = it->second;
    nextRecent_ = (nextRecent_ + 1) % kRecent;
    return it->second;
  }

  // Removes the heap's first bucket (emptied) and frees it for reuse.
  void retireFirst() {
    const std::uint32_t bucket = heap_.front().bucket;
    std::pop_heap(heap_.begin(), heap_.end(), later);
    heap_.pop_back();
    index_.erase(buckets_[bucket].key);
    buckets_[bucket].events.clear();
    buckets_[bucket].head = 0;
    freeBuckets_.push_back(bucket);
    for (std::size_t i = 0; i < kRecent; ++i)
      if (recentBucket_[i] == bucket) recentBucket_[i] = kNoBucket;
  }

  std::size_t size_ = 0;
  std::vector<Entry> heap_;
  std::vector<Bucket> buckets_;
  std::vector<std::uint32_t> freeBuckets_;
  std::unordered_map<std::uint64_t, std::uint32_t> index_;  // time's bits -> its bucket
  std::array<std::uint64_t, kRecent> recentKey_{};
  std::array<std::uint32_t, kRecent> recentBucket_ = noBuckets();
  std::size_t nextRecent_ = 0;
};

}  // namespace chorus::sim
