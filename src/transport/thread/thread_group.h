// Thread transport: the ranks of a group are threads of one process. The group owns one FIFO
// per connection, created on first use, and the shared abort flag.
#pragma once

#include <atomic>
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

 private:
  class RankView;
  Fifo& fifo(int from, int to, int channel);
  void abort(const std::string& reason);
  std::string abortReason() const;
  void publishCall(int rank, std::string_view description);
  std::string peerCall(int rank) const;

  const int nranks_;
  const FifoOptions options_;
  std::mutex mutex_;
  std::map<std::tuple<int, int, int>, std::unique_ptr<ThreadFifo>> fifos_;
  std::vector<std::unique_ptr<RankView>> views_;
  mutable std::mutex abortMutex_;
  std::atomic<bool> aborted_{false};
  std::string abortReason_;
  mutable std::mutex callMutex_;
  std::vector<std::string> calls_;
};

}  // namespace chorus::transport
