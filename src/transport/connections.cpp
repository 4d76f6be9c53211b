#include "transport/connections.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include <fmt/format.h>

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

std::string departedPeerReason(int peer, std::uint64_t started, int rank, std::uint64_t current) {
  return fmt::format(
      "rank {} left the group (destroyed its communicator) after {} collective calls, while "
      "rank {} waits in collective #{}, which needs it: every rank must make the same "
      "collective calls before it destroys the group",
      peer, started, rank, current);
}

void ConnectionSet::publishNumberedCall(std::uint64_t /*shapeKey*/, std::string_view name,
                                        std::uint64_t number, std::string_view details) {
  char text[kMaxCallTextBytes];
  publishCall({text, formatNumberedCall(text, sizeof text, name, number, details)});
}

}  // namespace chorus::transport
