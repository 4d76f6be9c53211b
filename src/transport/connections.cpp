#include "transport/connections.h"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace chorus::transport {

std::size_t formatNumberedCall(char* out, std::size_t capacity, std::string_view name,
                               std::uint64_t number, std::string_view details) {
  std::size_t size = 0;
  auto append = [&](std::string_view part) {
    const std::size_t n = std::min(part.size(), capacity - size);
    std::memcpy(out + size, part.data(), n);
    size += n;
  };
  append(name);
  append(" #");
  char digits[24];
  append({digits, static_cast<std::size_t>(
                      std::to_chars(digits, digits + sizeof digits, number).ptr - digits)});
  if (!details.empty()) {
    append(" ");
    append(details);
  }
  return size;
}

void ConnectionSet::publishNumberedCall(std::uint64_t /*shapeKey*/, std::string_view name,
                                        std::uint64_t number, std::string_view details) {
  char text[kMaxCallTextBytes];
  publishCall({text, formatNumberedCall(text, sizeof text, name, number, details)});
}

}  // namespace chorus::transport
