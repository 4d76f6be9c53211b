#include "runtime/remote_ledger.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace chorus::runtime {

namespace {

struct Span {
  std::uint64_t begin;
  std::uint64_t end;
};

Span spanOf(const transport::RemoteRegion& r) {
  if (r.pieces == 0) return {r.address, r.address};
  return {r.address, r.address + (r.pieces - 1) * r.stride + r.pieceBytes};
}

bool intersect(Span a, Span b) {
  return a.begin < b.end && b.begin < a.end;
}

}  // namespace

bool regionsOverlap(const transport::RemoteRegion& a, const transport::RemoteRegion& b) {
  if (!intersect(spanOf(a), spanOf(b))) return false;
  for (std::uint32_t i = 0; i < a.pieces; ++i) {
    const Span pa{a.address + i * a.stride, a.address + i * a.stride + a.pieceBytes};
    if (!intersect(pa, spanOf(b))) continue;
    for (std::uint32_t j = 0; j < b.pieces; ++j)
      if (intersect(pa, Span{b.address + j * b.stride, b.address + j * b.stride + b.pieceBytes}))
        return true;
  }
  return false;
}

void RemoteLedger::add(transport::Fifo& fifo, std::uint64_t ticket,
                       const transport::RemoteRegion& region) {
  std::lock_guard lock(mutex_);
  entries_.push_back(Entry{&fifo, ticket, region});
  size_.store(entries_.size(), std::memory_order_release);
}

bool RemoteLedger::clearForWrite(const transport::RemoteRegion& write, bool evict) {
  std::lock_guard lock(mutex_);
  bool clear = true;
  std::erase_if(entries_, [&](const Entry& e) {
    if (e.fifo->remoteSettled(e.ticket)) return true;
    if (!regionsOverlap(e.region, write)) return false;
    if (evict && e.fifo->evictRemote(e.ticket)) {
      ++evictions_;
      return true;
    }
    clear = false;
    return false;
  });
  size_.store(entries_.size(), std::memory_order_release);
  return clear;
}

bool RemoteLedger::settle() {
  if (empty()) return true;
  std::lock_guard lock(mutex_);
  std::erase_if(entries_, [](const Entry& e) { return e.fifo->remoteSettled(e.ticket); });
  size_.store(entries_.size(), std::memory_order_release);
  return entries_.empty();
}

void RemoteLedger::abandon(int patienceMs) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(patienceMs);
  std::lock_guard lock(mutex_);
  while (!entries_.empty() && std::chrono::steady_clock::now() < deadline) {
    std::erase_if(entries_, [](const Entry& e) { return e.fifo->evictRemote(e.ticket); });
    if (!entries_.empty()) std::this_thread::yield();
  }
  entries_.clear();
  size_.store(0, std::memory_order_release);
}

}  // namespace chorus::runtime
