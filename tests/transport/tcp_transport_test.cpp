// The TCP transport over loopback (transport/tcp/tcp_transport.h): FIFO order, sizes and tags
// on several channels with more messages than slots (credits), a ring AllReduce with exact
// results, abort and published calls, clean leaving versus a peer that dies, a connected peer
// that sends garbage, resets or returns bogus credits, and a rendezvous that refuses garbage,
// other groups and wrong tokens.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/registry.h"
#include "chorus/error.h"
#include "connected_ranks.h"
#include "runtime/interpreter.h"
#include "runtime/run_check.h"
#include "transport/file_store.h"
#include "transport/in_memory_store.h"
#include "transport/process_identity.h"
#include "transport/socket_io.h"
#include "transport/tcp/tcp_bootstrap.h"
#include "transport/tcp/tcp_frame.h"
#include "transport/tcp/tcp_transport.h"

namespace chorus::transport {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

TcpOptions smallOptions(const std::string& group) {
  TcpOptions options;
  options.groupId = group;
  options.fifo.slots = 4;
  options.fifo.slotBytes = 4096;
  options.timeout = 20s;
  return options;
}

using testing_support::byReferencePattern;
using testing_support::spinUntil;
using testing_support::stridedRegion;

testing_support::Connect tcpConnect(const TcpOptions& options) {
  return [options](Store& store, int rank, int nranks) {
    return connectTcp(store, rank, nranks, options);
  };
}

// Runs body(rank, connections) on `n` threads, each with its own TCP view of one group.
void onRanks(int n, const TcpOptions& options,
             const std::function<void(int, ConnectionSet&)>& body) {
  testing_support::onConnectedRanks(n, tcpConnect(options), body);
}

void expectOrderedFifos(const TcpOptions& options, const std::vector<int>& channels) {
  testing_support::expectOrderedFifos(tcpConnect(options), options.fifo.slotBytes, channels);
}

TEST(TcpTransport, FifosKeepOrderSizesAndTagsOnEveryChannel) {
  expectOrderedFifos(smallOptions("fifo"), {0, 5});
}

TEST(TcpTransport, SeveralSocketsPerPeerKeepEveryChannelInOrder) {
  // Channel c travels on connection c % 3, its credits on the same connection back.
  TcpOptions options = smallOptions("sockets");
  options.socketsPerPeer = 3;
  expectOrderedFifos(options, {0, 1, 2, 5, 7});
}

TcpOptions singleCopyOptions(const std::string& group) {
  TcpOptions options = smallOptions(group);
  options.fifo.slots = 8;
  options.fifo.slotBytes = 1 << 20;
  options.fifo.singleCopyBytes = 1;
  return options;
}

TEST(TcpTransport, MessagesByReferenceLeaveFromTheSendersMemory) {
  testing_support::expectMessagesByReference(tcpConnect(singleCopyOptions("by-reference")));
}

TEST(TcpTransport, PostedReceivesLandInTheReceiversBuffer) {
  testing_support::expectPostedReceives(tcpConnect(singleCopyOptions("post")));
}

void expectExactRing(const TcpOptions& tcp, int instances) {
  testing_support::expectExactRing(tcpConnect(tcp), instances);
}

TEST(TcpTransport, RingAllReduceIsExact) {
  expectExactRing(smallOptions("ring"), 1);
}

TEST(TcpTransport, RingOnFourChannelsOverTwoSocketsPerPeerIsExact) {
  TcpOptions options = smallOptions("ring-sockets");
  options.socketsPerPeer = 2;
  expectExactRing(options, 4);
}

TEST(TcpTransport, AbortAndCallsReachThePeers) {
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

TEST(TcpTransport, CountsTheRanksOnItsHost) {
  // All three share this host (one network namespace): pollers size their spinning by it.
  onRanks(3, smallOptions("count"), [](int, ConnectionSet& c) {
    EXPECT_EQ(c.ranksOnThisHost(), 3);
    EXPECT_EQ(c.progressThreads(), 1);
  });
}

TEST(TcpTransport, PeerThatLeavesCleanlyIsNotAFailure) {
  std::atomic<bool> left{false};
  onRanks(2, smallOptions("leave"), [&](int rank, ConnectionSet& c) {
    if (rank == 1) return;  // destroys its view: a bye
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(c.abortReason(), "");
    left = true;
  });
  EXPECT_TRUE(left);
}

TEST(TcpTransport, PeerProcessThatDiesFailsTheGroupNamingIt) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("chorus-tcp-die-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const TcpOptions options = smallOptions("die");
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child == 0) {
    try {
      FileStore store(dir.string());
      auto connections = connectTcp(store, 1, 2, options);
      ::_exit(0);  // dies without leaving
    } catch (...) {
      ::_exit(1);
    }
  }
  FileStore store(dir.string());
  auto connections = connectTcp(store, 0, 2, options);
  spinUntil([&] { return !connections->abortReason().empty(); }, "the peer's death");
  EXPECT_THAT(connections->abortReason(), HasSubstr("lost rank 1 on"));
  EXPECT_THAT(connections->abortReason(), HasSubstr("closed the connection before the group"));
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  std::filesystem::remove_all(dir);
}

// Connects to where rank 0 of `group` listens (from the store) and sends `bytes`.
// Rank 0 of a 2-rank group connecting in its own thread, while the test plays rank 1.
struct RankZero {
  RankZero(Store& store, const TcpOptions& options)
      : thread([&store, options, this] {
          try {
            connections = connectTcp(store, 0, 2, options);
          } catch (const std::exception& e) {
            error = e.what();
          }
        }) {}
  ~RankZero() {
    if (thread.joinable()) thread.join();
  }
  void join() { thread.join(); }

  std::unique_ptr<ConnectionSet> connections;
  std::string error;   // what connectTcp threw
  std::thread thread;  // last: starts once the results above exist
};

// A connection to where rank 0 of `group` listens (from the store); -1 on failure.
SocketFd connectToRankZero(Store& store, const std::string& group) {
  const std::string record = toString(store.get("tcp/" + group + "/addr/0", 20s));
  char address[128] = {};
  int port = 0;
  if (std::sscanf(record.c_str(), "%127s %d", address, &port) != 2) return {};
  auto resolved = resolve(address, port, false);
  if (!std::holds_alternative<AddrInfoList>(resolved)) return {};
  const addrinfo* info = std::get<AddrInfoList>(resolved).get();
  SocketFd fd(::socket(info->ai_family, SOCK_STREAM, 0));
  if (::connect(fd.get(), info->ai_addr, info->ai_addrlen) != 0) return {};
  return fd;
}

void sendBytes(const SocketFd& fd, const std::string& bytes) {
  const std::vector<std::uint8_t> data(bytes.begin(), bytes.end());
  EXPECT_FALSE(sendAll(fd.get(), data, Clock::now() + 5s).has_value());
}

// Connects to where rank 0 of `group` listens and sends `bytes`.
void sendToRankZero(Store& store, const std::string& group, const std::string& bytes) {
  const SocketFd fd = connectToRankZero(store, group);
  ASSERT_TRUE(fd);
  sendBytes(fd, bytes);
}

// Rank 0 of a 2-rank group in a thread, and a hand-made rank 1 that completes the rendezvous
// (a valid hello) and then does what the test wants with its socket.
void withFakeRankOne(const std::string& group, const std::function<void(SocketFd&)>& act,
                     const std::function<void(ConnectionSet&)>& check, TcpOptions options = {}) {
  InMemoryStore store;
  if (options.groupId.empty()) options = smallOptions(group);
  RankZero rankZero(store, options);
  store.set("tcp/" + group + "/netns/1", toBytes(networkNamespaceId()));
  store.set("tcp/" + group + "/addr/1", toBytes("127.0.0.1 1 fakehost lo 1"));
  SocketFd fd = connectToRankZero(store, group);
  ASSERT_TRUE(fd);
  std::array<std::uint8_t, kFrameHeaderBytes> hello{};
  FrameHeader header;
  header.kind = FrameKind::hello;
  header.count = 1;
  header.tag = groupTag(group);
  encodeFrameHeader(header, hello);
  sendBytes(fd, std::string(hello.begin(), hello.end()));
  rankZero.join();
  ASSERT_NE(rankZero.connections, nullptr) << rankZero.error;
  act(fd);
  check(*rankZero.connections);
}

// Reads exactly `bytes` from a blocking socket into `out`.
void receiveExactly(const SocketFd& fd, std::uint8_t* out, std::size_t bytes) {
  while (bytes > 0) {
    const ssize_t got = ::recv(fd.get(), out, bytes, 0);
    ASSERT_GT(got, 0) << "the connection ended early";
    out += got;
    bytes -= static_cast<std::size_t>(got);
  }
}

// A peer that does not read: most of 4 messages of 1 MB by reference cannot leave, so evicting
// them copies them into their slots (one of them half written), and the sender may overwrite
// its buffers at once. Then the peer reads: every frame carries the original bytes.
TEST(TcpTransport, EvictedMessagesByReferenceStillCarryTheOriginalBytes) {
  TcpOptions options = smallOptions("evict");
  options.fifo.slotBytes = 1 << 20;
  options.fifo.singleCopyBytes = 1;
  options.socketBufferBytes = 64 << 10;
  constexpr int kMessages = 4;  // the 4 slots
  constexpr std::size_t kPiece = 1000, kStride = 1024;
  std::vector<std::vector<std::uint8_t>> memory(kMessages,
                                                std::vector<std::uint8_t>(kStride * 1024));
  const auto readAll = [&](const SocketFd& fd) {
    std::array<std::uint8_t, kFrameHeaderBytes> raw{};
    for (int m = 0; m < kMessages;) {
      receiveExactly(fd, raw.data(), raw.size());
      FrameHeader header;
      ASSERT_EQ(decodeFrameHeader(raw, options.fifo.slotBytes, &header), "");
      std::vector<std::uint8_t> payload(header.bytes);
      receiveExactly(fd, payload.data(), payload.size());
      if (header.kind != FrameKind::data) continue;
      ASSERT_EQ(header.tag, 900u + static_cast<std::uint64_t>(m));
      ASSERT_EQ(payload.size(), kPiece * 1024);
      for (std::size_t j = 0; j < payload.size(); ++j)
        ASSERT_EQ(payload[j], byReferencePattern(0, m, j / kPiece * kStride + j % kPiece))
            << "message " << m << " byte " << j;
      ++m;
    }
  };
  const SocketFd* peer = nullptr;
  withFakeRankOne(
      "evict", [&](SocketFd& fd) { peer = &fd; },
      [&](ConnectionSet& zero) {
        Fifo& f = zero.sendFifo(1, 0);
        std::vector<std::uint64_t> tickets;
        for (int m = 0; m < kMessages; ++m) {
          auto& bytes = memory[static_cast<std::size_t>(m)];
          for (std::size_t i = 0; i < bytes.size(); ++i)
            bytes[i] = byReferencePattern(0, m, i);
          ASSERT_NE(f.trySendSlot(), nullptr);
          tickets.push_back(f.commitRemote(stridedRegion(bytes, kPiece, kStride),
                                           900 + static_cast<std::uint64_t>(m)));
        }
        EXPECT_FALSE(f.remoteSettled(tickets.back())) << "the socket took 4 MB unread";
        for (const std::uint64_t ticket : tickets)
          EXPECT_TRUE(f.evictRemote(ticket));
        for (auto& bytes : memory)
          std::fill(bytes.begin(), bytes.end(), std::uint8_t{0xEE});
        readAll(*peer);
      },
      options);
}

// unpost() while a posted payload is half read: what arrived moves to the slot, the rest
// follows there, and the region is not written any more. The peer is hand-made, so it can stop
// in the middle of a frame.
TEST(TcpTransport, UnpostMidMessageMovesItToTheSlot) {
  TcpOptions options = smallOptions("unpost");
  options.fifo.slotBytes = 1 << 20;
  options.fifo.singleCopyBytes = 1;
  options.socketBufferBytes = 64 << 10;
  constexpr std::size_t kBytes = 400'000, kFirst = 200'000;
  std::vector<std::uint8_t> payload(kBytes);
  for (std::size_t j = 0; j < kBytes; ++j)
    payload[j] = byReferencePattern(2, 0, j);
  const SocketFd* peer = nullptr;
  withFakeRankOne(
      "unpost", [&](SocketFd& fd) { peer = &fd; },
      [&](ConnectionSet& zero) {
        Fifo& f = zero.recvFifo(1, 0);
        std::vector<std::uint8_t> memory(kBytes, 0xEE);
        RemoteRegion region;
        region.address = reinterpret_cast<std::uintptr_t>(memory.data());
        region.pieceBytes = kBytes;
        region.stride = kBytes;
        region.pieces = 1;
        spinUntil([&] { return f.postRecv(region, 42, 0); }, "a post");
        std::array<std::uint8_t, kFrameHeaderBytes> header{};
        FrameHeader frame;
        frame.kind = FrameKind::data;
        frame.bytes = kBytes;
        frame.tag = 42;
        encodeFrameHeader(frame, header);
        sendBytes(*peer, std::string(header.begin(), header.end()) +
                             std::string(payload.begin(), payload.begin() + kFirst));
        // Rank 0's socket buffers are 64 KiB, so once its kernel acknowledged all 200 KB its
        // progress thread has read most of them, into the region. (Looking at the region now
        // would race with that thread; after unpost() it is ours again.)
        spinUntil(
            [&] {
              int unacknowledged = -1;
              return ::ioctl(peer->get(), SIOCOUTQ, &unacknowledged) == 0 && unacknowledged == 0;
            },
            "rank 0 to take the first half");
        f.unpost();
        ASSERT_EQ(memory[0], payload[0]) << "the payload had not started to land in the region";
        std::fill(memory.begin(), memory.end(), std::uint8_t{0xEE});
        sendBytes(*peer, std::string(payload.begin() + kFirst, payload.end()));
        RecvSlot slot;
        spinUntil([&] { return f.tryRecvSlot(&slot); }, "the message");
        ASSERT_FALSE(slot.delivered);
        ASSERT_EQ(slot.bytes, kBytes);
        for (std::size_t j = 0; j < kBytes; ++j)
          ASSERT_EQ(slot.data[j], payload[j]) << "byte " << j;
        EXPECT_EQ(std::count(memory.begin(), memory.end(), std::uint8_t{0xEE}),
                  static_cast<std::ptrdiff_t>(kBytes))
            << "the region was written after unpost()";
      },
      options);
}

TEST(TcpTransport, GarbageConnectionsAreRefusedAndTheGroupStillForms) {
  InMemoryStore store;
  const TcpOptions options = smallOptions("garbage");
  RankZero rankZero(store, options);
  // Rank 0 listens once it knows where every rank runs: say rank 1 runs here.
  store.set("tcp/garbage/netns/1", toBytes(networkNamespaceId()));
  sendToRankZero(store, "garbage", "GET / HTTP/1.1\r\nHost: chorus\r\n\r\n and some more bytes");
  sendToRankZero(store, "garbage", "x");  // too short for a header, then closed
  auto one = connectTcp(store, 1, 2, options);
  rankZero.join();
  ASSERT_NE(rankZero.connections, nullptr) << rankZero.error;
  EXPECT_EQ(rankZero.connections->abortReason(), "");
  EXPECT_EQ(one->abortReason(), "");
}

TEST(TcpTransport, ASilentConnectionDoesNotHangTheRendezvous) {
  InMemoryStore store;
  const TcpOptions options = smallOptions("silent");  // 20 s: a hello gets 2 s
  RankZero rankZero(store, options);
  store.set("tcp/silent/netns/1", toBytes(networkNamespaceId()));
  const SocketFd silent = connectToRankZero(store, "silent");  // says nothing, stays open
  ASSERT_TRUE(silent);
  const auto start = Clock::now();
  auto one = connectTcp(store, 1, 2, options);
  rankZero.join();
  EXPECT_LT(Clock::now() - start, 10s);
  ASSERT_NE(rankZero.connections, nullptr) << rankZero.error;
  EXPECT_EQ(rankZero.connections->abortReason(), "");
}

TEST(TcpTransport, GarbageFromAConnectedPeerFailsTheGroupNamingIt) {
  withFakeRankOne(
      "midstream", [](SocketFd& fd) { sendBytes(fd, std::string(64, 'z')); },
      [](ConnectionSet& zero) {
        spinUntil([&] { return !zero.abortReason().empty(); }, "the malformed frame");
        EXPECT_THAT(zero.abortReason(), HasSubstr("lost rank 1 on fakehost"));
        EXPECT_THAT(zero.abortReason(), HasSubstr("malformed frame: bad magic"));
      });
}

TEST(TcpTransport, ConnectionResetFailsTheGroupNamingThePeer) {
  withFakeRankOne(
      "reset",
      [](SocketFd& fd) {
        // Closing with a zero linger time sends a reset instead of an orderly close.
        const linger abortive{1, 0};
        ::setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &abortive, sizeof(abortive));
        fd = SocketFd();
      },
      [](ConnectionSet& zero) {
        spinUntil([&] { return !zero.abortReason().empty(); }, "the reset");
        EXPECT_THAT(zero.abortReason(), HasSubstr("lost rank 1 on fakehost"));
        EXPECT_THAT(zero.abortReason(), HasSubstr("reset"));
      });
}

TEST(TcpTransport, ACreditForSlotsNeverSentFailsTheGroup) {
  withFakeRankOne(
      "credit",
      [](SocketFd& fd) {
        std::array<std::uint8_t, kFrameHeaderBytes> credit{};
        FrameHeader header;
        header.kind = FrameKind::credit;
        header.count = 3;
        encodeFrameHeader(header, credit);
        sendBytes(fd, std::string(credit.begin(), credit.end()));
      },
      [](ConnectionSet& zero) {
        zero.sendFifo(1, 0);  // a FIFO that has sent nothing
        spinUntil([&] { return !zero.abortReason().empty(); }, "the bogus credit");
        EXPECT_THAT(zero.abortReason(), HasSubstr("returned 3 credits on channel 0"));
      });
}

TEST(TcpTransport, WrongTokenIsRefusedAndNamedWhenTheRankNeverConnects) {
  InMemoryStore store;
  TcpOptions good = smallOptions("token");
  good.authToken = "s3cret";
  good.timeout = 2s;
  TcpOptions bad = good;
  bad.authToken = "guess";
  RankZero rankZero(store, good);
  auto one = connectTcp(store, 1, 2, bad);  // its hello goes out; rank 0 refuses it
  rankZero.join();
  EXPECT_THAT(rankZero.error, HasSubstr("ranks 1 to connect"));
  EXPECT_THAT(rankZero.error, HasSubstr("wrong or missing CHORUS_AUTH_TOKEN"));
  spinUntil([&] { return !one->abortReason().empty(); }, "rank 1 to see the refusal");
  EXPECT_THAT(one->abortReason(), HasSubstr("lost rank 0"));
}

TEST(TcpTransport, ConnectionsOfAnotherGroupAreRefused) {
  InMemoryStore store;
  TcpOptions mine = smallOptions("mine");
  mine.timeout = 2s;
  RankZero rankZero(store, mine);
  // Rank 1 of "mine" publishes but never connects; a rank of another group that found rank
  // 0's address connects instead.
  store.set("tcp/mine/netns/1", toBytes(networkNamespaceId()));
  store.set("tcp/mine/addr/1", toBytes("127.0.0.1 1 fakehost lo 1"));
  const std::string record = toString(store.get("tcp/mine/addr/0", 20s));
  store.set("tcp/theirs/addr/0", toBytes(record));
  store.set("tcp/theirs/netns/0", store.get("tcp/mine/netns/0", 20s));
  TcpOptions theirs = mine;
  theirs.groupId = "theirs";
  auto one = connectTcp(store, 1, 2, theirs);
  rankZero.join();
  EXPECT_THAT(rankZero.error, HasSubstr("another communicator or job"));
}

TEST(TcpTransport, RanksWithDifferentSocketsPerPeerBothFailNamingTheVariable) {
  InMemoryStore store;
  TcpOptions one = smallOptions("mismatch");
  TcpOptions two = one;
  two.socketsPerPeer = 2;
  RankZero rankZero(store, one);
  std::string error;
  try {
    connectTcp(store, 1, 2, two);
  } catch (const CommError& e) {
    error = e.what();
  }
  rankZero.join();
  // Both sides find the mismatch in the other's published record, at once.
  EXPECT_THAT(error, HasSubstr("rank 0 opens 1 connections per peer and this rank 2"));
  EXPECT_THAT(rankZero.error, HasSubstr("rank 1 opens 2 connections per peer and this rank 1"));
  EXPECT_THAT(rankZero.error, HasSubstr("CHORUS_SOCKETS_PER_PEER"));
}

TEST(TcpTransport, APeerAddressThatRefusesFailsFastNamingIt) {
  // Rank 0's published address has nobody listening (a wrong address for this host, or rank 0
  // died after publishing): rank 1 gives up after a short grace, not at the 20 s timeout.
  InMemoryStore store;
  const TcpOptions options = smallOptions("refused");
  int port = 0;
  {
    SocketFd probe(::socket(AF_INET, SOCK_STREAM, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(probe.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    socklen_t length = sizeof(address);
    ::getsockname(probe.get(), reinterpret_cast<sockaddr*>(&address), &length);
    port = ntohs(address.sin_port);
  }  // closed: the port refuses
  store.set("tcp/refused/netns/0", toBytes(networkNamespaceId()));
  store.set("tcp/refused/addr/0", toBytes(fmt::format("127.0.0.1 {} elsewhere lo 1", port)));
  const auto start = Clock::now();
  std::string error;
  try {
    connectTcp(store, 1, 2, options);
  } catch (const CommError& e) {
    error = e.what();
  }
  EXPECT_LT(Clock::now() - start, 10s);
  EXPECT_THAT(error, HasSubstr("cannot reach rank 0 on elsewhere"));
  EXPECT_THAT(error, HasSubstr("Connection refused"));
  EXPECT_THAT(error, HasSubstr("CHORUS_SOCKET_IFNAME"));
}

TEST(TcpTransport, BadOptionsAreOptionErrors) {
  InMemoryStore store;
  EXPECT_THROW(connectTcp(store, 2, 2, smallOptions("x")), OptionError);
  EXPECT_THROW(connectTcp(store, 0, 1, TcpOptions{}), OptionError);
  auto single = connectTcp(store, 0, 1, smallOptions("single"));
  EXPECT_EQ(single->nranks(), 1);
}

}  // namespace
}  // namespace chorus::transport
