#include "transport/remote_message.h"

#include <cstring>

#include "support/error.h"

namespace chorus::transport {

void copyFromRegion(const RemoteRegion& region, std::size_t offset, std::uint8_t* dst,
                    std::size_t bytes) {
  CHORUS_INTERNAL_ASSERT(offset + bytes <= region.bytes(), "read past a message by reference");
  forEachRun(region, offset, bytes, [&](std::uint64_t address, std::size_t length) {
    std::memcpy(dst, reinterpret_cast<const void*>(static_cast<std::uintptr_t>(address)), length);
    dst += length;
  });
}

void copyIntoRegion(const RemoteRegion& region, std::size_t offset, const std::uint8_t* src,
                    std::size_t bytes) {
  CHORUS_INTERNAL_ASSERT(offset + bytes <= region.bytes(), "write past a message by reference");
  forEachRun(region, offset, bytes, [&](std::uint64_t address, std::size_t length) {
    std::memcpy(reinterpret_cast<void*>(static_cast<std::uintptr_t>(address)), src, length);
    src += length;
  });
}

RegionIovecs regionIovecs(const RemoteRegion& region, std::size_t offset, std::size_t bytes,
                          iovec* iov, std::size_t capacity) {
  RegionIovecs result;
  forEachRun(region, offset, bytes, [&](std::uint64_t address, std::size_t length) {
    if (result.count == capacity) {
      result.whole = false;
      return;
    }
    iov[result.count++] = {reinterpret_cast<void*>(static_cast<std::uintptr_t>(address)), length};
  });
  return result;
}

}  // namespace chorus::transport
