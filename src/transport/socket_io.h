// Blocking-with-deadline socket helpers shared by the TCP store and the TCP transport: errors
// are values (IoError) so callers choose the exception and the hint; every wait has a deadline.
#pragma once

#include <netdb.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

namespace chorus::transport {

// What went wrong in a socket call (nullopt IoStatus = success).
struct IoError {
  std::string syscall;
  int error = 0;          // errno, or a getaddrinfo code when syscall == "getaddrinfo"
  bool timedOut = false;  // the deadline passed
  bool closed = false;    // the peer closed the connection
};
using IoStatus = std::optional<IoError>;

// "send: Connection reset by peer", "recv: connection closed by peer", "connect: timed out".
std::string describe(const IoError& e);
// The IoError of `syscall` with the current errno.
IoError sysError(std::string syscall);

// Milliseconds left until `deadline` for poll(): -1 for time_point::max(), else 0..1e6.
int millisUntil(std::chrono::steady_clock::time_point deadline);

// Waits until `fd` has `events` or the deadline passes (timedOut, named `syscall`).
IoStatus waitFor(int fd, short events, std::chrono::steady_clock::time_point deadline,
                 const char* syscall);
// All of `data`, waiting on a non-blocking socket as needed.
IoStatus sendAll(int fd, std::span<const std::uint8_t> data,
                 std::chrono::steady_clock::time_point deadline);
IoStatus recvAll(int fd, std::span<std::uint8_t> data,
                 std::chrono::steady_clock::time_point deadline);

// True when `presented` equals `secret`, comparing in time that depends only on the lengths
// (a shared secret such as CHORUS_AUTH_TOKEN must not leak through timing).
bool sameSecret(std::string_view secret, std::span<const std::uint8_t> presented);

void setNoDelay(int fd);
// O_NONBLOCK on; false if fcntl failed.
bool setNonBlocking(int fd);

// "" / "0.0.0.0" / "::" / "*": every local address.
bool isWildcard(const std::string& host);

struct AddrInfoDeleter {
  void operator()(addrinfo* info) const { ::freeaddrinfo(info); }
};
using AddrInfoList = std::unique_ptr<addrinfo, AddrInfoDeleter>;

// Resolves host:port for a TCP socket; passive for bind().
std::variant<AddrInfoList, IoError> resolve(const std::string& host, int port, bool passive);

// A socket file descriptor closed on destruction (-1 = none).
class SocketFd {
 public:
  SocketFd() = default;
  explicit SocketFd(int fd) : fd_(fd) {}
  ~SocketFd();
  SocketFd(SocketFd&& other) noexcept : fd_(other.release()) {}
  SocketFd& operator=(SocketFd&& other) noexcept;
  SocketFd(const SocketFd&) = delete;
  SocketFd& operator=(const SocketFd&) = delete;
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace chorus::transport
