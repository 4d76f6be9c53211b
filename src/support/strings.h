// Small string helpers shared by the writers (fast integer formatting without locale).
#pragma once

#include <charconv>
#include <string>

namespace chorus {

// Appends the decimal form of `value` to `out`.
inline void appendInt(std::string& out, long long value) {
  char buffer[24];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  (void)ec;  // 24 characters always suffice for a 64-bit integer
  out.append(buffer, end);
}

}  // namespace chorus
