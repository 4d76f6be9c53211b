// Thread transport: the ranks of a group are threads of one process. The group owns one FIFO
// per connection, created on first use, and the shared abort flag.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "transport/connections.h"
#include "transport/thread/thread_fifo.h"

namespace chorus::transport {

class ThreadGroup {
 public:
  ThreadGroup(int nranks, FifoOptions options = {});
  ~ThreadGroup();
  int nranks() const { return nranks_; }
  // Rank r's view; valid for the group's lifetime; use it from rank r's thread only.
  ConnectionSet& rank(int r);
  // Rank r leaves the group cleanly (its communicator is destroyed): a peer's collective that r
  // never started, and a receive from r, then fail at once naming it (peerDeparted()).
  void leave(int r);

 private:
  class RankView;
  std::string departedReason(int rank);
  Fifo& fifo(int from, int to, int channel);
  void abort(const std::string& reason);
  std::string abortReason() const;
  void publishCall(int rank, std::string_view description);
  void publishNumberedCall(int rank, std::uint64_t shapeKey, std::string_view name,
                           std::uint64_t number, std::string_view details);
  std::string peerCall(int rank) const;

  const int nranks_;
  const FifoOptions options_;
  std::mutex mutex_;
  std::map<std::tuple<int, int, int>, std::unique_ptr<ThreadFifo>> fifos_;
  std::vector<std::unique_ptr<RankView>> views_;
  mutable std::mutex abortMutex_;
  std::atomic<bool> aborted_{false};
  std::string abortReason_;
  // Each rank's published call, on its own cache line with its own lock, so ranks do not
  // contend on every call. While the shape repeats, only `number` changes (one store).
  struct alignas(64) PublishedCall {
    mutable std::mutex mutex;  // guards text and nameBytes
    std::string text;          // the name, then the details (a plain description: all name)
    std::size_t nameBytes = 0;
    std::uint64_t shapeKey = 0;            // the owner's thread only; 0: none
    std::atomic<std::uint64_t> number{0};  // the call's number + 1; 0: a plain description
  };
  std::unique_ptr<PublishedCall[]> calls_;
  // Per rank: the collectives it started (its own thread writes), and once it left, that count
  // (-1 while it is in the group). departures_ counts the ranks that left.
  std::unique_ptr<std::atomic<std::int64_t>[]> started_;
  std::unique_ptr<std::atomic<std::int64_t>[]> departedAfter_;
  std::atomic<int> departures_{0};
};

}  // namespace chorus::transport
