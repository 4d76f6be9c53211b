// A ConnectionSet that forwards every call to another one (a thread group's rank view, say),
// for tests that change one thing about a transport by overriding just that: where the peers
// run, how receives are posted.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "transport/connections.h"

namespace chorus::testing_support {

class ForwardingConnections : public transport::ConnectionSet {
 public:
  // `inner` must outlive this view.
  explicit ForwardingConnections(transport::ConnectionSet& inner) : inner_(inner) {}

  int rank() const override { return inner_.rank(); }
  int nranks() const override { return inner_.nranks(); }
  transport::Fifo& sendFifo(int peer, int channel) override {
    return inner_.sendFifo(peer, channel);
  }
  transport::Fifo& recvFifo(int peer, int channel) override {
    return inner_.recvFifo(peer, channel);
  }
  void abort(const std::string& reason) override { inner_.abort(reason); }
  std::string abortReason() const override { return inner_.abortReason(); }
  bool aborted() const override { return inner_.aborted(); }
  void publishCall(std::string_view description) override { inner_.publishCall(description); }
  void publishNumberedCall(std::uint64_t shapeKey, std::string_view name, std::uint64_t number,
                           std::string_view details) override {
    inner_.publishNumberedCall(shapeKey, name, number, details);
  }
  std::string peerCall(int peer) const override { return inner_.peerCall(peer); }
  bool peerDeparted(int peer) const override { return inner_.peerDeparted(peer); }
  int progressThreads() const override { return inner_.progressThreads(); }
  int ranksOnThisHost() const override { return inner_.ranksOnThisHost(); }
  std::vector<int> hostOfRank() const override { return inner_.hostOfRank(); }

 private:
  transport::ConnectionSet& inner_;
};

}  // namespace chorus::testing_support
