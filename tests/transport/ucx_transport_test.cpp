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
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/registry.h"
#include "runtime/interpreter.h"
#include "runtime/run_check.h"
#include "transport/in_memory_store.h"
#include "transport/ucx/ucx_transport.h"

namespace chorus::transport::ucx_transport_test {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;
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

// Runs body(rank, connections) on `n` threads, each with its own ucx view of one group.
void onRanks(int n, const UcxOptions& options,
             const std::function<void(int, ConnectionSet&)>& body) {
  auto store = std::make_shared<InMemoryStore>();
  std::vector<std::thread> threads;
  std::vector<std::string> errors(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        auto connections = connectUcx(*store, r, n, options);
        body(r, *connections);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads)
    t.join();
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << "rank " << r;
}

template <typename F>
void spinUntil(F done, const char* what) {
  const auto deadline = Clock::now() + 20s;
  while (!done()) {
    if (Clock::now() > deadline) throw std::runtime_error(std::string("timed out: ") + what);
    std::this_thread::yield();
  }
}

// Rank 0 sends 50 messages of varied sizes (up to the slot) and tags on each channel to rank 1,
// which checks their order, sizes, tags and bytes.
void expectOrderedFifos(const UcxOptions& options, const std::vector<int>& channels) {
  constexpr int kMessages = 50;  // far more than the 4 slots: credits must flow back
  const std::size_t limit = options.fifo.slotBytes + 1;
  onRanks(2, options, [&](int rank, ConnectionSet& c) {
    for (int channel : channels) {
      if (rank == 0) {
        Fifo& f = c.sendFifo(1, channel);
        for (int m = 0; m < kMessages; ++m) {
          std::uint8_t* slot = nullptr;
          spinUntil([&] { return (slot = f.trySendSlot()) != nullptr; }, "a free slot");
          const std::size_t bytes = static_cast<std::size_t>(m) * 7919 % limit;
          for (std::size_t i = 0; i < bytes; ++i)
            slot[i] = static_cast<std::uint8_t>(m + i + channel);
          f.commitSend(bytes, 1000 + m);
        }
      } else {
        Fifo& f = c.recvFifo(0, channel);
        for (int m = 0; m < kMessages; ++m) {
          RecvSlot slot;
          spinUntil([&] { return f.tryRecvSlot(&slot); }, "a message");
          ASSERT_EQ(slot.bytes, static_cast<std::size_t>(m) * 7919 % limit);
          ASSERT_EQ(slot.tag, static_cast<std::uint64_t>(1000 + m));
          for (std::size_t i = 0; i < slot.bytes; ++i)
            ASSERT_EQ(slot.data[i], static_cast<std::uint8_t>(m + i + channel));
          f.releaseRecv();
        }
      }
    }
  });
}

// A ring AllReduce over ucx, 3 calls on 3 ranks, checked exactly.
void expectExactRing(const UcxOptions& ucx) {
  constexpr int kRanks = 3;
  algorithms::BuildRequest request;
  request.algorithm = "allreduce.ring";
  request.ranks = kRanks;
  const ir::Algorithm ring = algorithms::compileAlgorithm(request).algorithm;
  onRanks(kRanks, ucx, [&](int rank, ConnectionSet& c) {
    runtime::RunOptions options;
    options.count = 100'000;  // many slots per connection
    options.type = DataType::int32;
    runtime::RankBuffers buffers(ring, rank, options);
    for (int call = 0; call < 3; ++call) {
      buffers.reset();
      const auto id = runtime::identifyCall(ring, options, call);
      c.publishCall(id.description);
      runtime::ExecOptions exec;
      exec.callTag = id.tag;
      exec.timeout = 20s;
      runtime::executeRank(
          ring, rank, {buffers.input(), buffers.output(), options.count, options.type, options.op},
          c, exec);
      runtime::RunReport report;
      runtime::checkRankOutput(ring, rank, options, buffers.output(), &report);
      EXPECT_TRUE(report.ok()) << report.firstWrong;
      EXPECT_EQ(report.checkedElements, options.count);
    }
  });
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
  expectExactRing(smallOptions("ring"));
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
