// The process side of `chorus launch`: starts one child process per rank with its own
// environment (directly, or through a remote shell agent for ranks on other hosts), forwards
// SIGINT/SIGTERM to them, and on the first failure gives the others a grace period before
// killing them.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace chorus::cli {

// How one rank is started.
struct RankStart {
  std::vector<std::string> argv;  // PROGRAM ARGS...; PROGRAM is looked up in PATH
  // Variables set (or replaced) in this rank's copy of the launcher's environment.
  std::map<std::string, std::string> environment;
  // Empty: stdin is /dev/null. Else stdin is a pipe from the launcher that carries this text
  // and stays open until the rank ends (a remote rank's agent learns so that the launcher is
  // gone).
  std::string input;
  std::string host;  // named in reports when not empty ("rank 2 on node2 exited ...")
};

struct SuperviseOptions {
  int ranks = 1;
  std::function<RankStart(int rank)> start;
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
// program cannot be started (after killing the ranks already started). Ignores SIGPIPE in the
// launcher (a rank that exits early must not kill it through its stdin pipe).
int superviseRanks(const SuperviseOptions& options);

}  // namespace chorus::cli
