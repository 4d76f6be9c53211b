// Small string helpers: fast integer formatting without locale, XML escaping (MSCCL XML, SVG
// plots), trimming and splitting of option strings (CHORUS_ALGO).
#pragma once

#include <charconv>
#include <string>
#include <string_view>
#include <vector>

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

// `text` without leading and trailing blanks (space, tab, CR, LF).
inline std::string_view trim(std::string_view text) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!text.empty() && blank(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && blank(text.back()))
    text.remove_suffix(1);
  return text;
}

// The pieces of `text` between `separator`s (empty pieces kept; "" gives one empty piece).
// Separators inside a {...} group do not split when `keepBraces` is set ("a{x,y},b" -> 2).
inline std::vector<std::string_view> split(std::string_view text, char separator,
                                           bool keepBraces = false) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  int depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (keepBraces && text[i] == '{') ++depth;
    if (keepBraces && text[i] == '}' && depth > 0) --depth;
    if (text[i] == separator && depth == 0) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(text.substr(start));
  return parts;
}

}  // namespace chorus
