#include "transport/tcp_store.h"

#include "transport/socket_io.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <span>
#include <thread>
#include <unordered_map>
#include <variant>

namespace chorus::transport {

// Protocol (all integers little-endian). Every message is a frame: u32 payload length, payload.
// Strings and byte values are u32 length + bytes. A connection starts with a hello; then each
// request gets exactly one reply, in order. Requests (payload = u8 op, fields):
//   hello  u32 magic, u32 version, token -> ok, u32 magic, u32 version | error, message
//   set    key, value                    -> ok
//   get    key, i64 timeoutMs            -> ok, value | timeout
//   add    key, i64 delta                -> ok, i64 newValue | error, message
//   check  u32 n, n keys                 -> ok, u8 allExist
//   wait   u32 n, n keys, i64 timeoutMs  -> ok | timeout, u32 n, n missing keys
// Replies: payload = u8 status, fields. The server answers get/wait when the keys appear or at
// the deadline; meanwhile it reads no further request from that connection. A server with an
// auth token answers a hello whose token differs with an error and closes the connection.
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::uint32_t kMagic = 0x54534843;  // "CHST"
constexpr std::uint32_t kVersion = 2;
constexpr std::uint32_t kMaxFrame = 1u << 30;
constexpr std::uint32_t kMaxHelloReply = 4096;
// A client that has not greeted may send no more than this: an unauthenticated peer must not
// make the server buffer a large frame.
constexpr std::uint32_t kMaxHello = 64 << 10;
// ... and must greet within this long, so silent connections cannot pile up.
constexpr milliseconds kGreetWithin(10'000);
constexpr milliseconds kRequestTimeout(60'000);
constexpr milliseconds kReplyGrace(10'000);   // added to get/wait timeouts on the client side
constexpr milliseconds kHandshakeMin(5'000);  // a handshake always gets at least this long
constexpr milliseconds kMinRetry(10);
constexpr milliseconds kMaxRetry(500);
constexpr std::string_view kConnectHint =
    "is rank 0 running and reachable? check MASTER_ADDR/MASTER_PORT (or the unique id) and "
    "firewalls";
constexpr std::string_view kLostHint =
    "the store server (rank 0) exited or crashed; check its output";

}  // namespace

// The wire's operation and status codes. Outside the anonymous namespace because TcpStore's own
// nested types (Reply, Server::Waiter) hold them.
namespace tcp_store_wire {
enum class Op : std::uint8_t { kHello = 1, kSet = 2, kGet = 3, kAdd = 4, kCheck = 5, kWait = 6 };
enum class Status : std::uint8_t { kOk = 0, kTimeout = 1, kError = 2 };
}  // namespace tcp_store_wire
using tcp_store_wire::Op;
using tcp_store_wire::Status;

namespace {

// Appends protocol fields to a byte vector.
class Writer {
 public:
  Writer& u8(std::uint8_t v) {
    bytes_.push_back(v);
    return *this;
  }
  Writer& u32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i)
      bytes_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    return *this;
  }
  Writer& i64(std::int64_t value) {
    auto v = static_cast<std::uint64_t>(value);
    for (int i = 0; i < 8; ++i)
      bytes_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    return *this;
  }
  Writer& blob(std::span<const std::uint8_t> data) {
    u32(static_cast<std::uint32_t>(data.size()));
    bytes_.insert(bytes_.end(), data.begin(), data.end());
    return *this;
  }
  Writer& str(std::string_view text) {
    return blob({reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
  }
  Writer& strings(const std::vector<std::string>& texts) {
    u32(static_cast<std::uint32_t>(texts.size()));
    for (const auto& text : texts)
      str(text);
    return *this;
  }
  Writer& op(Op value) { return u8(static_cast<std::uint8_t>(value)); }
  Writer& status(Status value) { return u8(static_cast<std::uint8_t>(value)); }
  std::vector<std::uint8_t> take() { return std::move(bytes_); }

 private:
  std::vector<std::uint8_t> bytes_;
};

// Reads protocol fields; every read returns false once the input is exhausted or malformed.
class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> data) : data_(data) {}
  bool u8(std::uint8_t& v) {
    if (!has(1)) return false;
    v = data_[pos_++];
    return true;
  }
  bool u32(std::uint32_t& v) {
    if (!has(4)) return false;
    v = 0;
    for (int i = 0; i < 4; ++i)
      v |= static_cast<std::uint32_t>(data_[pos_++]) << (8 * i);
    return true;
  }
  bool i64(std::int64_t& value) {
    if (!has(8)) return false;
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v |= static_cast<std::uint64_t>(data_[pos_++]) << (8 * i);
    value = static_cast<std::int64_t>(v);
    return true;
  }
  bool blob(std::vector<std::uint8_t>& out) {
    std::uint32_t size = 0;
    if (!u32(size) || !has(size)) return false;
    out.assign(data_.begin() + pos_, data_.begin() + pos_ + size);
    pos_ += size;
    return true;
  }
  bool str(std::string& out) {
    std::uint32_t size = 0;
    if (!u32(size) || !has(size)) return false;
    out.assign(reinterpret_cast<const char*>(data_.data()) + pos_, size);
    pos_ += size;
    return true;
  }
  bool strings(std::vector<std::string>& out) {
    std::uint32_t count = 0;
    if (!u32(count) || count > data_.size() - pos_) return false;  // each string is >= 4 bytes
    out.resize(count);
    for (auto& text : out) {
      if (!str(text)) return false;
    }
    return true;
  }
  bool done() const { return pos_ == data_.size(); }

 private:
  bool has(std::size_t n) const { return data_.size() - pos_ >= n; }
  std::span<const std::uint8_t> data_;
  std::size_t pos_ = 0;
};

std::vector<std::uint8_t> frame(const std::vector<std::uint8_t>& payload) {
  // Sized once and filled in place (GCC 12 -O3 misreads a push_back-then-insert of the payload
  // as an overread, GCC bug 105651).
  std::vector<std::uint8_t> bytes(4 + payload.size());
  const auto size = static_cast<std::uint32_t>(payload.size());
  for (std::size_t i = 0; i < 4; ++i)
    bytes[i] = static_cast<std::uint8_t>(size >> (8 * i));
  std::copy(payload.begin(), payload.end(), bytes.begin() + 4);
  return bytes;
}

Clock::time_point deadlineFromMillis(std::int64_t timeoutMs) {
  return deadlineAfter(milliseconds(std::max<std::int64_t>(timeoutMs, 0)));
}

}  // namespace

// ---- server --------------------------------------------------------------------------------

// The store server: one thread running a poll() loop over a listening socket, a wake-up pipe
// and the client connections. Only that thread touches values_ and connections_.
class TcpStore::Server {
 public:
  Server(const std::string& host, int port, std::string authToken)
      : authToken_(std::move(authToken)) {
    auto endpointText = fmt::format("{}:{}", host, port);
    auto resolved = resolve(host, port, true);
    if (auto* error = std::get_if<IoError>(&resolved)) {
      throw CommError(
          fmt::format("TcpStore server {}: cannot resolve the address ({}); use a "
                      "numeric address or a resolvable host name for MASTER_ADDR",
                      endpointText, describe(*error)));
    }
    IoError lastError{"bind", EADDRNOTAVAIL, false, false};
    for (auto* info = std::get<AddrInfoList>(resolved).get(); info; info = info->ai_next) {
      int fd = ::socket(info->ai_family, info->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                        info->ai_protocol);
      if (fd < 0) {
        lastError = sysError("socket");
        continue;
      }
      int one = 1;
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      if (::bind(fd, info->ai_addr, info->ai_addrlen) != 0) {
        lastError = sysError("bind");
        ::close(fd);
        continue;
      }
      if (::listen(fd, 1024) != 0) {
        lastError = sysError("listen");
        ::close(fd);
        continue;
      }
      listenFd_ = fd;
      break;
    }
    if (listenFd_ < 0) {
      throw CommError(fmt::format(
          "TcpStore server {}: {}; another process (an earlier run?) may hold the port: pick "
          "another MASTER_PORT, or 0 for a free one",
          endpointText, describe(lastError)));
    }
    sockaddr_storage bound{};
    socklen_t length = sizeof(bound);
    ::getsockname(listenFd_, reinterpret_cast<sockaddr*>(&bound), &length);
    port_ = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                        : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    if (::pipe2(wakePipe_, O_NONBLOCK | O_CLOEXEC) != 0) {
      auto error = sysError("pipe2");
      ::close(listenFd_);
      throw CommError(fmt::format("TcpStore server {}: {}", endpointText, describe(error)));
    }
    thread_ = std::thread([this] {
      auto error = serve();
      std::lock_guard lock(errorMutex_);
      if (error) loopError_ = describe(*error);
    });
  }

  ~Server() {
    stop_ = true;
    char byte = 1;
    [[maybe_unused]] auto ignored = ::write(wakePipe_[1], &byte, 1);
    thread_.join();
    for (auto& [id, connection] : connections_)
      ::close(connection.fd);
    ::close(listenFd_);
    ::close(wakePipe_[0]);
    ::close(wakePipe_[1]);
  }

  int port() const { return port_; }

  // Why the loop stopped on its own, or "" while it runs normally.
  std::string loopError() {
    std::lock_guard lock(errorMutex_);
    return loopError_;
  }

 private:
  struct Waiter {
    Op op = Op::kGet;
    std::vector<std::string> keys;
    Clock::time_point deadline;
  };
  struct Connection {
    int fd = -1;
    Clock::time_point greetBy;  // dropped if not greeted by then
    bool greeted = false;
    bool dead = false;
    std::vector<std::uint8_t> in;
    std::vector<std::uint8_t> out;
    std::optional<Waiter> waiter;  // a get/wait in progress; no request is read meanwhile
  };

  // The event loop; returns only on stop (nullopt) or a fatal poll error.
  IoStatus serve() {
    std::vector<pollfd> fds;
    std::vector<std::uint64_t> ids;
    while (!stop_) {
      fds.clear();
      ids.clear();
      fds.push_back({wakePipe_[0], POLLIN, 0});
      fds.push_back({listenFd_, POLLIN, 0});
      auto deadline = Clock::time_point::max();
      for (auto& [id, connection] : connections_) {
        short events = POLLIN;  // also while a call waits, to notice the client leaving
        if (!connection.out.empty()) events |= POLLOUT;
        fds.push_back({connection.fd, events, 0});
        ids.push_back(id);
        if (connection.waiter) deadline = std::min(deadline, connection.waiter->deadline);
        if (!connection.greeted) deadline = std::min(deadline, connection.greetBy);
      }
      int ready = ::poll(fds.data(), fds.size(), millisUntil(deadline));
      if (ready < 0 && errno != EINTR) return sysError("poll");
      if (ready > 0) {
        if (fds[1].revents & POLLIN) acceptAll();
        for (std::size_t i = 0; i < ids.size(); ++i) {
          auto revents = fds[i + 2].revents;
          auto found = connections_.find(ids[i]);
          if (revents == 0 || found == connections_.end()) continue;
          auto& connection = found->second;
          if (revents & POLLOUT) flush(connection);
          if (revents & (POLLIN | POLLHUP | POLLERR)) readFrom(connection);
        }
      }
      resolveWaiters();
      const auto now = Clock::now();
      for (auto& [id, connection] : connections_)
        if (!connection.greeted && now >= connection.greetBy) connection.dead = true;
      std::erase_if(connections_, [](auto& entry) {
        if (entry.second.dead) ::close(entry.second.fd);
        return entry.second.dead;
      });
    }
    return std::nullopt;
  }

  void acceptAll() {
    while (true) {
      int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN, or a transient error the next poll retries
      setNoDelay(fd);
      Connection& connection = connections_[nextId_++];
      connection.fd = fd;
      connection.greetBy = Clock::now() + kGreetWithin;
    }
  }

  void readFrom(Connection& connection) {
    std::uint8_t buffer[65536];
    while (!connection.dead) {
      ssize_t got = ::recv(connection.fd, buffer, sizeof(buffer), 0);
      if (got > 0) {
        connection.in.insert(connection.in.end(), buffer, buffer + got);
        if (!connection.greeted) processFrames(connection);  // drops an oversized hello now
        continue;
      }
      if (got < 0 && errno == EINTR) continue;
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      connection.dead = true;  // closed or reset: its pending call (if any) is dropped
    }
    processFrames(connection);
  }

  // Handles every complete request in connection.in, stopping at one that must wait.
  void processFrames(Connection& connection) {
    std::size_t offset = 0;
    while (!connection.dead && !connection.waiter && connection.in.size() - offset >= 4) {
      std::uint32_t length = 0;
      Reader(std::span(connection.in).subspan(offset, 4)).u32(length);
      if (length > (connection.greeted ? kMaxFrame : kMaxHello)) {
        connection.dead = true;
        break;
      }
      if (connection.in.size() - offset - 4 < length) break;
      handle(connection, std::span(connection.in).subspan(offset + 4, length));
      offset += 4 + length;
    }
    connection.in.erase(connection.in.begin(), connection.in.begin() + offset);
  }

  void handle(Connection& connection, std::span<const std::uint8_t> payload) {
    Reader reader(payload);
    std::uint8_t opByte = 0;
    reader.u8(opByte);
    auto op = static_cast<Op>(opByte);
    if (!connection.greeted) {
      std::uint32_t magic = 0, version = 0;
      std::vector<std::uint8_t> token;
      if (op != Op::kHello || !reader.u32(magic) || !reader.u32(version) || magic != kMagic) {
        connection.dead = true;  // not a chorus client
        return;
      }
      if (version != kVersion) {
        refuse(connection, fmt::format("the server speaks store protocol version {}, the client "
                                       "{}; run the same chorus build on every rank",
                                       kVersion, version));
        return;
      }
      if (!reader.blob(token) || !reader.done() || !sameSecret(authToken_, token)) {
        refuse(connection,
               "the store refused this rank: wrong or missing CHORUS_AUTH_TOKEN; set the same "
               "token on every rank (or on none)");
        return;
      }
      connection.greeted = true;
      reply(connection, Writer().status(Status::kOk).u32(kMagic).u32(kVersion).take());
      return;
    }
    std::string key;
    std::vector<std::string> keys;
    std::vector<std::uint8_t> value;
    std::int64_t number = 0;
    switch (op) {
      case Op::kSet:
        if (!reader.str(key) || !reader.blob(value) || !reader.done()) break;
        values_[key] = std::move(value);
        reply(connection, Writer().status(Status::kOk).take());
        return;
      case Op::kGet:
        if (!reader.str(key) || !reader.i64(number) || !reader.done()) break;
        connection.waiter = Waiter{Op::kGet, {key}, deadlineFromMillis(number)};
        return;  // answered by resolveWaiters(), possibly right away
      case Op::kAdd: {
        if (!reader.str(key) || !reader.i64(number) || !reader.done()) break;
        auto found = values_.find(key);
        std::int64_t result = number;
        if (found != values_.end()) {
          auto current = parseCounter(found->second);
          if (!current) {
            reply(connection, Writer().status(Status::kError).str("not a counter").take());
            return;
          }
          result = *current + number;
        }
        values_[key] = toBytes(std::to_string(result));
        reply(connection, Writer().status(Status::kOk).i64(result).take());
        return;
      }
      case Op::kCheck:
        if (!reader.strings(keys) || !reader.done()) break;
        reply(connection, Writer().status(Status::kOk).u8(missingOf(keys).empty()).take());
        return;
      case Op::kWait:
        if (!reader.strings(keys) || !reader.i64(number) || !reader.done()) break;
        connection.waiter = Waiter{Op::kWait, std::move(keys), deadlineFromMillis(number)};
        return;
      case Op::kHello:
        break;
    }
    connection.dead = true;  // malformed or unknown request: drop the client
  }

  // Answers a hello with an error and drops the connection once the answer is sent.
  void refuse(Connection& connection, const std::string& message) {
    reply(connection, Writer().status(Status::kError).str(message).take());
    connection.dead = true;
  }

  // Answers every get/wait whose keys now exist or whose deadline passed, then lets those
  // connections go on with their buffered requests (which may satisfy further waiters).
  void resolveWaiters() {
    bool progressed = true;
    while (progressed) {
      progressed = false;
      auto now = Clock::now();
      for (auto& [id, connection] : connections_) {
        if (!connection.waiter || connection.dead) continue;
        auto& waiter = *connection.waiter;
        auto missing = missingOf(waiter.keys);
        if (!missing.empty() && now < waiter.deadline) continue;
        Writer writer;
        if (!missing.empty()) {
          writer.status(Status::kTimeout);
          if (waiter.op == Op::kWait) writer.strings(missing);
        } else {
          writer.status(Status::kOk);
          if (waiter.op == Op::kGet) writer.blob(values_[waiter.keys.front()]);
        }
        connection.waiter.reset();
        reply(connection, writer.take());
        processFrames(connection);
        progressed = true;
      }
    }
  }

  std::vector<std::string> missingOf(const std::vector<std::string>& keys) const {
    std::vector<std::string> missing;
    for (const auto& key : keys) {
      if (!values_.contains(key)) missing.push_back(key);
    }
    return missing;
  }

  void reply(Connection& connection, const std::vector<std::uint8_t>& payload) {
    auto bytes = frame(payload);
    connection.out.insert(connection.out.end(), bytes.begin(), bytes.end());
    flush(connection);
  }

  // Writes as much of connection.out as the socket takes now; POLLOUT resumes the rest.
  void flush(Connection& connection) {
    std::size_t sent = 0;
    while (sent < connection.out.size()) {
      ssize_t put = ::send(connection.fd, connection.out.data() + sent,
                           connection.out.size() - sent, MSG_NOSIGNAL);
      if (put >= 0) {
        sent += static_cast<std::size_t>(put);
        continue;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) connection.dead = true;
      break;
    }
    connection.out.erase(connection.out.begin(), connection.out.begin() + sent);
  }

  std::string authToken_;
  int listenFd_ = -1;
  int wakePipe_[2] = {-1, -1};
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex errorMutex_;
  std::string loopError_;
  std::uint64_t nextId_ = 0;
  std::unordered_map<std::uint64_t, Connection> connections_;
  std::unordered_map<std::string, std::vector<std::uint8_t>> values_;
};

// ---- client --------------------------------------------------------------------------------

struct TcpStore::Reply {
  Status status = Status::kOk;
  std::vector<std::uint8_t> payload;  // the whole reply payload, status byte included
};

TcpStore::TcpStore(const std::string& host, int port, bool isServer, milliseconds connectTimeout,
                   std::string authToken)
    : host_(host),
      connectHost_(host),
      port_(port),
      connectTimeout_(connectTimeout),
      authToken_(std::move(authToken)) {
  if (port < 0 || port > 65535 || (!isServer && port == 0)) {
    throw OptionError(fmt::format(
        "TcpStore: port {} is out of range; clients need the server's port (1-65535), the "
        "server may use 0 to pick a free one",
        port));
  }
  if (isServer) {
    server_ = std::make_unique<Server>(host, port, authToken_);
    port_ = server_->port();
    if (isWildcard(host)) connectHost_ = host == "::" ? "::1" : "127.0.0.1";
  } else if (isWildcard(host)) {
    throw OptionError(fmt::format(
        "TcpStore: a client needs the server's address, not '{}'; set MASTER_ADDR to rank 0's "
        "host",
        host));
  }
  returnConnection(takeConnection("connect"));
}

TcpStore::~TcpStore() {
  {
    std::lock_guard lock(poolMutex_);
    for (int fd : idle_)
      ::close(fd);
    idle_.clear();
  }
  server_.reset();
}

std::string TcpStore::endpoint() const {
  return fmt::format("{}:{}", connectHost_, port_);
}

int TcpStore::takeConnection(const std::string& operation) {
  {
    std::lock_guard lock(poolMutex_);
    if (!idle_.empty()) {
      int fd = idle_.back();
      idle_.pop_back();
      return fd;
    }
  }
  auto deadline = deadlineAfter(connectTimeout_);
  auto retry = kMinRetry;
  IoError lastError{"connect", ETIMEDOUT, true, false};
  while (true) {
    auto resolved = resolve(connectHost_, port_, false);
    if (auto* error = std::get_if<IoError>(&resolved)) lastError = *error;
    auto* list = std::get_if<AddrInfoList>(&resolved);
    for (auto* info = list ? list->get() : nullptr; info; info = info->ai_next) {
      int fd = ::socket(info->ai_family, info->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                        info->ai_protocol);
      if (fd < 0) {
        lastError = sysError("socket");
        continue;
      }
      IoStatus status;
      if (::connect(fd, info->ai_addr, info->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) {
          status = sysError("connect");
        } else if (!(status = waitFor(fd, POLLOUT, deadline, "connect"))) {
          int error = 0;
          socklen_t length = sizeof(error);
          ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
          if (error != 0) status = IoError{"connect", error, false, false};
        }
      }
      if (status) {
        lastError = *status;
        ::close(fd);
        if (connectedOnce_ && lastError.error == ECONNREFUSED) {
          throw CommError(fmt::format("TcpStore {}: {} failed: {}; {}", endpoint(), operation,
                                      describe(lastError), kLostHint));
        }
        continue;
      }
      setNoDelay(fd);
      // Handshake: tells a chorus store from whatever else listens on the port.
      auto handshakeDeadline = std::max(deadline, deadlineAfter(kHandshakeMin));
      auto hello = frame(Writer().op(Op::kHello).u32(kMagic).u32(kVersion).str(authToken_).take());
      std::uint8_t lengthBytes[4];
      std::uint32_t length = 0;
      std::vector<std::uint8_t> answer;
      status = sendAll(fd, hello, handshakeDeadline);
      if (!status) status = recvAll(fd, lengthBytes, handshakeDeadline);
      if (!status && Reader(lengthBytes).u32(length) && length >= 1 && length <= kMaxHelloReply) {
        answer.resize(length);
        status = recvAll(fd, answer, handshakeDeadline);
      }
      if (status) {
        ::close(fd);
        throw CommError(fmt::format("TcpStore {}: {} failed during the handshake ({}); {}",
                                    endpoint(), operation, describe(*status), kConnectHint));
      }
      Reader reader(answer);
      std::uint32_t magic = 0, version = 0;
      std::uint8_t statusByte = 0;
      std::string refusal;
      reader.u8(statusByte);
      if (statusByte == static_cast<std::uint8_t>(Status::kError) && reader.str(refusal)) {
        ::close(fd);
        throw CommError(fmt::format("TcpStore {}: {} failed: {}", endpoint(), operation, refusal));
      }
      reader.u32(magic);
      reader.u32(version);
      if (statusByte != 0 || magic != kMagic || version != kVersion || !reader.done()) {
        ::close(fd);
        throw CommError(fmt::format(
            "TcpStore {}: {} failed: the peer is not a chorus TcpStore server of protocol "
            "version {} (got magic {:#x}, version {}); check MASTER_PORT and that every rank "
            "runs the same chorus build",
            endpoint(), operation, kVersion, magic, version));
      }
      connectedOnce_ = true;
      return fd;
    }
    if (Clock::now() >= deadline) {
      throw CommError(fmt::format(
          "TcpStore {}: {} failed: could not connect within {} ms (last error: {}); {}", endpoint(),
          operation, connectTimeout_.count(), describe(lastError), kConnectHint));
    }
    auto left = deadline - Clock::now();
    std::this_thread::sleep_for(std::min<Clock::duration>(retry, left));
    retry = std::min(retry * 2, kMaxRetry);
  }
}

void TcpStore::returnConnection(int fd) {
  std::lock_guard lock(poolMutex_);
  idle_.push_back(fd);
}

TcpStore::Reply TcpStore::call(const std::string& operation,
                               const std::vector<std::uint8_t>& request,
                               milliseconds replyTimeout) {
  if (request.size() > kMaxFrame) {
    throw OptionError(fmt::format("TcpStore {}: {} is {} bytes, over the {} byte limit", endpoint(),
                                  operation, request.size(), kMaxFrame));
  }
  int fd = takeConnection(operation);
  auto fail = [&](const IoError& error, std::string_view hint) {
    ::close(fd);
    std::string serverNote;
    if (server_) {
      auto loopError = server_->loopError();
      if (!loopError.empty())
        serverNote = fmt::format(" (this process's server stopped: {})", loopError);
    }
    return CommError(fmt::format("TcpStore {}: {} failed: {}{}; {}", endpoint(), operation,
                                 describe(error), serverNote, hint));
  };
  auto bytes = frame(request);
  if (auto error = sendAll(fd, bytes, deadlineAfter(kRequestTimeout)))
    throw fail(*error, kLostHint);
  auto replyDeadline = deadlineAfter(replyTimeout);
  std::uint8_t header[4];
  if (auto error = recvAll(fd, header, replyDeadline)) {
    throw fail(*error,
               error->timedOut ? "the store server (rank 0) is hung or overloaded" : kLostHint);
  }
  std::uint32_t length = 0;
  Reader(header).u32(length);
  if (length == 0 || length > kMaxFrame) {
    throw fail(IoError{"recv", EPROTO, false, false}, "the reply is malformed");
  }
  Reply reply;
  reply.payload.resize(length);
  if (auto error = recvAll(fd, reply.payload, replyDeadline)) throw fail(*error, kLostHint);
  reply.status = static_cast<Status>(reply.payload[0]);
  returnConnection(fd);
  return reply;
}

namespace {
milliseconds replyTimeoutFor(milliseconds timeout) {
  if (timeout >= milliseconds::max() - kReplyGrace) return milliseconds::max();
  return std::max(timeout, milliseconds(0)) + kReplyGrace;
}

[[noreturn]] void throwMalformed(const std::string& endpoint, const std::string& operation) {
  throw CommError(fmt::format(
      "TcpStore {}: {} failed: malformed reply from the server; check that every rank runs the "
      "same chorus build",
      endpoint, operation));
}
}  // namespace

void TcpStore::set(const std::string& key, const std::vector<std::uint8_t>& value) {
  auto operation = fmt::format("set('{}')", key);
  auto reply = call(operation, Writer().op(Op::kSet).str(key).blob(value).take(), kRequestTimeout);
  if (reply.status != Status::kOk) throwMalformed(endpoint(), operation);
}

std::vector<std::uint8_t> TcpStore::get(const std::string& key, milliseconds timeout) {
  auto operation = fmt::format("get('{}')", key);
  auto reply = call(operation, Writer().op(Op::kGet).str(key).i64(timeout.count()).take(),
                    replyTimeoutFor(timeout));
  if (reply.status == Status::kTimeout) {
    throwStoreTimeout(fmt::format("TcpStore {}", endpoint()), operation, {key}, timeout);
  }
  Reader reader(std::span(reply.payload).subspan(1));
  std::vector<std::uint8_t> value;
  if (reply.status != Status::kOk || !reader.blob(value)) throwMalformed(endpoint(), operation);
  return value;
}

std::int64_t TcpStore::add(const std::string& key, std::int64_t delta) {
  auto operation = fmt::format("add('{}')", key);
  auto reply = call(operation, Writer().op(Op::kAdd).str(key).i64(delta).take(), kRequestTimeout);
  if (reply.status == Status::kError) {
    throw OptionError(nonCounterMessage(fmt::format("TcpStore {}", endpoint()), key));
  }
  Reader reader(std::span(reply.payload).subspan(1));
  std::int64_t result = 0;
  if (reply.status != Status::kOk || !reader.i64(result)) throwMalformed(endpoint(), operation);
  return result;
}

bool TcpStore::check(const std::vector<std::string>& keys) {
  auto reply = call("check", Writer().op(Op::kCheck).strings(keys).take(), kRequestTimeout);
  Reader reader(std::span(reply.payload).subspan(1));
  std::uint8_t allExist = 0;
  if (reply.status != Status::kOk || !reader.u8(allExist)) throwMalformed(endpoint(), "check");
  return allExist != 0;
}

void TcpStore::wait(const std::vector<std::string>& keys, milliseconds timeout) {
  auto reply = call("wait", Writer().op(Op::kWait).strings(keys).i64(timeout.count()).take(),
                    replyTimeoutFor(timeout));
  if (reply.status == Status::kOk) return;
  Reader reader(std::span(reply.payload).subspan(1));
  std::vector<std::string> missing;
  if (reply.status != Status::kTimeout || !reader.strings(missing)) {
    throwMalformed(endpoint(), "wait");
  }
  throwStoreTimeout(fmt::format("TcpStore {}", endpoint()), "wait", missing, timeout);
}

}  // namespace chorus::transport
