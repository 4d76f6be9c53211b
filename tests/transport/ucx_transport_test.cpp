// The ucx transport (transport/ucx/ucx_transport.h) on this host, over UCX's tcp transport and
// over its shared-memory ones (UCX_TLS): FIFO order, sizes and tags on several channels with
// more messages than slots (credits), messages larger than UCX's eager limit (rendezvous), a
// ring AllReduce with exact results, aborts and published calls reaching the peers, a peer that
// leaves cleanly (not a failure; a collective it never started fails at once), messages by
// reference and posted receives, unpost(), and a group that connects only some peers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "chorus/error.h"
#include "connected_ranks.h"
#include "transport/file_store.h"
#include "transport/in_memory_store.h"
#include "transport/shm/registered_memory.h"
#include "transport/ucx/ucx_transport.h"

namespace chorus::transport::ucx_transport_test {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// A UCX_* variable for one test, restored after it (UCX reads them at ucp_init).
class UcxVariable {
 public:
  UcxVariable(const char* name, const char* value) : name_(name) {
    if (const char* old = ::getenv(name)) saved_ = old;
    ::setenv(name, value, 1);
  }
  ~UcxVariable() {
    if (saved_.empty())
      ::unsetenv(name_);
    else
      ::setenv(name_, saved_.c_str(), 1);
  }

 private:
  const char* name_;
  std::string saved_;
};

class UcxTls : public UcxVariable {
 public:
  explicit UcxTls(const char* tls) : UcxVariable("UCX_TLS", tls) {}
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

UcxOptions singleCopyOptions(const std::string& group) {
  UcxOptions options = smallOptions(group, 1 << 20);
  options.fifo.slots = 8;
  options.fifo.singleCopyBytes = 1;
  return options;
}

TEST_P(UcxTransport, MessagesByReferenceLeaveFromTheSendersMemory) {
  UcxTls tls(GetParam());
  testing_support::expectMessagesByReference(ucxConnect(singleCopyOptions("by-reference")));
}

TEST_P(UcxTransport, PostedReceivesLandInTheReceiversBuffer) {
  UcxTls tls(GetParam());
  testing_support::expectPostedReceives(ucxConnect(singleCopyOptions("post")));
}

// Where UCX may use rendezvous (an RDMA device, or UCX_RNDV_THRESH set; here: forced for every
// message), the sender's pieces and the receiver's posted pieces go to UCP as iov datatypes.
TEST_P(UcxTransport, MessagesByReferenceByRendezvous) {
  UcxTls tls(GetParam());
  UcxVariable rendezvous("UCX_RNDV_THRESH", "0");
  testing_support::expectMessagesByReference(ucxConnect(singleCopyOptions("by-reference-rndv")));
}

TEST_P(UcxTransport, PostedReceivesByRendezvous) {
  UcxTls tls(GetParam());
  UcxVariable rendezvous("UCX_RNDV_THRESH", "0");
  testing_support::expectPostedReceives(ucxConnect(singleCopyOptions("post-rndv")));
}

// Messages by reference from registered memory (chorus::memAlloc) and posted into it travel
// with the allocation's UCP handle; eager and by rendezvous, the bytes arrive whole.
void expectRegisteredMemoryTravels(const UcxOptions& options) {
  constexpr std::size_t kBytes = 600'000;
  constexpr int kMessages = 6;
  std::atomic<bool> posted{false}, read{false};
  onRanks(2, options, [&](int rank, ConnectionSet& c) {
    auto* memory = static_cast<std::uint8_t*>(allocateRegistered(kBytes * kMessages));
    if (rank == 0) {
      Fifo& f = c.sendFifo(1, 0);
      for (std::size_t j = 0; j < kBytes * kMessages; ++j)
        memory[j] = testing_support::byReferencePattern(5, 0, j);
      spinUntil([&] { return posted.load(); }, "the receiver's posts");
      std::vector<std::uint64_t> tickets;
      for (int m = 0; m < kMessages; ++m) {
        spinUntil([&] { return f.trySendSlot() != nullptr; }, "a credit");
        const RemoteRegion region{reinterpret_cast<std::uint64_t>(memory + m * kBytes), kBytes,
                                  kBytes, 1};
        tickets.push_back(f.commitRemote(region, 60 + static_cast<std::uint64_t>(m)));
      }
      for (const std::uint64_t ticket : tickets)
        spinUntil([&] { return f.remoteSettled(ticket); }, "a message to settle");
      spinUntil([&] { return read.load(); }, "the receiver");
    } else {
      Fifo& f = c.recvFifo(0, 0);
      for (int m = 0; m < kMessages; ++m) {
        const RemoteRegion region{reinterpret_cast<std::uint64_t>(memory + m * kBytes), kBytes,
                                  kBytes, 1};
        ASSERT_TRUE(
            f.postRecv(region, 60 + static_cast<std::uint64_t>(m), static_cast<std::size_t>(m)));
      }
      posted.store(true);
      for (int m = 0; m < kMessages; ++m) {
        RecvSlot slot;
        spinUntil([&] { return f.tryRecvSlot(&slot); }, "a message");
        ASSERT_TRUE(slot.delivered) << "message " << m;
        f.releaseRecv();
      }
      for (std::size_t j = 0; j < kBytes * kMessages; ++j)
        ASSERT_EQ(memory[j], testing_support::byReferencePattern(5, 0, j)) << "byte " << j;
      read.store(true);
    }
    freeRegistered(memory);
  });
}

TEST_P(UcxTransport, RegisteredMemoryTravelsWithItsHandle) {
  UcxTls tls(GetParam());
  expectRegisteredMemoryTravels(singleCopyOptions("registered"));
}

TEST_P(UcxTransport, RegisteredMemoryTravelsWithItsHandleByRendezvous) {
  UcxTls tls(GetParam());
  UcxVariable rendezvous("UCX_RNDV_THRESH", "0");
  expectRegisteredMemoryTravels(singleCopyOptions("registered-rndv"));
}

// A message that landed in its posted region but was not received yet moves to its slot on
// unpost(), and the region is not written again. A one-byte message on another channel, sent
// after it on the same endpoint (eager: handled in order), tells the receiver it has landed.
TEST_P(UcxTransport, UnpostMovesAMessageDeliveredToItsRegionIntoTheSlot) {
  UcxTls tls(GetParam());
  constexpr std::size_t kBytes = 300'000;
  std::atomic<int> stage{0};
  onRanks(2, singleCopyOptions("unpost"), [&](int rank, ConnectionSet& c) {
    if (rank == 0) {
      Fifo& f = c.sendFifo(1, 0);
      spinUntil([&] { return stage.load() == 1; }, "the receiver's post");
      std::uint8_t* slot = nullptr;
      spinUntil([&] { return (slot = f.trySendSlot()) != nullptr; }, "a credit");
      for (std::size_t j = 0; j < kBytes; ++j)
        slot[j] = testing_support::byReferencePattern(3, 0, j);
      f.commitSend(kBytes, 77);
      Fifo& marker = c.sendFifo(1, 1);
      spinUntil([&] { return (slot = marker.trySendSlot()) != nullptr; }, "a credit");
      slot[0] = 1;
      marker.commitSend(1, 78);
      spinUntil([&] { return stage.load() == 2; }, "the receiver");
      return;
    }
    Fifo& f = c.recvFifo(0, 0);
    Fifo& marker = c.recvFifo(0, 1);
    std::vector<std::uint8_t> region(kBytes, 0xEE);
    ASSERT_TRUE(f.postRecv(testing_support::stridedRegion(region, kBytes, kBytes), 77, 0));
    stage.store(1);
    RecvSlot slot;
    spinUntil([&] { return marker.tryRecvSlot(&slot); }, "the marker after the message");
    marker.releaseRecv();
    f.unpost();
    ASSERT_EQ(region[kBytes - 1], testing_support::byReferencePattern(3, 0, kBytes - 1))
        << "the message went to its posted region";
    std::fill(region.begin(), region.end(), std::uint8_t{0xEE});
    spinUntil([&] { return f.tryRecvSlot(&slot); }, "the message");
    ASSERT_FALSE(slot.delivered) << "unpost() moves it to its slot";
    ASSERT_EQ(slot.bytes, kBytes);
    for (std::size_t j = 0; j < kBytes; ++j)
      ASSERT_EQ(slot.data[j], testing_support::byReferencePattern(3, 0, j)) << "byte " << j;
    EXPECT_EQ(region[0], 0xEE);
    f.releaseRecv();
    stage.store(2);
  });
}

// The auto transport's ucx part connects only the peers it is given.
TEST_P(UcxTransport, OnlyTheGivenPeersAreConnected) {
  UcxTls tls(GetParam());
  const testing_support::Connect connect = [](Store& store, int rank, int nranks) {
    UcxOptions options = smallOptions("peers");
    options.peers = {false, false, false};  // ranks 0 and 2 reach each other; rank 1 no one
    if (rank != 1) options.peers[static_cast<std::size_t>(2 - rank)] = true;
    return connectUcx(store, rank, nranks, options);
  };
  std::atomic<int> done{0};
  testing_support::onConnectedRanks(3, connect, [&](int rank, ConnectionSet& c) {
    if (rank == 1) {
      EXPECT_THROW(c.sendFifo(0, 0), CommError);
      return;
    }
    const int peer = 2 - rank;
    EXPECT_THROW(c.sendFifo(1, 0), CommError);
    if (rank == 0) {
      std::uint8_t* slot = nullptr;
      spinUntil([&] { return (slot = c.sendFifo(peer, 0).trySendSlot()) != nullptr; }, "a slot");
      slot[0] = 42;
      c.sendFifo(peer, 0).commitSend(1, 9);
    } else {
      RecvSlot slot;
      spinUntil([&] { return c.recvFifo(peer, 0).tryRecvSlot(&slot); }, "the message");
      EXPECT_EQ(slot.data[0], 42);
      c.recvFifo(peer, 0).releaseRecv();
    }
    done.fetch_add(1);
    spinUntil([&] { return done.load() == 2; }, "both ranks");
  });
}

// A peer process on this host that dies without leaving fails the group at once, named with
// its pid (UCX's shared-memory transports report no peer failure: the transport watches the
// process itself). Both ranks are forked, so neither inherits this process's UCX state.
TEST_P(UcxTransport, PeerProcessThatDiesOnThisHostIsNamedAtOnce) {
  UcxTls tls(GetParam());
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("chorus-ucx-die-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const UcxOptions options = smallOptions("die");
  const auto rank = [&](int r) {
    std::fflush(nullptr);
    const pid_t child = ::fork();
    if (child != 0) return child;
    try {
      FileStore store(dir.string());
      auto connections = connectUcx(store, r, 2, options);
      if (r == 1) ::_exit(0);  // dies without leaving
      const auto start = std::chrono::steady_clock::now();
      while (connections->abortReason().empty())
        if (std::chrono::steady_clock::now() - start > 20s) ::_exit(2);
      const std::string reason = connections->abortReason();
      const bool named = reason.find("rank 1 (pid") != std::string::npos &&
                         reason.find("exited before the group finished") != std::string::npos;
      if (!named) std::fprintf(stderr, "rank 0's reason: %s\n", reason.c_str());
      // Without the watch nothing would fail here at all (no call is running); 10 s leaves
      // room for a sanitizer's slow exit of the dying process.
      const bool quick = std::chrono::steady_clock::now() - start < 10s;
      ::_exit(named ? (quick ? 0 : 3) : 4);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank %d: %s\n", r, e.what());
      ::_exit(5);
    }
  };
  const pid_t zero = rank(0), one = rank(1);
  int status = 0;
  ::waitpid(one, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "rank 1";
  ::waitpid(zero, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "rank 0: 2 = no failure within 20 s, 3 = noticed after 10 s, 4 = another reason";
  std::filesystem::remove_all(dir);
}

// A rank that never joins is named by rank (not by a store key) within the timeout.
TEST_P(UcxTransport, ARankThatNeverJoinsIsNamed) {
  UcxTls tls(GetParam());
  InMemoryStore store;
  UcxOptions options = smallOptions("never");
  options.timeout = 300ms;
  EXPECT_THAT([&] { connectUcx(store, 0, 3, options); },
              ::testing::ThrowsMessage<TimeoutError>(
                  HasSubstr("rank 1 of 3 did not join the communicator within 300 ms, so rank 0 "
                            "stops waiting")));
}

INSTANTIATE_TEST_SUITE_P(Tls, UcxTransport, ::testing::Values("tcp", "sm,self"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param) == "tcp" ? std::string("Tcp")
                                                                   : std::string("SharedMemory");
                         });

}  // namespace chorus::transport::ucx_transport_test
