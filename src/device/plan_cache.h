// The per-plan state a device executor keeps between calls (device layer): a rank's mailbox,
// FIFOs and uploaded plan for each of its most recently used plans, found by the plan's
// content (not by call shape: calls of any count share a plan's mailboxes, and every rank finds
// the same entries whatever objects its plan provider hands over). Contract that makes dropping
// one safe: a plan's state is made at its first call, whose set-up swaps descriptors with every
// peer (a barrier: no peer still runs an older call once every descriptor has arrived), and
// every rank of a group makes the same calls, so every rank drops the same least recently used
// plan at the same call, after that barrier.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "ir/algorithm.h"

namespace chorus::device {

template <class PlanRank>
class PlanCache {
 public:
  static constexpr std::size_t kMaxPlans = 8;

  // The state kept for a plan equal to `algorithm`, else make()'s (a std::unique_ptr<PlanRank>),
  // kept from now on. Costs one comparison of the plan when it is the one used last.
  template <class Make>
  PlanRank& get(const ir::Algorithm& algorithm, Make&& make) {
    ++uses_;
    if (last_ < entries_.size() && entries_[last_].algorithm == algorithm) return use(last_);
    for (std::size_t i = 0; i < entries_.size(); ++i)
      if (i != last_ && entries_[i].algorithm == algorithm) return use(i);
    entries_.push_back({algorithm, uses_, make()});
    while (entries_.size() > kMaxPlans)
      entries_.erase(
          std::min_element(entries_.begin(), entries_.end(),
                           [](const Entry& a, const Entry& b) { return a.lastUse < b.lastUse; }));
    last_ = entries_.size() - 1;  // the newest is never the one dropped
    return *entries_[last_].rank;
  }

  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    ir::Algorithm algorithm;
    std::uint64_t lastUse = 0;
    std::unique_ptr<PlanRank> rank;
  };
  PlanRank& use(std::size_t i) {
    entries_[i].lastUse = uses_;
    last_ = i;
    return *entries_[i].rank;
  }
  std::vector<Entry> entries_;
  std::size_t last_ = 0;
  std::uint64_t uses_ = 0;
};

}  // namespace chorus::device
