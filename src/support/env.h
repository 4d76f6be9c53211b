// Environment variables: typed reads with errors that name the variable and the accepted
// forms (support layer). Every CHORUS_* knob goes through these.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace chorus {

// The variable's value, or nullopt when unset or empty.
std::optional<std::string> envString(const char* name);

// Decimal integer in [minValue, maxValue]; nullopt when unset. Throws OptionError naming the
// variable, its value and the range.
std::optional<std::int64_t> envInt(const char* name, std::int64_t minValue, std::int64_t maxValue);

// A byte size as parseSize accepts ("256K"); nullopt when unset; OptionError naming the variable.
std::optional<std::uint64_t> envSize(const char* name);

// Durations: "300" (seconds), "1.5s", "500ms", "2m", "250us". Must be positive. Throws
// OptionError naming `what` (e.g. the variable) and the accepted forms.
std::chrono::milliseconds parseDuration(std::string_view text, std::string_view what);
std::optional<std::chrono::milliseconds> envDuration(const char* name);

}  // namespace chorus
