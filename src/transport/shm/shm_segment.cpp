#include "transport/shm/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "support/error.h"
#include "support/size.h"

namespace chorus::transport {

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kShmDirectory = "/dev/shm";

// Closes a file descriptor on scope exit.
class FdGuard {
 public:
  explicit FdGuard(int fd) : fd_(fd) {}
  FdGuard(const FdGuard&) = delete;
  FdGuard& operator=(const FdGuard&) = delete;
  ~FdGuard() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string errnoText(int error) {
  return std::strerror(error);
}

std::uint8_t* mapShared(int fd, std::size_t bytes, const std::string& name) {
  void* data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (data == MAP_FAILED)
    throw CommError(
        fmt::format("shm transport: mmap of {} ({}) failed: {}; check the memory "
                    "limits of the process (ulimit -v)",
                    name, formatSize(bytes), errnoText(errno)));
  return static_cast<std::uint8_t*>(data);
}

[[noreturn]] void throwNoRoom(const std::string& name, std::size_t bytes, std::uint64_t freeBytes,
                              std::string_view purpose, std::string_view shrinkHint,
                              std::string_view detail) {
  throw CommError(fmt::format(
      "shm transport: {} has no room for {} ({}): it needs {} bytes ({}) but {} has {} bytes "
      "({}) free{}; {}, free space in {}, or give the container a larger {} (docker run "
      "--shm-size=...)",
      kShmDirectory, name, purpose, bytes, formatSize(bytes), kShmDirectory, freeBytes,
      formatSize(freeBytes), detail, shrinkHint, kShmDirectory, kShmDirectory));
}

std::uint64_t freeShmBytes() {
  struct statvfs info {};
  if (::statvfs(kShmDirectory, &info) != 0) return 0;
  return static_cast<std::uint64_t>(info.f_bavail) * info.f_frsize;
}

}  // namespace

ShmSegment::ShmSegment(ShmSegment&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(data_, bytes_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

ShmSegment::~ShmSegment() {
  if (data_) ::munmap(data_, bytes_);
}

std::optional<ShmSegment> createShmSegment(const std::string& name, std::size_t bytes,
                                           std::string_view purpose, std::string_view shrinkHint) {
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return std::nullopt;
    throw CommError(
        fmt::format("shm transport: shm_open({}) for {} failed: {}; check that {} "
                    "exists and is writable",
                    name, purpose, errnoText(errno), kShmDirectory));
  }
  FdGuard guard(fd);
  try {
    const std::uint64_t freeBytes = freeShmBytes();
    if (bytes > freeBytes) throwNoRoom(name, bytes, freeBytes, purpose, shrinkHint, "");
    // tmpfs allocates pages on first touch: reserve them now so running out of room is an
    // error here and not a SIGBUS in the middle of a collective.
    if (const int error = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)); error != 0) {
      if (error == ENOSPC || error == EFBIG)
        throwNoRoom(name, bytes, freeShmBytes(), purpose, shrinkHint,
                    fmt::format(" (reserving failed: {})", errnoText(error)));
      throw CommError(fmt::format("shm transport: reserving {} for {} in {} failed: {}", name,
                                  purpose, kShmDirectory, errnoText(error)));
    }
    return ShmSegment(mapShared(fd, bytes, name), bytes);
  } catch (...) {
    unlinkShmName(name);
    throw;
  }
}

std::optional<ShmSegment> openShmSegment(const std::string& name, Clock::time_point deadline,
                                         const AbortCheck& abortReason, std::string_view purpose) {
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw CommError(fmt::format("shm transport: shm_open({}) for {} failed: {}", name, purpose,
                                errnoText(errno)));
  }
  FdGuard guard(fd);
  std::size_t bytes = 0;
  waitUntil(
      [&] {
        struct stat info {};
        if (::fstat(fd, &info) != 0)
          throw CommError(
              fmt::format("shm transport: fstat of {} failed: {}", name, errnoText(errno)));
        bytes = static_cast<std::size_t>(info.st_size);
        return bytes > 0;
      },
      deadline, abortReason, fmt::format("the peer to size {} ({})", name, purpose));
  return ShmSegment(mapShared(fd, bytes, name), bytes);
}

void unlinkShmName(const std::string& name) {
  ::shm_unlink(name.c_str());  // ENOENT (already removed by the peer) is fine
}

void waitUntil(const std::function<bool()>& ready, Clock::time_point deadline,
               const AbortCheck& abortReason, std::string_view what) {
  for (int round = 0;; ++round) {
    if (ready()) return;
    if ((round & 15) == 15) {
      if (const std::string reason = abortReason(); !reason.empty()) {
        // The peer may have done what we wait for and then aborted, between our two looks:
        // then the wait succeeded, and the abort is for the caller's next check to report.
        if (ready()) return;
        throw CommError(fmt::format("shm transport: stopped waiting for {}: {}", what, reason));
      }
      if (Clock::now() >= deadline)
        throw TimeoutError(fmt::format(
            "shm transport: timed out waiting for {}; a peer may have died or be stuck in its "
            "set-up; raise CHORUS_TIMEOUT if it is only slow",
            what));
    }
    if (round > 256)
      std::this_thread::sleep_for(std::chrono::microseconds(round > 2048 ? 1000 : 50));
    else if (round > 32)
      std::this_thread::yield();
  }
}

}  // namespace chorus::transport
