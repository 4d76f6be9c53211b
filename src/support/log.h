// Diagnostic logging to stderr, switched by CHORUS_DEBUG (support layer):
// unset or WARN: warnings only; INFO: plan choices and set-up; TRACE: per-call detail.
// Lines read "chorus <LEVEL> [pid <p>] <message>". Thread-safe.
#pragma once

#include <string_view>

namespace chorus {

enum class LogLevel { warn = 0, info = 1, trace = 2 };

// True if messages of `level` are printed (CHORUS_DEBUG is read once; an unknown value prints
// one warning and means WARN).
bool logEnabled(LogLevel level);

// Prints one line if `level` is enabled.
void logLine(LogLevel level, std::string_view message);

}  // namespace chorus
