#include "perf/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace chorus::perf {

Progress::Progress(bool wanted, int totalSteps)
    : enabled_(wanted && isatty(STDERR_FILENO) == 1), total_(totalSteps) {}

Progress::~Progress() {
  clear();
}

void Progress::show(int step, std::string_view label) {
  if (!enabled_) return;
  fmt::print(stderr, "\r\033[K[{}/{}] {}", step, total_, label);
  std::fflush(stderr);
  shown_ = true;
}

void Progress::clear() {
  if (!shown_) return;
  fmt::print(stderr, "\r\033[K");
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace chorus::perf
