// Small string helpers shared by the writers: fast integer formatting without locale, XML
// escaping (MSCCL XML, SVG plots).
#pragma once

#include <charconv>
#include <string>
#include <string_view>

namespace chorus {

// Appends the decimal form of `value` to `out`.
inline void appendInt(std::string& out, long long value) {
  char buffer[24];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  (void)ec;  // 24 characters always suffice for a 64-bit integer
  out.append(buffer, end);
}

// Appends `text` with XML's special characters (and tab/newline/CR) as entities, safe in both
// element text and attribute values.
inline void appendXmlEscaped(std::string& out, std::string_view text) {
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      case '\n':
        out += "&#10;";
        break;
      case '\r':
        out += "&#13;";
        break;
      case '\t':
        out += "&#9;";
        break;
      default:
        out += c;
    }
  }
}

}  // namespace chorus
