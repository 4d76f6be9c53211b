#include "transport/socket_io.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace chorus::transport {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string describe(const IoError& e) {
  if (e.closed) return fmt::format("{}: connection closed by peer", e.syscall);
  if (e.timedOut) return fmt::format("{}: timed out", e.syscall);
  if (e.syscall == "getaddrinfo") return fmt::format("getaddrinfo: {}", ::gai_strerror(e.error));
  return fmt::format("{}: {}", e.syscall, std::strerror(e.error));
}

IoError sysError(std::string syscall) {
  return IoError{std::move(syscall), errno, false, false};
}

int millisUntil(Clock::time_point deadline) {
  if (deadline == Clock::time_point::max()) return -1;
  auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<std::int64_t>(left, 0, 1'000'000));
}

IoStatus waitFor(int fd, short events, Clock::time_point deadline, const char* syscall) {
  while (true) {
    pollfd entry{fd, events, 0};
    int timeoutMs = millisUntil(deadline);
    int ready = ::poll(&entry, 1, timeoutMs);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return sysError("poll");
    if (ready > 0) return std::nullopt;
    if (Clock::now() >= deadline) return IoError{syscall, ETIMEDOUT, true, false};
  }
}

IoStatus sendAll(int fd, std::span<const std::uint8_t> data, Clock::time_point deadline) {
  std::size_t sent = 0;
  while (sent < data.size()) {
    ssize_t put = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (put >= 0) {
      sent += static_cast<std::size_t>(put);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return sysError("send");
    if (auto error = waitFor(fd, POLLOUT, deadline, "send")) return error;
  }
  return std::nullopt;
}

IoStatus recvAll(int fd, std::span<std::uint8_t> data, Clock::time_point deadline) {
  std::size_t got = 0;
  while (got < data.size()) {
    ssize_t read = ::recv(fd, data.data() + got, data.size() - got, 0);
    if (read > 0) {
      got += static_cast<std::size_t>(read);
      continue;
    }
    if (read == 0) return IoError{"recv", 0, false, true};
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return sysError("recv");
    if (auto error = waitFor(fd, POLLIN, deadline, "recv")) return error;
  }
  return std::nullopt;
}

void setNoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

bool setNonBlocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

bool isWildcard(const std::string& host) {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "*";
}

std::variant<AddrInfoList, IoError> resolve(const std::string& host, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* list = nullptr;
  auto service = std::to_string(port);
  int rc = ::getaddrinfo(isWildcard(host) && passive ? nullptr : host.c_str(), service.c_str(),
                         &hints, &list);
  if (rc != 0) return IoError{"getaddrinfo", rc, false, false};
  return AddrInfoList(list);
}

SocketFd::~SocketFd() {
  if (fd_ >= 0) ::close(fd_);
}

SocketFd& SocketFd::operator=(SocketFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

bool sameSecret(std::string_view secret, std::span<const std::uint8_t> presented) {
  if (secret.size() != presented.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < secret.size(); ++i)
    diff |= static_cast<unsigned char>(secret[i]) ^ presented[i];
  return diff == 0;
}

}  // namespace chorus::transport
