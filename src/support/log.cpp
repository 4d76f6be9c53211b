#include "support/log.h"

#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "support/env.h"

namespace chorus {

namespace {

LogLevel readLevel() {
  const auto text = envString("CHORUS_DEBUG");
  if (!text || *text == "WARN" || *text == "warn") return LogLevel::warn;
  if (*text == "INFO" || *text == "info") return LogLevel::info;
  if (*text == "TRACE" || *text == "trace") return LogLevel::trace;
  std::fprintf(stderr, "chorus WARN CHORUS_DEBUG='%s' is not WARN, INFO or TRACE; using WARN\n",
               text->c_str());
  return LogLevel::warn;
}

const char* levelName(LogLevel level) {
  switch (level) {
    case LogLevel::warn:
      return "WARN";
    case LogLevel::info:
      return "INFO";
    case LogLevel::trace:
      return "TRACE";
  }
  return "?";
}

}  // namespace

bool logEnabled(LogLevel level) {
  static const LogLevel enabled = readLevel();
  return static_cast<int>(level) <= static_cast<int>(enabled);
}

void logLine(LogLevel level, std::string_view message) {
  if (!logEnabled(level)) return;
  static std::mutex mutex;
  const std::string line =
      fmt::format("chorus {} [pid {}] {}\n", levelName(level), ::getpid(), message);
  std::lock_guard lock(mutex);
  std::fputs(line.c_str(), stderr);
}

}  // namespace chorus
