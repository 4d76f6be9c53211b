#include "support/size.h"

#include <cctype>
#include <charconv>

#include <fmt/format.h>

#include "support/error.h"

namespace chorus {

std::uint64_t parseSize(std::string_view text) {
  auto fail = [&]() -> std::uint64_t {
    throw OptionError(fmt::format(
        "'{}' is not a size; use a byte count with an optional K, M or G suffix (8, 64K, 1M, 1G)",
        text));
  };
  std::uint64_t value = 0;
  const char* begin = text.data();
  const char* end = begin + text.size();
  auto [rest, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || rest == begin) return fail();
  std::string unit(rest, end);
  for (auto& c : unit)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.ends_with("IB"))
    unit.resize(unit.size() - 2);
  else if (unit.ends_with("B"))
    unit.resize(unit.size() - 1);
  int shift = 0;
  if (unit == "K")
    shift = 10;
  else if (unit == "M")
    shift = 20;
  else if (unit == "G")
    shift = 30;
  else if (!unit.empty())
    return fail();
  if (shift && value > (UINT64_MAX >> shift)) return fail();
  return value << shift;
}

std::string formatSize(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB"};
  int unit = 0;
  while (unit < 3 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return fmt::format("{} {}", bytes, kUnits[unit]);
}

}  // namespace chorus
