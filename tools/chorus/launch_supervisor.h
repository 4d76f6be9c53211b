// The process side of `chorus launch`: starts one child process per rank with its own
// environment, forwards SIGINT/SIGTERM to them, and on the first failure gives the others a
// grace period before killing them.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace chorus::cli {

struct SuperviseOptions {
  int ranks = 1;
  std::vector<std::string> argv;  // PROGRAM ARGS...; PROGRAM is looked up in PATH
  // Variables set (or replaced) in rank r's copy of this process's environment.
  std::function<std::map<std::string, std::string>(int rank)> environment;
  // After the first rank fails (or a forwarded signal), how long the others may still run.
  std::chrono::milliseconds grace{10'000};
  // Wall-clock limit for the whole job; nullopt: none.
  std::optional<std::chrono::milliseconds> timeout;
};

// Call before starting any thread: blocks SIGINT, SIGTERM and SIGCHLD in the calling thread,
// so threads created later inherit the mask and superviseRanks() alone receives them.
void blockLauncherSignals();

// Runs the job to the end and returns the launcher's exit code: 0 when every rank exits 0;
// else the first failing rank's exit code (1 if it died by a signal); 128+S if the launcher
// itself got signal S (forwarded to the ranks); 1 on --timeout. Each rank runs in its own
// process group (so a kill reaches its children too) with stdin from /dev/null, and shares the
// launcher's stdout and stderr. Prints "chorus launch: rank R exited with code C" / "... killed
// by signal S" for every failing rank, and which ranks it killed. Throws OptionError when the
// program cannot be started (after killing the ranks already started).
int superviseRanks(const SuperviseOptions& options);

}  // namespace chorus::cli
