// The ucx transport (transport/ucx/ucx_transport.h) on this host, over UCX's tcp transport and
// over its shared-memory ones (UCX_TLS): FIFO order, sizes and tags on several channels with
// more messages than slots (credits), messages larger than UCX's eager limit (rendezvous), a
// ring AllReduce with exact results, aborts and published calls reaching the peers, a peer that
// leaves cleanly (not a failure; a collective it never started fails at once).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "connected_ranks.h"
#include "transport/ucx/ucx_transport.h"

namespace chorus::transport::ucx_transport_test {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// UCX_TLS for one test, restored after it (UCX reads it at ucp_init).
class UcxTls {
 public:
  explicit UcxTls(const char* tls) {
    if (const char* old = ::getenv("UCX_TLS")) saved_ = old;
    ::setenv("UCX_TLS", tls, 1);
  }
  ~UcxTls() {
    if (saved_.empty())
      ::unsetenv("UCX_TLS");
    else
      ::setenv("UCX_TLS", saved_.c_str(), 1);
  }

 private:
  std::string saved_;
};

UcxOptions smallOptions(const std::string& group, std::size_t slotBytes = 4096) {
  UcxOptions options;
  options.groupId = group;
  options.fifo.slots = 4;
  options.fifo.slotBytes = slotBytes;
  options.timeout = 20s;
  return options;
}

using testing_support::spinUntil;

testing_support::Connect ucxConnect(const UcxOptions& options) {
  return [options](Store& store, int rank, int nranks) {
    return connectUcx(store, rank, nranks, options);
  };
}

void onRanks(int n, const UcxOptions& options,
             const std::function<void(int, ConnectionSet&)>& body) {
  testing_support::onConnectedRanks(n, ucxConnect(options), body);
}

void expectOrderedFifos(const UcxOptions& options, const std::vector<int>& channels) {
  testing_support::expectOrderedFifos(ucxConnect(options), options.fifo.slotBytes, channels);
}

class UcxTransport : public ::testing::TestWithParam<const char*> {};

TEST_P(UcxTransport, FifosKeepOrderSizesAndTagsOnEveryChannel) {
  UcxTls tls(GetParam());
  expectOrderedFifos(smallOptions("fifo"), {0, 5});
}

TEST_P(UcxTransport, MessagesPastTheEagerLimitArriveWhole) {
  // 1 MiB slots: UCX sends the larger messages by rendezvous.
  UcxTls tls(GetParam());
  expectOrderedFifos(smallOptions("rendezvous", 1 << 20), {0});
}

TEST_P(UcxTransport, RingAllReduceIsExact) {
  UcxTls tls(GetParam());
  testing_support::expectExactRing(ucxConnect(smallOptions("ring")), 1);
}

TEST_P(UcxTransport, AbortAndCallsReachThePeers) {
  UcxTls tls(GetParam());
  std::atomic<int> stage{0};
  onRanks(3, smallOptions("abort"), [&](int rank, ConnectionSet& c) {
    if (rank == 0) {
      c.publishCall("allreduce #7 (count 12 float32 sum)");
      c.abort("rank 0 found a bug");
    }
    spinUntil([&] { return !c.abortReason().empty(); }, "the abort");
    EXPECT_EQ(c.abortReason(), "rank 0 found a bug");
    if (rank != 0) {
      spinUntil([&] { return !c.peerCall(0).empty(); }, "rank 0's call");
      EXPECT_EQ(c.peerCall(0), "allreduce #7 (count 12 float32 sum)");
    }
    stage.fetch_add(1);
    spinUntil([&] { return stage.load() == 3; }, "every rank");
  });
}

TEST_P(UcxTransport, APeerThatLeavesFailsOnlyWhatNeedsIt) {
  UcxTls tls(GetParam());
  std::atomic<bool> checked{false};
  onRanks(2, smallOptions("leave"), [&](int rank, ConnectionSet& c) {
    if (rank == 1) {
      c.publishNumberedCall(1, "allreduce", 0, "(count 3 float32 sum)");
      return;  // leaves after starting collective #0
    }
    c.publishNumberedCall(1, "allreduce", 0, "(count 3 float32 sum)");
    spinUntil([&] { return c.peerDeparted(1); }, "rank 1's leave");
    EXPECT_EQ(c.abortReason(), "") << "rank 1 made collective #0 too";
    c.publishNumberedCall(1, "allreduce", 1, "(count 3 float32 sum)");
    EXPECT_THAT(c.abortReason(),
                HasSubstr("rank 1 left the group (destroyed its communicator) after 1 collective "
                          "calls, while rank 0 waits in collective #1"));
    checked = true;
  });
  EXPECT_TRUE(checked);
}

INSTANTIATE_TEST_SUITE_P(Tls, UcxTransport, ::testing::Values("tcp", "sm,self"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param) == "tcp" ? std::string("Tcp")
                                                                   : std::string("SharedMemory");
                         });

}  // namespace chorus::transport::ucx_transport_test
