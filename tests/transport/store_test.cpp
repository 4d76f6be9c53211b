// Tests of the rendezvous stores (InMemoryStore, FileStore, TcpStore), PrefixStore and the
// unique id: each store type under threads, forked processes and failures.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <set>
#include <thread>

#include "temp_dir.h"
#include "transport/file_store.h"
#include "transport/in_memory_store.h"
#include "transport/store.h"
#include "transport/tcp_store.h"
#include "transport/unique_id.h"

namespace chorus::transport {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr milliseconds kLong(5'000);     // a wait that should succeed long before this
constexpr milliseconds kShort(50);       // a wait that is expected to time out
constexpr milliseconds kConnect(5'000);  // TcpStore connect retries

// A fresh directory under the temp dir, removed at the end of the test.
using chorus::testing_support::TempDir;

// Makes one store of a kind plus further clients of the same store ("another rank").
class StoreFactory {
 public:
  explicit StoreFactory(const std::string& kind) : kind_(kind) {
    if (kind == "memory") {
      first_ = std::make_shared<InMemoryStore>();
    } else if (kind == "file") {
      dir_ = std::make_unique<TempDir>();
      first_ = std::make_shared<FileStore>(dir_->path());
    } else {
      auto server = std::make_shared<TcpStore>("127.0.0.1", 0, true, kConnect);
      port_ = server->port();
      first_ = server;
    }
  }
  std::shared_ptr<Store> first() const { return first_; }
  // A new client of the same store (the same object for the in-memory store).
  std::shared_ptr<Store> connect() const {
    if (kind_ == "memory") return first_;
    if (kind_ == "file") return std::make_shared<FileStore>(dir_->path());
    return std::make_shared<TcpStore>("127.0.0.1", port_, false, kConnect);
  }

 private:
  std::string kind_;
  std::unique_ptr<TempDir> dir_;
  int port_ = 0;
  std::shared_ptr<Store> first_;
};

template <typename Error>
std::string messageOf(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

class StoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  StoreFactory factory_{GetParam()};
};

TEST_P(StoreTest, SetGetRoundTrip) {
  auto store = factory_.first();
  store->set("plain", toBytes("value"));
  store->set("with/slash and space%", toBytes("odd key"));
  store->set("empty", {});
  std::vector<std::uint8_t> binary = {0, 1, 255, 0, 128};
  store->set("binary", binary);
  auto other = factory_.connect();
  EXPECT_EQ(toString(other->get("plain", kLong)), "value");
  EXPECT_EQ(toString(other->get("with/slash and space%", kLong)), "odd key");
  EXPECT_TRUE(other->get("empty", kLong).empty());
  EXPECT_EQ(other->get("binary", kLong), binary);
  other->set("plain", toBytes("overwritten"));
  EXPECT_EQ(toString(store->get("plain", kLong)), "overwritten");
}

TEST_P(StoreTest, GetTimeoutNamesKeyAndTimeout) {
  auto store = factory_.first();
  auto message = messageOf<TimeoutError>([&] { store->get("rank3/address", kShort); });
  EXPECT_THAT(message, HasSubstr("'rank3/address'"));
  EXPECT_THAT(message, HasSubstr("50 ms"));
  EXPECT_THAT(message, HasSubstr("raise the timeout"));
}

TEST_P(StoreTest, GetWakesWhenAnotherRankSets) {
  auto store = factory_.first();
  std::thread setter([other = factory_.connect()] {
    std::this_thread::sleep_for(milliseconds(20));
    other->set("late", toBytes("here"));
  });
  EXPECT_EQ(toString(store->get("late", kLong)), "here");
  setter.join();
}

TEST_P(StoreTest, AddFromManyThreadsIsAtomic) {
  constexpr int kThreads = 8;
  constexpr int kAdds = 40;
  std::vector<std::vector<std::int64_t>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t, client = factory_.connect()] {
      for (int i = 0; i < kAdds; ++i)
        seen[t].push_back(client->add("counter", 1));
    });
  }
  for (auto& thread : threads)
    thread.join();
  std::set<std::int64_t> all;
  for (const auto& values : seen)
    all.insert(values.begin(), values.end());
  EXPECT_EQ(all.size(), static_cast<std::size_t>(kThreads * kAdds));  // every result distinct
  EXPECT_EQ(*all.rbegin(), kThreads * kAdds);
  auto store = factory_.first();
  EXPECT_EQ(toString(store->get("counter", kLong)), std::to_string(kThreads * kAdds));
  EXPECT_EQ(store->add("counter", -kThreads * kAdds), 0);
  EXPECT_EQ(store->add("fresh", 5), 5);
}

TEST_P(StoreTest, AddOnNonCounterIsAnOptionError) {
  auto store = factory_.first();
  store->set("text", toBytes("not a number"));
  auto message = messageOf<OptionError>([&] { store->add("text", 1); });
  EXPECT_THAT(message, HasSubstr("add('text')"));
}

TEST_P(StoreTest, CheckAndWait) {
  auto store = factory_.first();
  EXPECT_TRUE(store->check({}));
  EXPECT_FALSE(store->check({"a", "b"}));
  store->set("a", toBytes("1"));
  EXPECT_FALSE(store->check({"a", "b"}));
  auto message = messageOf<TimeoutError>([&] { store->wait({"a", "b", "c"}, kShort); });
  EXPECT_THAT(message, HasSubstr("'b', 'c'"));
  EXPECT_THAT(message, Not(HasSubstr("'a'")));
  std::thread setter([other = factory_.connect()] {
    std::this_thread::sleep_for(milliseconds(20));
    other->set("b", toBytes("2"));
    other->add("c", 1);
  });
  store->wait({"a", "b", "c"}, kLong);
  EXPECT_TRUE(store->check({"a", "b", "c"}));
  setter.join();
}

TEST_P(StoreTest, PrefixStoresAreIsolated) {
  auto base = factory_.first();
  PrefixStore comm1(base, "comm1");
  PrefixStore comm2(factory_.connect(), "comm2");
  comm1.set("rank0", toBytes("one"));
  comm2.set("rank0", toBytes("two"));
  EXPECT_EQ(comm1.add("barrier", 1), 1);
  EXPECT_EQ(comm2.add("barrier", 1), 1);
  EXPECT_EQ(toString(comm1.get("rank0", kLong)), "one");
  EXPECT_EQ(toString(comm2.get("rank0", kLong)), "two");
  EXPECT_EQ(toString(base->get("comm1/rank0", kLong)), "one");
  EXPECT_FALSE(base->check({"rank0"}));
  comm1.set("only1", toBytes("x"));
  EXPECT_FALSE(comm2.check({"only1"}));
  EXPECT_THAT(messageOf<TimeoutError>([&] { comm2.get("only1", kShort); }),
              HasSubstr("'comm2/only1'"));
}

INSTANTIATE_TEST_SUITE_P(AllStores, StoreTest, ::testing::Values("memory", "file", "tcp"),
                         [](const auto& info) { return info.param; });

// Forked children each add through their own client; the parent checks the total.
class ProcessStoreTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ProcessStoreTest, AddFromForkedProcesses) {
  constexpr int kChildren = 4;
  constexpr int kAdds = 25;
  StoreFactory factory(GetParam());
  std::vector<pid_t> children;
  for (int c = 0; c < kChildren; ++c) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 0;
      try {
        auto client = factory.connect();
        for (int i = 0; i < kAdds; ++i)
          client->add("procs", 1);
        client->set(fmt::format("done{}", c), toBytes("ok"));
      } catch (...) {
        code = 3;
      }
      ::_exit(code);
    }
    children.push_back(pid);
  }
  auto store = factory.first();
  std::vector<std::string> done;
  for (int c = 0; c < kChildren; ++c)
    done.push_back(fmt::format("done{}", c));
  store->wait(done, kLong);
  for (pid_t pid : children) {
    int status = 0;
    auto deadline = std::chrono::steady_clock::now() + kLong;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(milliseconds(1));
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << pid;
  }
  EXPECT_EQ(store->add("procs", 0), kChildren * kAdds);
}

INSTANTIATE_TEST_SUITE_P(SharedStores, ProcessStoreTest, ::testing::Values("file", "tcp"),
                         [](const auto& info) { return info.param; });

TEST(FileStoreTest, ReadersNeverSeeHalfWrittenValues) {
  TempDir dir;
  FileStore writer(dir.path());
  FileStore reader(dir.path());
  constexpr std::size_t kSize = 256 << 10;
  writer.set("big", std::vector<std::uint8_t>(kSize, 0));
  std::atomic<bool> stop{false};
  std::thread thread([&] {
    for (std::uint8_t round = 1; !stop; ++round) {
      writer.set("big", std::vector<std::uint8_t>(kSize, round));
    }
  });
  for (int i = 0; i < 20; ++i) {
    auto value = reader.get("big", kLong);
    ASSERT_EQ(value.size(), kSize);
    ASSERT_TRUE(std::all_of(value.begin(), value.end(), [&](auto b) { return b == value[0]; }));
  }
  stop = true;
  thread.join();
}

TEST(FileStoreTest, LongKeysStayDistinct) {
  TempDir dir;
  FileStore store(dir.path());
  std::string stem(400, 'k');
  store.set(stem + "1", toBytes("one"));
  store.set(stem + "2", toBytes("two"));
  EXPECT_EQ(toString(store.get(stem + "1", kLong)), "one");
  EXPECT_EQ(toString(store.get(stem + "2", kLong)), "two");
}

TEST(FileStoreTest, UnusableDirectoryIsACommError) {
  TempDir dir;
  auto file = dir.path() + "/plain-file";
  FileStore(dir.path()).set("x", toBytes("y"));
  std::filesystem::rename(dir.path() + "/x", file);
  EXPECT_THAT(messageOf<CommError>([&] { FileStore store(file); }), HasSubstr(file));
}

TEST(TcpStoreTest, PortZeroServesEightClientThreads) {
  TcpStore server("127.0.0.1", 0, true, kConnect);
  ASSERT_GT(server.port(), 0);
  constexpr int kRanks = 8;
  std::vector<std::string> keys;
  for (int r = 0; r < kRanks; ++r)
    keys.push_back(fmt::format("addr{}", r));
  std::vector<std::thread> threads;
  std::atomic<int> correct{0};
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      TcpStore client("127.0.0.1", server.port(), false, kConnect);
      client.set(keys[r], toBytes(std::to_string(r)));
      client.wait(keys, kLong);
      int good = 0;
      for (int p = 0; p < kRanks; ++p)
        good += toString(client.get(keys[p], kLong)) == std::to_string(p);
      if (good == kRanks) ++correct;
    });
  }
  for (auto& thread : threads)
    thread.join();
  EXPECT_EQ(correct, kRanks);
}

TEST(TcpStoreTest, OneObjectServesConcurrentCalls) {
  // A get blocked on one thread must not stall a set from another thread on the same object.
  auto store = std::make_shared<TcpStore>("127.0.0.1", 0, true, kConnect);
  std::thread getter([&] { EXPECT_EQ(toString(store->get("k", kLong)), "v"); });
  std::this_thread::sleep_for(milliseconds(20));
  store->set("k", toBytes("v"));
  getter.join();
}

TEST(TcpStoreTest, ServerDestroyedWhileClientWaitsIsACommError) {
  auto server = std::make_unique<TcpStore>("127.0.0.1", 0, true, kConnect);
  int port = server->port();
  TcpStore client("127.0.0.1", port, false, kConnect);
  std::string message;
  std::thread waiter([&] {
    // A TimeoutError here would mean the client sat out the whole timeout.
    message = messageOf<CommError>([&] { client.get("never", milliseconds(20'000)); });
  });
  std::this_thread::sleep_for(milliseconds(50));
  server.reset();
  waiter.join();
  EXPECT_THAT(message, HasSubstr(fmt::format("127.0.0.1:{}", port)));
  EXPECT_THAT(message, HasSubstr("get('never')"));
  EXPECT_THAT(message, HasSubstr("rank 0"));
  // Later calls fail fast too.
  EXPECT_THAT(messageOf<CommError>([&] { client.set("x", {}); }), HasSubstr("set('x')"));
}

TEST(TcpStoreTest, NoServerIsACommErrorWithAHint) {
  int port = TcpStore("127.0.0.1", 0, true, kConnect).port();  // free again once destroyed
  auto message =
      messageOf<CommError>([&] { TcpStore client("127.0.0.1", port, false, milliseconds(100)); });
  EXPECT_THAT(message, HasSubstr(fmt::format("127.0.0.1:{}", port)));
  EXPECT_THAT(message, HasSubstr("Connection refused"));
  EXPECT_THAT(message, HasSubstr("MASTER_ADDR/MASTER_PORT"));
}

// A loopback listener that is not a chorus store: its one connection gets `reply` (nothing if
// empty) and stays open, unanswered, until `hold` has passed or the object is destroyed.
class ForeignServer {
 public:
  ForeignServer(std::string reply, milliseconds hold) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    EXPECT_EQ(::listen(listener_, 4), 0);
    socklen_t length = sizeof(address);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this, reply = std::move(reply), hold] {
      int fd = ::accept(listener_, nullptr, nullptr);
      if (!reply.empty()) {
        [[maybe_unused]] auto sent = ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
      }
      const auto until = std::chrono::steady_clock::now() + hold;
      while (!stop_ && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(milliseconds(5));
      ::close(fd);
    });
  }
  ~ForeignServer() {
    stop_ = true;
    thread_.join();
    ::close(listener_);
  }
  int port() const { return port_; }

 private:
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(TcpStoreTest, ForeignServerFailsTheHandshake) {
  ForeignServer foreign("HTTP/1.1 400 Bad Request\r\n\r\n", milliseconds(0));
  auto message =
      messageOf<CommError>([&] { TcpStore client("127.0.0.1", foreign.port(), false, kConnect); });
  EXPECT_THAT(message, HasSubstr("not a chorus TcpStore server"));
}

TEST(TcpStoreTest, StoreThatNeverAnswersIsACommErrorWithinTheHandshakeTimeout) {
  // Accepts the connection, then says nothing: the client gives up after the handshake timeout
  // (5 s, or the connect timeout if longer) instead of waiting forever.
  ForeignServer silent("", milliseconds(60'000));
  const auto start = std::chrono::steady_clock::now();
  auto message = messageOf<CommError>(
      [&] { TcpStore client("127.0.0.1", silent.port(), false, milliseconds(100)); });
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(7'000));
  EXPECT_THAT(message, HasSubstr("handshake"));
  EXPECT_THAT(message, HasSubstr("timed out"));
}

TEST(TcpStoreTest, GarbageAtTheStorePortIsDroppedAndTheStoreGoesOn) {
  TcpStore server("127.0.0.1", 0, true, kConnect);
  server.set("k", toBytes("v"));
  // A stranger's bytes, a frame claiming 1 GiB before any hello, and a bare connection.
  const std::vector<std::string> visits = {
      "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
      std::string("\x00\x00\x00\x40", 4) + std::string(100'000, 'A'), ""};
  for (const std::string& bytes : visits) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<std::uint16_t>(server.port()));
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    if (!bytes.empty()) {
      [[maybe_unused]] auto sent = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      // The server hangs up on a stranger: reading reaches the end (or a reset) promptly.
      char sink[64];
      timeval wait{5, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
      EXPECT_LE(::recv(fd, sink, sizeof(sink), 0), 0) << "the server answered a stranger";
    }
    ::close(fd);
  }
  TcpStore client("127.0.0.1", server.port(), false, kConnect);
  EXPECT_EQ(toString(client.get("k", kLong)), "v");
}

TEST(TcpStoreTest, ServerWithATokenRefusesClientsWithoutIt) {
  TcpStore server("127.0.0.1", 0, true, kConnect, "s3cret");
  TcpStore good("127.0.0.1", server.port(), false, kConnect, "s3cret");
  good.set("k", toBytes("v"));
  for (const char* token : {"", "wrong", "s3cret-and-more"}) {
    SCOPED_TRACE(std::string("token '") + token + "'");
    auto message = messageOf<CommError>(
        [&] { TcpStore client("127.0.0.1", server.port(), false, kConnect, token); });
    EXPECT_THAT(message, HasSubstr("wrong or missing CHORUS_AUTH_TOKEN"));
    EXPECT_THAT(message, HasSubstr(fmt::format("127.0.0.1:{}", server.port())));
  }
  // The refusals did not disturb the server or its good clients.
  EXPECT_EQ(toString(good.get("k", kLong)), "v");
  TcpStore late("127.0.0.1", server.port(), false, kConnect, "s3cret");
  EXPECT_EQ(toString(late.get("k", kLong)), "v");
  // A server without a token refuses a client that presents one: set it everywhere or nowhere.
  TcpStore open("127.0.0.1", 0, true, kConnect);
  EXPECT_THAT(messageOf<CommError>(
                  [&] { TcpStore client("127.0.0.1", open.port(), false, kConnect, "s3cret"); }),
              HasSubstr("CHORUS_AUTH_TOKEN"));
}

TEST(TcpStoreTest, BadPortsAreOptionErrors) {
  EXPECT_THROW(TcpStore("127.0.0.1", 0, false, kConnect), OptionError);
  EXPECT_THROW(TcpStore("127.0.0.1", 70000, true, kConnect), OptionError);
  EXPECT_THROW(TcpStore("0.0.0.0", 1234, false, kConnect), OptionError);
}

TEST(UniqueIdTest, HexRoundTripKeepsAddressAndNonce) {
  auto id = makeUniqueId("127.0.0.1", 29500);
  auto hex = uniqueIdToHex(id);
  EXPECT_EQ(hex.size(), 256u);
  auto parsed = uniqueIdFromHex("  " + hex + "\n");
  EXPECT_EQ(parsed, id);
  std::string upper = hex;
  std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
  EXPECT_EQ(uniqueIdFromHex(upper), id);
  auto address = addressOf(parsed);
  EXPECT_EQ(address.host, "127.0.0.1");
  EXPECT_EQ(address.port, 29500);
  EXPECT_EQ(nonceOf(parsed), nonceOf(id));
  EXPECT_NE(nonceOf(makeUniqueId("127.0.0.1", 29500)), nonceOf(id));  // fresh nonce per id
}

TEST(UniqueIdTest, Ipv6AndHostNames) {
  auto address = addressOf(makeUniqueId("::1", 1234));
  EXPECT_EQ(address.host, "::1");
  EXPECT_EQ(address.port, 1234);
  auto local = addressOf(makeUniqueId("localhost", 80));
  EXPECT_TRUE(local.host == "127.0.0.1" || local.host == "::1") << local.host;
}

TEST(UniqueIdTest, BadInputIsAnOptionError) {
  auto id = makeUniqueId("127.0.0.1", 29500);
  id.bytes[0] ^= 0xff;
  EXPECT_THAT(messageOf<OptionError>([&] { addressOf(id); }), HasSubstr("bad magic"));
  EXPECT_THAT(messageOf<OptionError>([&] { uniqueIdFromHex(uniqueIdToHex(id)); }),
              HasSubstr("bad magic"));
  EXPECT_THAT(messageOf<OptionError>([&] { uniqueIdFromHex("abcd"); }),
              HasSubstr("expected 256 hex digits, got 4"));
  auto hex = uniqueIdToHex(makeUniqueId("127.0.0.1", 1));
  hex[7] = 'g';
  EXPECT_THAT(messageOf<OptionError>([&] { uniqueIdFromHex(hex); }), HasSubstr("character 7"));
  EXPECT_THROW(makeUniqueId("127.0.0.1", 0), OptionError);
  EXPECT_THROW(makeUniqueId("0.0.0.0", 29500), OptionError);
  EXPECT_THROW(makeUniqueId("no-such-host.invalid", 29500), OptionError);
}

TEST(UniqueIdTest, RendezvousThroughAnId) {
  TcpStore server("127.0.0.1", 0, true, kConnect);
  auto hex = uniqueIdToHex(makeUniqueId("127.0.0.1", server.port()));
  server.set("hello", toBytes("world"));
  auto address = addressOf(uniqueIdFromHex(hex));
  TcpStore client(address.host, address.port, false, kConnect);
  EXPECT_EQ(toString(client.get("hello", kLong)), "world");
}

}  // namespace
}  // namespace chorus::transport
