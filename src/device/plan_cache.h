// The per-plan state a device executor keeps between calls (device layer): a rank's mailbox,
// FIFOs and uploaded plan for each of its most recently used plans. Contract that makes
// dropping one safe: a plan's state is made at its first call, whose set-up swaps descriptors
// with every peer (a barrier: no peer still runs an older call once every descriptor has
// arrived), and every rank of a group makes the same calls, so every rank drops the same least
// recently used plan at the same call, after that barrier.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace chorus::device {

template <class PlanRank>
class PlanCache {
 public:
  static constexpr std::size_t kMaxPlans = 8;

  // The state kept under `planKey`, else make()'s (a std::unique_ptr<PlanRank>), kept from now
  // on. planKey 0 names a plan that is never called again under the same key: it gets a key of
  // its own.
  template <class Make>
  PlanRank& get(std::uint64_t planKey, Make&& make) {
    const std::uint64_t key = planKey != 0 ? planKey : (std::uint64_t{1} << 63) | ++unnamedPlans_;
    ++uses_;
    for (Entry& held : entries_)
      if (held.key == key) {
        held.lastUse = uses_;
        return *held.rank;
      }
    entries_.push_back({key, uses_, make()});
    while (entries_.size() > kMaxPlans)
      entries_.erase(
          std::min_element(entries_.begin(), entries_.end(),
                           [](const Entry& a, const Entry& b) { return a.lastUse < b.lastUse; }));
    return *entries_.back().rank;
  }

  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::uint64_t key = 0;
    std::uint64_t lastUse = 0;
    std::unique_ptr<PlanRank> rank;
  };
  std::vector<Entry> entries_;
  std::uint64_t uses_ = 0;
  std::uint64_t unnamedPlans_ = 0;
};

}  // namespace chorus::device
