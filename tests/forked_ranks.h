// Forked ranks for the tests of communicators whose ranks are processes: body(rank, idHex) runs
// in `n` children of the (single-threaded) test process, child 0 making the unique id after the
// fork and passing its hex to the others through pipes; each child reports through its exit
// status.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "chorus/chorus.h"

namespace chorus::testing_support {

// Child exit codes.
inline constexpr int kOk = 0;
inline constexpr int kWrong = 1;
inline constexpr int kThrew = 2;

// Runs body(rank, idHex) in `n` forked children and returns their exit codes (-1: killed after
// `limit`). Child 0 makes the unique id after the fork (so its server thread lives only there)
// and passes its hex to the others through pipes.
inline std::vector<int> runRanks(int n, const std::function<int(int, const std::string&)>& body,
                                 std::chrono::seconds limit = std::chrono::seconds(60)) {
  std::vector<std::array<int, 2>> pipes(static_cast<std::size_t>(n));
  for (auto& p : pipes)
    EXPECT_EQ(::pipe(p.data()), 0);
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      int code = kThrew;
      try {
        std::string hex(256, '\0');
        if (r == 0) {
          hex = uniqueIdToHex(getUniqueId());
          for (int q = 1; q < n; ++q)
            if (::write(pipes[q][1], hex.data(), hex.size()) != static_cast<ssize_t>(hex.size()))
              ::_exit(kThrew);
        } else if (::read(pipes[r][0], hex.data(), hex.size()) !=
                   static_cast<ssize_t>(hex.size())) {
          ::_exit(kThrew);
        }
        code = body(r, hex);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d threw: %s\n", r, e.what());
      }
      std::fflush(stderr);
      ::_exit(code);
    }
    pids.push_back(pid);
  }
  for (auto& p : pipes) {
    ::close(p[0]);
    ::close(p[1]);
  }
  std::vector<int> codes(static_cast<std::size_t>(n), -1);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (int r = 0; r < n; ++r) {
    int status = 0;
    while (::waitpid(pids[r], &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pids[r], SIGKILL);
        ::waitpid(pids[r], &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (WIFEXITED(status)) codes[r] = WEXITSTATUS(status);
  }
  return codes;
}

}  // namespace chorus::testing_support
