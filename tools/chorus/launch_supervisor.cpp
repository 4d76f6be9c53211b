#include "launch_supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "support/error.h"

extern char** environ;

namespace chorus::cli {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kPollInterval{50};

struct Child {
  pid_t pid = -1;
  int input = -1;  // the launcher's end of the rank's stdin pipe, or -1
  bool running = false;
  bool killedByUs = false;
  std::string host;
};

sigset_t launcherSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGCHLD);
  return set;
}

// This process's environment with `overrides` replacing or adding variables.
std::vector<std::string> environmentWith(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> entries;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::string name(text.substr(0, text.find('=')));
    if (!overrides.contains(name)) entries.emplace_back(text);
  }
  for (const auto& [name, value] : overrides)
    entries.push_back(name + "=" + value);
  return entries;
}

std::vector<char*> pointersTo(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& text : strings)
    pointers.push_back(text.data());
  pointers.push_back(nullptr);
  return pointers;
}

// Starts one rank in its own process group, with default signal handling and stdin from
// /dev/null or from `stdinFd`. Returns the pid, or the posix_spawn error code as a negative
// number.
pid_t spawnRank(std::vector<std::string> argv, std::vector<std::string> environment, int stdinFd) {
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none;
  sigemptyset(&none);
  sigset_t defaults = launcherSignals();
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdinFd >= 0)
    posix_spawn_file_actions_adddup2(&actions, stdinFd, STDIN_FILENO);
  else
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args = pointersTo(argv);
  std::vector<char*> envp = pointersTo(environment);
  pid_t pid = -1;
  const int error = posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  return error == 0 ? pid : -error;
}

class Supervisor {
 public:
  explicit Supervisor(const SuperviseOptions& options)
      : options_(options), children_(options.ranks) {}

  int run() {
    start();
    const Clock::time_point jobDeadline =
        options_.timeout ? Clock::now() + *options_.timeout : Clock::time_point::max();
    const sigset_t signals = launcherSignals();
    while (running_ > 0) {
      timespec wait{0, static_cast<long>(kPollInterval.count()) * 1'000'000};
      const int signal = ::sigtimedwait(&signals, nullptr, &wait);
      if (signal == SIGINT || signal == SIGTERM) forward(signal);
      reap();
      const auto now = Clock::now();
      if (running_ > 0 && now >= graceDeadline_) killRemaining("after the grace period");
      if (running_ > 0 && now >= jobDeadline && !timedOut_) {
        timedOut_ = true;
        fmt::print(stderr, "chorus launch: the job ran longer than --timeout ({} ms)\n",
                   options_.timeout->count());
        killRemaining("at the timeout");
      }
    }
    closeInputs();
    if (launcherSignal_ != 0) return 128 + launcherSignal_;
    if (firstFailureCode_ != 0) return firstFailureCode_;
    return timedOut_ ? 1 : 0;
  }

 private:
  void start() {
    for (int rank = 0; rank < options_.ranks; ++rank) {
      const RankStart how = options_.start(rank);
      CHORUS_INTERNAL_ASSERT(!how.argv.empty(), "a rank needs a program to run");
      Child& child = children_[rank];
      child.host = how.host;
      int pipeFds[2] = {-1, -1};
      if (!how.input.empty() && ::pipe2(pipeFds, O_CLOEXEC) != 0)
        fail(rank, fmt::format("cannot make its stdin pipe: {}", std::strerror(errno)));
      const pid_t pid = spawnRank(how.argv, environmentWith(how.environment), pipeFds[0]);
      if (pipeFds[0] >= 0) ::close(pipeFds[0]);
      child.input = pipeFds[1];
      if (pid < 0) {
        fail(rank, fmt::format("cannot run '{}': {}; check the PROGRAM name and PATH", how.argv[0],
                               std::strerror(-pid)));
      }
      child.pid = pid;
      child.running = true;
      ++running_;
      if (child.input >= 0 && !writeInput(child.input, how.input))
        fail(rank, fmt::format("cannot pass its variables on stdin: {}", std::strerror(errno)));
    }
  }

  // Stops the ranks started so far and throws OptionError about `rank`.
  [[noreturn]] void fail(int rank, const std::string& problem) {
    killRemaining("because a rank could not be started");
    while (running_ > 0)
      reap(true);
    closeInputs();
    throw OptionError(fmt::format("rank {}{}: {}", rank, on(children_[rank]), problem));
  }

  // Writes all of `text` (small: a rank's variables) without blocking for long: the pipe
  // holds 64 KiB, and a rank that exits early makes it fail with EPIPE instead.
  static bool writeInput(int fd, const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return errno == EPIPE;  // the rank is gone already; its exit is reported
      done += static_cast<std::size_t>(n);
    }
    return true;
  }

  void closeInputs() {
    for (Child& child : children_) {
      if (child.input >= 0) ::close(child.input);
      child.input = -1;
    }
  }

  static std::string on(const Child& child) {
    return child.host.empty() ? "" : " on " + child.host;
  }

  void startGrace() { graceDeadline_ = std::min(graceDeadline_, Clock::now() + options_.grace); }

  void forward(int signal) {
    if (launcherSignal_ == 0) launcherSignal_ = signal;
    for (const Child& child : children_)
      if (child.running) ::kill(-child.pid, signal);
    startGrace();
  }

  void killRemaining(std::string_view when) {
    std::string ranks;
    for (std::size_t rank = 0; rank < children_.size(); ++rank) {
      Child& child = children_[rank];
      if (!child.running || child.killedByUs) continue;
      child.killedByUs = true;
      ::kill(-child.pid, SIGKILL);
      ranks += fmt::format("{}{}{}", ranks.empty() ? "" : ", ", rank, on(child));
    }
    if (!ranks.empty()) {
      fmt::print(stderr, "chorus launch: killing rank(s) {} still running {}\n", ranks, when);
      std::fflush(stderr);
    }
  }

  // Collects exited ranks; `block` waits for one.
  void reap(bool block = false) {
    int status = 0;
    pid_t pid = 0;
    while ((pid = ::waitpid(-1, &status, block ? 0 : WNOHANG)) > 0) {
      block = false;
      for (std::size_t rank = 0; rank < children_.size(); ++rank) {
        Child& child = children_[rank];
        if (child.pid != pid || !child.running) continue;
        child.running = false;
        --running_;
        if (child.input >= 0) ::close(child.input);
        child.input = -1;
        report(static_cast<int>(rank), child, status);
      }
    }
  }

  void report(int rank, const Child& child, int status) {
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
    if (child.killedByUs) return;
    // Ranks ending by the signal the launcher forwarded are expected, not failures to report.
    if (WIFSIGNALED(status) && WTERMSIG(status) == launcherSignal_) return;
    int code = 1;
    if (WIFEXITED(status)) {
      code = WEXITSTATUS(status);
      // ssh exits 255 on its own errors (host unreachable, authentication).
      const char* hint =
          code == 255 && !child.host.empty()
              ? " (255: the remote shell agent may have failed to reach the host; see its "
                "message above)"
              : "";
      fmt::print(stderr, "chorus launch: rank {}{} exited with code {}{}\n", rank, on(child), code,
                 hint);
    } else if (WIFSIGNALED(status)) {
      fmt::print(stderr, "chorus launch: rank {}{} killed by signal {} ({})\n", rank, on(child),
                 WTERMSIG(status), ::strsignal(WTERMSIG(status)));
    }
    std::fflush(stderr);
    if (firstFailureCode_ == 0) firstFailureCode_ = code;
    startGrace();
  }

  const SuperviseOptions& options_;
  std::vector<Child> children_;
  int running_ = 0;
  int launcherSignal_ = 0;
  int firstFailureCode_ = 0;
  bool timedOut_ = false;
  Clock::time_point graceDeadline_ = Clock::time_point::max();
};

}  // namespace

void blockLauncherSignals() {
  const sigset_t set = launcherSignals();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int superviseRanks(const SuperviseOptions& options) {
  CHORUS_INTERNAL_ASSERT(options.ranks >= 1 && options.start,
                         "superviseRanks needs ranks and how to start them");
  ::signal(SIGPIPE, SIG_IGN);
  return Supervisor(options).run();
}

}  // namespace chorus::cli
