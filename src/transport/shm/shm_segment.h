// Named POSIX shared-memory segments (/dev/shm) for the shm transport: exclusive creation with
// the room checked and reserved up front, opening a peer's segment once it is sized, and the
// bounded waits (deadline + abort check) used while a peer sets a segment up.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace chorus::transport {

// `value` rounded up to a multiple of `multiple` (segment layouts: cache lines, pages).
constexpr std::size_t roundUp(std::size_t value, std::size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// A mapping of a shared segment; unmaps on destruction (the name is not touched). Move-only.
class ShmSegment {
 public:
  ShmSegment() = default;
  ShmSegment(std::uint8_t* data, std::size_t bytes) : data_(data), bytes_(bytes) {}
  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;
  ~ShmSegment();

  std::uint8_t* data() const { return data_; }
  std::size_t size() const { return bytes_; }

 private:
  std::uint8_t* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Empty while the group is healthy; otherwise why it failed (checked during waits).
using AbortCheck = std::function<std::string()>;

// Creates `name` ("/..." as for shm_open) exclusively, reserves `bytes` in /dev/shm
// (statvfs, then posix_fallocate so a full /dev/shm fails here and not as SIGBUS later) and
// maps it zero-filled. Returns nullopt if `name` already exists. Throws CommError naming
// /dev/shm, the bytes needed and free, `purpose` and `shrinkHint` when there is no room; the
// name is removed again on any failure.
std::optional<ShmSegment> createShmSegment(const std::string& name, std::size_t bytes,
                                           std::string_view purpose, std::string_view shrinkHint);

// Opens the existing segment `name` and maps it once its creator has sized it, waiting until
// `deadline` (TimeoutError) or until `abortReason` reports a failure (CommError). Returns
// nullopt if `name` does not exist.
std::optional<ShmSegment> openShmSegment(const std::string& name,
                                         std::chrono::steady_clock::time_point deadline,
                                         const AbortCheck& abortReason, std::string_view purpose);

// Removes `name`; a name that is already gone is not an error.
void unlinkShmName(const std::string& name);

// Polls `ready` with a backoff (spin, yield, sleep up to 1 ms) until it returns true. Throws
// TimeoutError naming `what` at `deadline` and CommError when `abortReason` is non-empty while
// `ready` still returns false (a peer that got ready and then aborted does not fail the wait).
void waitUntil(const std::function<bool()>& ready, std::chrono::steady_clock::time_point deadline,
               const AbortCheck& abortReason, std::string_view what);

}  // namespace chorus::transport
