// The shm transport across real processes: FIFO order, sizes, tags and full/empty states, the
// flagged LL and LL128 formats (every size, stale lines, mismatched formats), lazy
// segment creation racing from both ends, abort and published calls, peers that exit (zombie
// or reaped) versus peers that leave cleanly, the one-host check, a full /dev/shm, mismatched
// FIFO shapes, and that no /dev/shm names are left behind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <poll.h>
#include <signal.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "support/error.h"
#include "transport/file_store.h"
#include "transport/in_memory_store.h"
#include "transport/shm/peer_liveness.h"
#include "transport/shm/shm_bootstrap.h"
#include "transport/shm/shm_fifo.h"
#include "transport/shm/shm_transport.h"

namespace chorus::transport {
// Failures print the format's name.
void PrintTo(LineFormat format, std::ostream* os) {
  *os << lineFormatName(format);
}
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Throws (and so fails the child) unless `condition` holds.
void require(bool condition, const std::string& what) {
  if (!condition) throw std::runtime_error("child check failed: " + what);
}

// A forked child running `body`; it ends with _exit(0) if body returns and _exit(1) after
// sending the exception's message otherwise. The destructor kills and reaps it if needed.
class Child {
 public:
  explicit Child(const std::function<void()>& body) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    std::fflush(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(fds[0]);
      int code = 0;
      try {
        body();
      } catch (const std::exception& e) {
        const std::string message = e.what();
        [[maybe_unused]] auto wrote = ::write(fds[1], message.data(), message.size());
        code = 1;
      }
      ::_exit(code);
    }
    ::close(fds[1]);
    fd_ = fds[0];
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (fd_ < 0) return;
    ::kill(pid_, SIGKILL);
    join(5s);
  }
  pid_t pid() const { return pid_; }

  // Waits for the child; "" if it succeeded, else its error or how it ended.
  std::string join(std::chrono::milliseconds timeout = 20s) {
    std::string message;
    const auto deadline = Clock::now() + timeout;
    char buffer[1024];
    while (true) {
      pollfd entry{fd_, POLLIN, 0};
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        ::kill(pid_, SIGKILL);
        message += " [child timed out and was killed]";
        break;
      }
      if (::poll(&entry, 1, static_cast<int>(left)) <= 0) continue;
      const ssize_t got = ::read(fd_, buffer, sizeof(buffer));
      if (got <= 0) break;
      message.append(buffer, static_cast<std::size_t>(got));
    }
    ::close(fd_);
    fd_ = -1;
    int status = 0;
    ::waitpid(pid_, &status, 0);
    if (WIFSIGNALED(status)) message += fmt::format(" [killed by signal {}]", WTERMSIG(status));
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && message.empty())
      message = fmt::format("exit status {}", WEXITSTATUS(status));
    return message;
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
};

// Waits until `ready` holds or 10 s pass.
bool eventually(const std::function<bool()>& ready, std::chrono::milliseconds limit = 10s) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(50us);
  }
  return ready();
}

std::uint64_t freeShmBytes() {
  struct statvfs info {};
  if (::statvfs("/dev/shm", &info) != 0) return 0;
  return static_cast<std::uint64_t>(info.f_bavail) * info.f_frsize;
}

class ShmTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/chorus-shm-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
    prefix_ = fmt::format("chorus-test-{}-{:08x}", ::getpid(), std::random_device()());
  }
  void TearDown() override {
    EXPECT_EQ(leftoverNames(), std::vector<std::string>{}) << "segments left in /dev/shm";
    std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<ConnectionSet> connect(int rank, FifoOptions fifo = {4, 4096}, int nranks = 2) {
    FileStore store(dir_);
    ShmOptions options;
    options.fifo = fifo;
    options.namePrefix = prefix_;
    options.timeout = 10s;
    return connectShm(store, rank, nranks, options);
  }

  // A key-value signal between the test's processes.
  void signal(const std::string& key) { FileStore(dir_).set(key, toBytes("1")); }
  void await(const std::string& key) { FileStore(dir_).get(key, 10s); }

  std::vector<std::string> leftoverNames() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
      const std::string name = entry.path().filename().string();
      if (name.rfind(prefix_ + "-", 0) == 0) names.push_back(name);
    }
    return names;
  }

  std::string dir_;
  std::string prefix_;
};

std::size_t messageSize(int i) {
  return static_cast<std::size_t>(i) * 37 % 4097;  // 0 .. 4096 bytes
}
std::uint64_t messageTag(int i) {
  return 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(i + 1);
}
std::uint8_t messageByte(int i, std::size_t at) {
  return static_cast<std::uint8_t>(i * 31 + at * 7);
}

TEST_F(ShmTransportTest, FifoKeepsOrderSizesAndTagsAcrossProcesses) {
  constexpr int kMessages = 3000;
  Child receiver([&] {
    auto connections = connect(1);
    Fifo& fifo = connections->recvFifo(0, 0);
    require(fifo.slotCount() == 4 && fifo.slotBytes() == 4096, "FIFO shape");
    RecvSlot slot;
    require(!fifo.tryRecvSlot(&slot), "a new FIFO is empty");
    signal("empty-checked");
    await("filled");
    const auto deadline = Clock::now() + 10s;
    for (int i = 0; i < kMessages; ++i) {
      while (!fifo.tryRecvSlot(&slot)) {
        if (Clock::now() > deadline) require(false, fmt::format("message {} arrives", i));
        std::this_thread::yield();  // the machine may have fewer cores than busy processes
      }
      require(slot.bytes == messageSize(i), fmt::format("size of message {}", i));
      require(slot.tag == messageTag(i), fmt::format("tag of message {}", i));
      if (slot.bytes > 64)  // small payloads travel inline in the slot's metadata line
        require(reinterpret_cast<std::uintptr_t>(slot.data) % 4096 == 0, "payload page-aligned");
      for (std::size_t b = 0; b < slot.bytes; ++b)
        if (slot.data[b] != messageByte(i, b))
          require(false, fmt::format("byte {} of message {}", b, i));
      fifo.releaseRecv();
      if (i == 3) {  // the sender filled exactly 4 slots and waits for them to drain
        require(!fifo.tryRecvSlot(&slot), "empty after draining a full FIFO");
        signal("drained");
      }
    }
  });
  auto connections = connect(0);
  await("empty-checked");
  Fifo& fifo = connections->sendFifo(1, 0);
  auto send = [&](int i) {
    std::uint8_t* data = nullptr;
    const auto deadline = Clock::now() + 10s;
    while ((data = fifo.trySendSlot()) == nullptr) {
      ASSERT_LT(Clock::now(), deadline) << "slot for message " << i;
      std::this_thread::yield();
    }
    for (std::size_t b = 0; b < messageSize(i); ++b)
      data[b] = messageByte(i, b);
    fifo.commitSend(messageSize(i), messageTag(i));
  };
  for (int i = 0; i < 4; ++i)
    send(i);
  EXPECT_EQ(fifo.trySendSlot(), nullptr) << "4 slots in flight: the FIFO is full";
  signal("filled");
  await("drained");
  EXPECT_NE(fifo.trySendSlot(), nullptr);
  for (int i = 4; i < kMessages; ++i)
    send(i);
  EXPECT_EQ(receiver.join(), "");
  EXPECT_EQ(connections->abortReason(), "");
}

TEST_F(ShmTransportTest, LazyCreationRacesFromBothEndsMeetInOneSegment) {
  constexpr int kChannels = 24;
  // Both ends open every connection of both directions in the same order, so they race for
  // each segment; each message then proves both ends share it.
  auto exchange = [&](ConnectionSet& connections, int peer) {
    for (int ch = 0; ch < kChannels; ++ch) {
      if (connections.rank() == 0) {
        connections.sendFifo(peer, ch);
        connections.recvFifo(peer, ch);
      } else {
        connections.recvFifo(peer, ch);
        connections.sendFifo(peer, ch);
      }
    }
    for (int ch = 0; ch < kChannels; ++ch) {
      Fifo& out = connections.sendFifo(peer, ch);
      std::uint8_t* data = out.trySendSlot();
      require(data != nullptr, "a fresh FIFO has room");
      data[0] = static_cast<std::uint8_t>(connections.rank() * 100 + ch);
      out.commitSend(1, static_cast<std::uint64_t>(ch));
    }
    const auto deadline = Clock::now() + 10s;
    for (int ch = 0; ch < kChannels; ++ch) {
      Fifo& in = connections.recvFifo(peer, ch);
      RecvSlot slot;
      while (!in.tryRecvSlot(&slot)) {
        require(Clock::now() < deadline, fmt::format("message on channel {}", ch));
        std::this_thread::yield();
      }
      require(slot.bytes == 1 && slot.tag == static_cast<std::uint64_t>(ch) &&
                  slot.data[0] == static_cast<std::uint8_t>(peer * 100 + ch),
              fmt::format("the peer's message on channel {}", ch));
      in.releaseRecv();
    }
  };
  Child child([&] {
    auto connections = connect(1);
    signal("ready-1");
    await("ready-0");
    exchange(*connections, 0);
    signal("exchanged-1");
    await("checked");
  });
  auto connections = connect(0);
  signal("ready-0");
  await("ready-1");
  exchange(*connections, 1);
  await("exchanged-1");
  // Every segment has both ends mapped, so its name is gone already.
  EXPECT_EQ(leftoverNames(), std::vector<std::string>{});
  signal("checked");
  EXPECT_EQ(child.join(), "");
}

TEST_F(ShmTransportTest, AbortAndPublishedCallsReachTheOtherProcess) {
  Child child([&] {
    auto connections = connect(1);
    connections->publishCall("allreduce #7 (count 3 float32 sum)");
    connections->abort("rank 1 says stop");
    signal("aborted");
    await("parent-aborted");
    require(connections->abortReason() == "rank 1 says stop", "the first reason wins");
    require(connections->peerCall(0) == "broadcast #2", "rank 0's call");
  });
  auto connections = connect(0);
  connections->publishCall("broadcast #2");
  await("aborted");
  EXPECT_EQ(connections->abortReason(), "rank 1 says stop");
  connections->abort("rank 0 fails too");
  EXPECT_EQ(connections->abortReason(), "rank 1 says stop");
  EXPECT_EQ(connections->peerCall(1), "allreduce #7 (count 3 float32 sum)");
  signal("parent-aborted");
  EXPECT_EQ(child.join(), "");
}

TEST_F(ShmTransportTest, NumberedCallsStoreTheirTextOncePerShapeAndReadWhole) {
  Child child([&] {
    auto connections = connect(1);
    connections->publishNumberedCall(5, "allreduce", 7, "(count 3 float32 sum)");
    connections->publishNumberedCall(5, "allreduce", 8, "(count 3 float32 sum)");
    signal("shape-5");
    await("read-5");
    connections->publishNumberedCall(6, "allgather", 9, "(count 4 int32)");
    signal("shape-6");
    await("read-6");
    connections->publishCall("p2p: send 4 B to rank 0");
    signal("plain");
    await("read-plain");
    connections->publishNumberedCall(6, "allgather", 10, "(count 4 int32)");
    signal("shape-6-again");
  });
  auto connections = connect(0);
  await("shape-5");
  EXPECT_EQ(connections->peerCall(1), "allreduce #8 (count 3 float32 sum)");
  signal("read-5");
  await("shape-6");
  EXPECT_EQ(connections->peerCall(1), "allgather #9 (count 4 int32)");
  signal("read-6");
  await("plain");
  EXPECT_EQ(connections->peerCall(1), "p2p: send 4 B to rank 0");
  signal("read-plain");
  await("shape-6-again");
  // The plain text replaced the shape's, so the same shape key stores its text again.
  EXPECT_EQ(connections->peerCall(1), "allgather #10 (count 4 int32)");
  EXPECT_EQ(child.join(), "");
}

TEST_F(ShmTransportTest, PeerThatExitsIsReportedWhileItIsAZombie) {
  Child child([&] {
    auto connections = connect(1);
    ::_exit(0);  // without leaving the group: as if it crashed
  });
  auto connections = connect(0);
  const auto start = Clock::now();
  // The child is not reaped until join(), so it stays a zombie meanwhile.
  EXPECT_TRUE(eventually([&] { return !connections->abortReason().empty(); }));
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_THAT(
      connections->abortReason(),
      HasSubstr(fmt::format("rank 1 (pid {}) exited before the group finished", child.pid())));
  EXPECT_EQ(child.join(), "");
}

TEST_F(ShmTransportTest, PeerThatExitsIsReportedAfterItWasReaped) {
  Child child([&] {
    auto connections = connect(1);
    ::_exit(0);
  });
  auto connections = connect(0);
  EXPECT_EQ(child.join(), "");  // reaped: the pid no longer exists
  EXPECT_TRUE(eventually([&] { return !connections->abortReason().empty(); }, 2s));
  EXPECT_THAT(connections->abortReason(), HasSubstr("rank 1 (pid"));
}

TEST_F(ShmTransportTest, PeerThatLeavesCleanlyIsNotAFailure) {
  Child child([&] { auto connections = connect(1); });
  auto connections = connect(0);
  EXPECT_EQ(child.join(), "");
  for (int check = 0; check < 10; ++check) {
    EXPECT_EQ(connections->abortReason(), "");
    std::this_thread::sleep_for(2ms);  // past the liveness check interval
  }
}

TEST_F(ShmTransportTest, PeerThatLeftBeforeTheCollectiveThisRankWaitsInFailsItAtOnce) {
  Child child([&] {
    auto connections = connect(1);
    connections->publishNumberedCall(1, "allreduce", 0, "(count 3 float32 sum)");
    // Leaves after one collective (#0), while rank 0 goes on to #1.
  });
  auto connections = connect(0);
  EXPECT_EQ(child.join(), "");
  EXPECT_TRUE(connections->peerDeparted(1));
  connections->publishNumberedCall(1, "allreduce", 0, "(count 3 float32 sum)");
  for (int check = 0; check < 5; ++check) {
    EXPECT_EQ(connections->abortReason(), "") << "rank 1 made collective #0 too";
    std::this_thread::sleep_for(2ms);  // past the liveness check interval
  }
  connections->publishNumberedCall(1, "allreduce", 1, "(count 3 float32 sum)");
  EXPECT_TRUE(eventually([&] { return !connections->abortReason().empty(); }, 2s));
  EXPECT_THAT(connections->abortReason(),
              HasSubstr("rank 1 left the group (destroyed its communicator) after 1 collective "
                        "calls, while rank 0 waits in collective #1"));
}

TEST_F(ShmTransportTest, PeerThatLeftIsNoFailureOutsideACollective) {
  Child child([&] { auto connections = connect(1); });
  auto connections = connect(0);
  EXPECT_EQ(child.join(), "");
  connections->publishCall("send #0 to rank 1 (count 4 uint8)");
  for (int check = 0; check < 5; ++check) {
    EXPECT_EQ(connections->abortReason(), "");
    std::this_thread::sleep_for(2ms);
  }
  EXPECT_TRUE(connections->peerDeparted(1));
  EXPECT_FALSE(connections->peerDeparted(0));
}

class PeerLivenessTest : public ::testing::TestWithParam<bool> {};

TEST_P(PeerLivenessTest, SeesAPeerExitAsZombieAndAfterReaping) {
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  Child child([&] {
    ::close(go[1]);
    char byte;
    [[maybe_unused]] auto got = ::read(go[0], &byte, 1);  // exits when told to
  });
  ::close(go[0]);
  PeerLiveness liveness({::getpid(), child.pid()}, {false, true}, GetParam());
  EXPECT_EQ(liveness.findExited(), -1);
  EXPECT_FALSE(liveness.hasExited(1));
  ::close(go[1]);  // end of file: the child returns and exits
  EXPECT_TRUE(eventually([&] { return liveness.findExited() == 1; }));
  EXPECT_TRUE(liveness.hasExited(1)) << "a zombie until join() reaps it";
  EXPECT_EQ(child.join(), "");
  EXPECT_TRUE(liveness.hasExited(1)) << "reaped";
  EXPECT_EQ(liveness.findExited(), 1);
  liveness.forget(1);
  EXPECT_EQ(liveness.findExited(), -1);
  EXPECT_FALSE(liveness.hasExited(0)) << "rank 0 is not watched";
}

INSTANTIATE_TEST_SUITE_P(Methods, PeerLivenessTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("Pidfd") : std::string("Procfs");
                         });

TEST_F(ShmTransportTest, RanksOnAnotherHostAreRefused) {
  const RankIdentity self = identifyThisProcess();
  RankIdentity far = self;
  far.hostname = "far-away-host";
  far.bootId = "00000000-0000-0000-0000-000000000000";
  FileStore(dir_).set(identityKey(prefix_, 1), toBytes(formatIdentity(far)));
  try {
    connect(0);
    FAIL() << "expected a CommError";
  } catch (const CommError& e) {
    EXPECT_THAT(e.what(), HasSubstr("not all on one host"));
    EXPECT_THAT(e.what(), HasSubstr("rank 1 on host 'far-away-host'"));
    EXPECT_THAT(e.what(), HasSubstr(fmt::format("rank 0 on host '{}'", self.hostname)));
    EXPECT_THAT(e.what(), HasSubstr("TCP"));
  }
}

TEST_F(ShmTransportTest, MalformedIdentityRecordIsNamed) {
  FileStore(dir_).set(identityKey(prefix_, 1), toBytes("host=x\nno equals sign"));
  try {
    connect(0);
    FAIL() << "expected a CommError";
  } catch (const CommError& e) {
    EXPECT_THAT(e.what(), HasSubstr("rank 1 published a malformed identity record"));
  }
}

TEST_F(ShmTransportTest, FullDevShmIsACommErrorNamingTheVariables) {
  // Eight slots of this size need four times what /dev/shm has free.
  const FifoOptions huge{8, std::max<std::size_t>(freeShmBytes() / 2, std::size_t{1} << 30)};
  Child child([&] {
    auto connections = connect(1, huge);
    const auto deadline = Clock::now() + 10s;
    while (connections->abortReason().empty()) {
      require(Clock::now() < deadline, "rank 0's failure reaches rank 1");
      std::this_thread::yield();
    }
    require(connections->abortReason().find("CHORUS_SLOT_BYTES") != std::string::npos,
            "rank 1 sees why: " + connections->abortReason());
  });
  auto connections = connect(0, huge);
  try {
    connections->sendFifo(1, 0);
    FAIL() << "expected a CommError";
  } catch (const CommError& e) {
    EXPECT_THAT(e.what(), HasSubstr("/dev/shm has no room"));
    EXPECT_THAT(e.what(), HasSubstr("CHORUS_SLOT_BYTES"));
    EXPECT_THAT(e.what(), HasSubstr("CHORUS_SLOTS"));
    EXPECT_THAT(e.what(), HasSubstr("--shm-size"));
  }
  EXPECT_EQ(child.join(), "");
}

// ---- Flagged formats (LL, LL128) ----------------------------------------------------------

// Every message size a flagged format must carry: each of 0..1100 bytes, then odd and even
// sizes around every power of two and a prime stride up to the format's largest message.
std::vector<std::size_t> flaggedSizes(std::size_t cap) {
  std::vector<std::size_t> sizes;
  for (std::size_t b = 0; b <= 1100; ++b)
    sizes.push_back(b);
  for (std::size_t p = 2048; p <= cap; p *= 2)
    for (std::size_t b : {p - 1, p, p + 1})
      if (b <= cap) sizes.push_back(b);
  for (std::size_t b = 1103; b <= cap; b += 997)
    sizes.push_back(b);
  return sizes;
}

std::size_t flaggedCap(LineFormat format) {
  return format == LineFormat::ll ? kLlMaxMessageBytes : kLl128MaxMessageBytes;
}

// Sends `bytes` of message `i` on `fifo`, waiting up to 10 s for a slot.
void sendMessage(Fifo& fifo, int i, std::size_t bytes) {
  std::uint8_t* data = nullptr;
  const auto deadline = Clock::now() + 10s;
  while ((data = fifo.trySendSlot()) == nullptr) {
    require(Clock::now() < deadline, fmt::format("a slot for message {}", i));
    std::this_thread::yield();
  }
  for (std::size_t b = 0; b < bytes; ++b)
    data[b] = messageByte(i, b);
  fifo.commitSend(bytes, messageTag(i));
}

// Receives message `i` of `bytes` on `fifo` and checks size, tag and every byte.
void receiveMessage(Fifo& fifo, int i, std::size_t bytes) {
  RecvSlot slot;
  const auto deadline = Clock::now() + 10s;
  while (!fifo.tryRecvSlot(&slot)) {
    require(Clock::now() < deadline, fmt::format("message {} ({} bytes) arrives", i, bytes));
    std::this_thread::yield();
  }
  require(!slot.remote && !slot.delivered, fmt::format("message {} is in the slot", i));
  require(slot.bytes == bytes, fmt::format("message {}: {} bytes, not {}", i, slot.bytes, bytes));
  require(slot.tag == messageTag(i), fmt::format("tag of message {}", i));
  for (std::size_t b = 0; b < bytes; ++b)
    if (slot.data[b] != messageByte(i, b))
      require(false, fmt::format("byte {} of message {} ({} bytes)", b, i, bytes));
  fifo.releaseRecv();
}

class ShmFlaggedFifoTest : public ShmTransportTest,
                           public ::testing::WithParamInterface<LineFormat> {};

// Every size from 0 bytes to the format's largest message (8 KiB LL, 64 KiB LL128) crosses
// processes intact, and big and small messages alternate in the same slots, so a slot's
// previous, longer message is always there when a shorter one arrives.
TEST_P(ShmFlaggedFifoTest, EverySizeRoundTripsAndSlotsAreReused) {
  const LineFormat format = GetParam();
  const std::vector<std::size_t> sizes = flaggedSizes(flaggedCap(format));
  auto sizeOf = [&](int i) {  // each size once, and after each the largest message again
    const auto k = static_cast<std::size_t>(i);
    return k % 2 == 0 ? sizes[k / 2] : flaggedCap(format);
  };
  const int messages = static_cast<int>(sizes.size() * 2);
  const FifoOptions shape{3, 64 << 10};
  Child receiver([&] {
    auto connections = connect(1, shape);
    Fifo& fifo = connections->recvFifo(0, 0);
    fifo.setLineFormat(format);
    require(fifo.lineFormat() == format, "the shm FIFO takes the flagged format");
    for (int i = 0; i < messages; ++i)
      receiveMessage(fifo, i, sizeOf(i));
  });
  auto connections = connect(0, shape);
  Fifo& fifo = connections->sendFifo(1, 0);
  fifo.setLineFormat(format);
  for (int i = 0; i < messages; ++i)
    sendMessage(fifo, i, sizeOf(i));
  EXPECT_EQ(receiver.join(), "");
  EXPECT_EQ(connections->abortReason(), "");
}

// A slot still holding its previous message, flags and all, is not taken for the next one: the
// flag is per use of the slot. The sender stages message 2 (slot 0 again) and the receiver
// finds nothing until it is committed; then the format switches per message, as between calls.
TEST_P(ShmFlaggedFifoTest, StaleLinesOfTheSlotsPreviousUseAreIgnored) {
  const LineFormat format = GetParam();
  const FifoOptions shape{2, 16 << 10};
  Child receiver([&] {
    auto connections = connect(1, shape);
    Fifo& fifo = connections->recvFifo(0, 0);
    fifo.setLineFormat(format);
    receiveMessage(fifo, 0, 5000);
    receiveMessage(fifo, 1, 3);
    await("staged");
    RecvSlot slot;
    for (int poll = 0; poll < 1000; ++poll)
      require(!fifo.tryRecvSlot(&slot), "slot 0's previous message is not taken for message 2");
    signal("polled");
    receiveMessage(fifo, 2, 4999);
    fifo.setLineFormat(LineFormat::simple);
    receiveMessage(fifo, 3, 100);
    fifo.setLineFormat(format);
    receiveMessage(fifo, 4, 7);
  });
  auto connections = connect(0, shape);
  Fifo& fifo = connections->sendFifo(1, 0);
  fifo.setLineFormat(format);
  sendMessage(fifo, 0, 5000);
  sendMessage(fifo, 1, 3);
  std::uint8_t* data = nullptr;
  ASSERT_TRUE(eventually([&] { return (data = fifo.trySendSlot()) != nullptr; }));
  for (std::size_t b = 0; b < 4999; ++b)
    data[b] = messageByte(2, b);
  signal("staged");
  await("polled");
  fifo.commitSend(4999, messageTag(2));
  fifo.setLineFormat(LineFormat::simple);
  sendMessage(fifo, 3, 100);
  fifo.setLineFormat(format);
  sendMessage(fifo, 4, 7);
  EXPECT_EQ(receiver.join(), "");
}

INSTANTIATE_TEST_SUITE_P(Formats, ShmFlaggedFifoTest,
                         ::testing::Values(LineFormat::ll, LineFormat::ll128),
                         [](const auto& info) { return std::string(lineFormatName(info.param)); });

// The LL flag of message n: never 0 (a line never written), distinct for 2^32 - 1 messages.
TEST(ShmFifoLlFlag, NeverZeroAndWrapsAfter2To32Minus1Messages) {
  EXPECT_EQ(ShmFifo::llFlag(1), 1u);
  EXPECT_EQ(ShmFifo::llFlag(2), 2u);
  EXPECT_EQ(ShmFifo::llFlag(0xffffffffull), 0xffffffffu);
  EXPECT_EQ(ShmFifo::llFlag(0x100000000ull), 1u) << "wraps past 0";
  for (std::uint64_t n = 0xfffffff0ull; n < 0x100000010ull; ++n) {
    EXPECT_NE(ShmFifo::llFlag(n), 0u) << n;
    EXPECT_NE(ShmFifo::llFlag(n), ShmFifo::llFlag(n + 1)) << n;
  }
}

// Ends running different protocols get a CommError naming both formats and the fix, instead
// of waiting for flags that never come: an LL message at a Simple receiver, and a Simple one at
// an LL128 receiver.
TEST_F(ShmTransportTest, MismatchedLineFormatsAreNamed) {
  Child receiver([&] {
    auto connections = connect(1);
    Fifo& simple = connections->recvFifo(0, 0);
    Fifo& flagged = connections->recvFifo(0, 1);
    flagged.setLineFormat(LineFormat::ll128);
    await("sent");
    auto expectError = [](Fifo& fifo, const std::string& what) {
      RecvSlot slot;
      try {
        for (int poll = 0; poll < 10000; ++poll)
          fifo.tryRecvSlot(&slot);
      } catch (const CommError& e) {
        require(std::string(e.what()).find(what) != std::string::npos, e.what());
        require(std::string(e.what()).find("same plan") != std::string::npos, e.what());
        return;
      }
      require(false, "a message in another format is refused: " + what);
    };
    expectError(simple, "sent in the LL format but this end receives Simple");
    expectError(flagged, "sent in the Simple format but this end receives LL128");
  });
  auto connections = connect(0);
  Fifo& ll = connections->sendFifo(1, 0);
  ll.setLineFormat(LineFormat::ll);
  sendMessage(ll, 0, 8);
  sendMessage(connections->sendFifo(1, 1), 0, 8);
  signal("sent");
  EXPECT_EQ(receiver.join(), "");
}

TEST_F(ShmTransportTest, MismatchedFifoShapesAreNamed) {
  Child child([&] {
    auto connections = connect(1, {8, 8192});
    await("created");
    try {
      connections->recvFifo(0, 0);
    } catch (const CommError& e) {
      require(std::string(e.what()).find("CHORUS_SLOT_BYTES") != std::string::npos, e.what());
      return;
    }
    require(false, "a FIFO of another shape is refused");
  });
  auto connections = connect(0, {8, 4096});
  connections->sendFifo(1, 0);
  signal("created");
  EXPECT_TRUE(eventually([&] { return !connections->abortReason().empty(); }));
  EXPECT_THAT(connections->abortReason(),
              HasSubstr("was set up by the peer with 8 slots of 4 KiB"));
  EXPECT_EQ(child.join(), "");
}

TEST_F(ShmTransportTest, SenderMayLeaveBeforeTheReceiverOpens) {
  Child child([&] {
    auto connections = connect(1);
    Fifo& fifo = connections->sendFifo(0, 2);
    std::uint8_t* data = fifo.trySendSlot();
    require(data != nullptr, "a fresh FIFO has room");
    std::memcpy(data, "bye", 3);
    fifo.commitSend(3, 42);
  });
  auto connections = connect(0);
  EXPECT_EQ(child.join(), "");  // gone before rank 0 looks at the connection
  Fifo& fifo = connections->recvFifo(1, 2);
  RecvSlot slot;
  ASSERT_TRUE(fifo.tryRecvSlot(&slot));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(slot.data), slot.bytes), "bye");
  EXPECT_EQ(slot.tag, 42u);
  EXPECT_EQ(connections->abortReason(), "") << "a peer that left cleanly is not a failure";
}

TEST_F(ShmTransportTest, NamesNobodyWillOpenAreRemovedWhenTheirRanksLeave) {
  Child child([&] {
    auto connections = connect(1);
    await("rank-0-left");
    connections->sendFifo(0, 5);  // rank 0 has left: nobody will open this one
  });
  auto connections = connect(0);
  connections->sendFifo(1, 3);
  EXPECT_EQ(leftoverNames(), std::vector<std::string>{prefix_ + "-c0-1-3"});
  connections.reset();
  // Rank 1 is still there and may open it (and would find rank 0's messages in it).
  EXPECT_EQ(leftoverNames(), std::vector<std::string>{prefix_ + "-c0-1-3"});
  signal("rank-0-left");
  EXPECT_EQ(child.join(), "");
  EXPECT_EQ(leftoverNames(), std::vector<std::string>{});
}

TEST_F(ShmTransportTest, SingleRankGroupNeedsNoPeers) {
  auto connections = connect(0, {4, 4096}, 1);
  EXPECT_EQ(connections->nranks(), 1);
  EXPECT_EQ(connections->abortReason(), "");
  EXPECT_THROW(connections->sendFifo(0, 0), CommError);
}

TEST_F(ShmTransportTest, BadOptionsAreOptionErrors) {
  InMemoryStore store;
  ShmOptions options;
  options.namePrefix = prefix_;
  EXPECT_THROW(connectShm(store, 2, 2, options), OptionError);
  EXPECT_THROW(connectShm(store, 0, 0, options), OptionError);
  ShmOptions badPrefix = options;
  badPrefix.namePrefix = "a/b";
  EXPECT_THROW(connectShm(store, 0, 1, badPrefix), OptionError);
  badPrefix.namePrefix = "";
  EXPECT_THROW(connectShm(store, 0, 1, badPrefix), OptionError);
  ShmOptions badSlots = options;
  badSlots.fifo.slots = 0;
  try {
    connectShm(store, 0, 1, badSlots);
    FAIL() << "expected an OptionError";
  } catch (const OptionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("CHORUS_SLOTS"));
  }
  ShmOptions tinySlots = options;
  tinySlots.fifo.slotBytes = 8;
  try {
    connectShm(store, 0, 1, tinySlots);
    FAIL() << "expected an OptionError";
  } catch (const OptionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("CHORUS_SLOT_BYTES"));
  }
}

}  // namespace
}  // namespace chorus::transport
