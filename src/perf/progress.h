// A one-line progress indicator on stderr for long sweeps (perf layer); silent unless stderr
// is a terminal, so logs and pipes stay clean.
#pragma once

#include <string_view>

namespace chorus::perf {

class Progress {
 public:
  // Shows nothing unless `wanted` and stderr is a tty.
  Progress(bool wanted, int totalSteps);
  ~Progress();  // clears the line
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Replaces the line with "[step/total] label".
  void show(int step, std::string_view label);
  // For work whose size grows as it goes (chorus tune adds its check sweeps per collective).
  void setTotal(int totalSteps) { total_ = totalSteps; }
  void clear();

 private:
  bool enabled_ = false;
  int total_ = 0;
  bool shown_ = false;
};

}  // namespace chorus::perf
