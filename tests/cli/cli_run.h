// Runs the `chorus` binary (CHORUS_CLI) or a shell command for the CLI tests, capturing
// stdout and stderr together with the exit code.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace chorus::testing_support {

struct CommandResult {
  int exitCode = -1;   // -1 when the command did not exit normally
  std::string output;  // stdout and stderr together
};

// Runs `command` with /bin/sh.
inline CommandResult runShell(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// The quoted path of the chorus binary, for building command lines.
inline std::string cli() {
  return std::string("'") + CHORUS_CLI + "'";
}

// Runs `chorus ARGUMENTS`.
inline CommandResult runCli(const std::string& arguments) {
  return runShell(cli() + " " + arguments);
}

}  // namespace chorus::testing_support
