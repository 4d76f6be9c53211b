#include "support/env.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "support/error.h"
#include "support/size.h"

namespace chorus {

std::optional<std::string> envString(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::optional<std::int64_t> envInt(const char* name, std::int64_t minValue, std::int64_t maxValue) {
  const auto text = envString(name);
  if (!text) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text->c_str(), &end, 10);
  if (errno != 0 || end == text->c_str() || *end != '\0' || value < minValue || value > maxValue)
    throw OptionError(
        fmt::format("{}='{}' is not an integer in [{}, {}]", name, *text, minValue, maxValue));
  return value;
}

std::optional<std::uint64_t> envSize(const char* name) {
  const auto text = envString(name);
  if (!text) return std::nullopt;
  try {
    return parseSize(*text);
  } catch (const OptionError& e) {
    throw OptionError(fmt::format("{}: {}", name, e.what()));
  }
}

std::chrono::milliseconds parseDuration(std::string_view text, std::string_view what) {
  const std::string s(text);
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(s.c_str(), &end);
  const std::string_view unit(end);
  double scale = 0;  // milliseconds per unit
  if (unit.empty() || unit == "s")
    scale = 1000;
  else if (unit == "ms")
    scale = 1;
  else if (unit == "us")
    scale = 0.001;
  else if (unit == "m" || unit == "min")
    scale = 60'000;
  else if (unit == "h")
    scale = 3'600'000;
  const double ms = value * scale;
  if (errno != 0 || end == s.c_str() || scale == 0 || !std::isfinite(ms) || ms <= 0 || ms > 1e12)
    throw OptionError(fmt::format(
        "{}: '{}' is not a positive duration; write seconds ('300', '1.5s') or use a unit: ms, "
        "us, m, h",
        what, text));
  return std::chrono::milliseconds(std::max<long long>(1, std::llround(ms)));
}

std::optional<std::chrono::milliseconds> envDuration(const char* name) {
  const auto text = envString(name);
  if (!text) return std::nullopt;
  return parseDuration(*text, name);
}

}  // namespace chorus
