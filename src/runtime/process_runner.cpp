#include "runtime/process_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

#include "ir/step_endpoints.h"
#include "runtime/executor.h"
#include "runtime/one_sided_runner.h"
#include "support/error.h"
#include "transport/file_store.h"
#include "transport/registry.h"

namespace chorus::runtime {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxErrorBytes = 16 << 10;  // keeps every record below the pipe's buffer
constexpr std::size_t kMaxFirstWrongBytes = 1 << 10;

// ---- the record a child sends its parent ---------------------------------------------------

void appendBytes(std::string& out, const void* data, std::size_t bytes) {
  out.append(static_cast<const char*>(data), bytes);
}

void appendText(std::string& out, const std::string& text, std::size_t limit) {
  const auto bytes = static_cast<std::uint32_t>(std::min(text.size(), limit));
  appendBytes(out, &bytes, sizeof(bytes));
  out.append(text.data(), bytes);
}

std::string encodeOutcome(const RankOutcome& outcome) {
  std::string out;
  const std::uint64_t checked = outcome.report.checkedElements;
  const std::uint64_t wrong = outcome.report.wrongElements;
  const double seconds = outcome.report.seconds;
  const auto kind = static_cast<std::uint32_t>(outcome.errorKind);
  appendBytes(out, &checked, sizeof(checked));
  appendBytes(out, &wrong, sizeof(wrong));
  appendBytes(out, &seconds, sizeof(seconds));
  appendBytes(out, &kind, sizeof(kind));
  appendText(out, outcome.report.firstWrong, kMaxFirstWrongBytes);
  appendText(out, outcome.error, kMaxErrorBytes);
  return out;
}

// Reads the fields of encodeOutcome(); false if `in` is truncated (the child died writing).
class Decoder {
 public:
  explicit Decoder(const std::string& in) : in_(in) {}
  template <typename T>
  bool read(T* value) {
    if (in_.size() - at_ < sizeof(T)) return false;
    std::memcpy(value, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return true;
  }
  bool readText(std::string* text) {
    std::uint32_t bytes = 0;
    if (!read(&bytes) || in_.size() - at_ < bytes) return false;
    text->assign(in_.data() + at_, bytes);
    at_ += bytes;
    return true;
  }

 private:
  const std::string& in_;
  std::size_t at_ = 0;
};

bool decodeOutcome(const std::string& in, RankOutcome* outcome) {
  Decoder d(in);
  std::uint64_t checked = 0, wrong = 0;
  std::uint32_t kind = 0;
  if (!d.read(&checked) || !d.read(&wrong) || !d.read(&outcome->report.seconds) || !d.read(&kind) ||
      !d.readText(&outcome->report.firstWrong) || !d.readText(&outcome->error))
    return false;
  if (kind > static_cast<std::uint32_t>(RankErrorKind::other)) return false;
  outcome->report.checkedElements = checked;
  outcome->report.wrongElements = wrong;
  outcome->errorKind = static_cast<RankErrorKind>(kind);
  outcome->reported = true;
  return true;
}

void writeAll(int fd, const std::string& data) {
  std::size_t at = 0;
  while (at < data.size()) {
    const ssize_t wrote = ::write(fd, data.data() + at, data.size() - at);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return;  // the parent is gone; nothing left to tell
    at += static_cast<std::size_t>(wrote);
  }
}

// ---- the child ------------------------------------------------------------------------------

RankErrorKind classifyCurrentException(std::string* message) {
  try {
    throw;
  } catch (const ParseError& e) {
    *message = e.what();
    return RankErrorKind::parse;
  } catch (const CompileError& e) {
    *message = e.what();
    return RankErrorKind::compile;
  } catch (const OptionError& e) {
    *message = e.what();
    return RankErrorKind::option;
  } catch (const TimeoutError& e) {
    *message = e.what();
    return RankErrorKind::timeout;
  } catch (const CommError& e) {
    *message = e.what();
    return RankErrorKind::comm;
  } catch (const InternalError& e) {
    *message = e.what();
    return RankErrorKind::internal;
  } catch (const PlanError& e) {
    *message = e.what();
    return RankErrorKind::plan;
  } catch (const std::exception& e) {
    *message = e.what();
    return RankErrorKind::other;
  } catch (...) {
    *message = "an exception that is not a std::exception";
    return RankErrorKind::other;
  }
}

struct LaunchPlan {
  const RankProcessOptions& options;
  const transport::TransportEntry& transport;
  std::string storeDirectory;
  std::string namePrefix;
};

// The transport `name` names (empty: the one for processes on one host), which must connect
// each rank on its own.
const transport::TransportEntry& processTransport(const std::string& name) {
  const transport::TransportEntry& entry =
      name.empty() ? transport::defaultTransport(transport::TransportReach::oneHost)
                   : transport::requireTransport(name, "RankProcessOptions.transport");
  if (!entry.runsProcesses())
    throw OptionError(fmt::format(
        "transport '{}' ({}) makes every rank in one process; forked ranks need one of {}",
        entry.name, entry.description,
        transport::transportNames(
            [](const transport::TransportEntry& e) { return e.runsProcesses(); }, "'")));
  return entry;
}

// This rank's connections over plan.transport; the name prefix is unique to the run, so it
// names the shm segments or is the tcp group id.
std::unique_ptr<transport::ConnectionSet> connectRank(const LaunchPlan& plan,
                                                      transport::Store& store, int rank) {
  transport::TransportOptions options;
  options.fifo = plan.options.fifo;
  options.groupName = plan.namePrefix;
  options.timeout = plan.options.timeout;
  return plan.transport.connectRank(store, rank, plan.options.nranks, options);
}

[[noreturn]] void runChild(const LaunchPlan& plan, int rank, int reportFd,
                           const RankMain& rankMain) {
  RankOutcome outcome;
  {
    std::unique_ptr<transport::ConnectionSet> connections;
    try {
      transport::FileStore store(plan.storeDirectory);
      connections = connectRank(plan, store, rank);
      outcome.report = rankMain(rank, *connections);
    } catch (...) {
      outcome.errorKind = classifyCurrentException(&outcome.error);
      // First reason wins: a rank that failed on its own stops the others now.
      if (connections) connections->abort(fmt::format("rank {} failed: {}", rank, outcome.error));
    }
  }  // leaves the group cleanly
  writeAll(reportFd, encodeOutcome(outcome));
  ::close(reportFd);
  ::_exit(0);
}

// ---- the parent ------------------------------------------------------------------------------

struct Child {
  int rank = -1;
  pid_t pid = -1;
  int fd = -1;  // read end of the report pipe; -1 once the child has been collected
  std::string received;
};

// Kills (SIGKILL) and reaps every child not collected yet, and closes their pipes; used when
// the parent itself fails part way, so no child outlives the call.
class ChildGuard {
 public:
  explicit ChildGuard(std::vector<Child>& children) : children_(children) {}
  ChildGuard(const ChildGuard&) = delete;
  ChildGuard& operator=(const ChildGuard&) = delete;
  ~ChildGuard() {
    for (auto& child : children_) {
      if (child.fd < 0) continue;
      ::close(child.fd);
      child.fd = -1;
      ::kill(child.pid, SIGKILL);
      int status = 0;
      while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }

 private:
  std::vector<Child>& children_;
};

// A fresh directory for the run's FileStore, removed with everything in it.
class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = fmt::format("{}/chorus-run-XXXXXX", base && *base ? base : "/tmp");
    if (::mkdtemp(pattern.data()) == nullptr)
      throw CommError(
          fmt::format("cannot create a temporary directory '{}' for the ranks' "
                      "rendezvous: {}; set TMPDIR to a writable directory",
                      pattern, std::strerror(errno)));
    path_ = pattern;
  }
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
  ~TemporaryDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string describeEnd(const Child& child, int status) {
  if (WIFSIGNALED(status))
    return fmt::format("rank {} (pid {}) was killed by signal {} ({}) before it reported a result",
                       child.rank, child.pid, WTERMSIG(status), ::strsignal(WTERMSIG(status)));
  return fmt::format("rank {} (pid {}) exited with status {} before it reported a result",
                     child.rank, child.pid, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

// Reaps an ended (or killed) child and decodes what it sent.
RankOutcome collect(Child& child) {
  int status = 0;
  while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  char buffer[4096];
  while (true) {
    const ssize_t got = ::read(child.fd, buffer, sizeof(buffer));
    if (got > 0) {
      child.received.append(buffer, static_cast<std::size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(child.fd);
  child.fd = -1;
  RankOutcome outcome;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && decodeOutcome(child.received, &outcome))
    return outcome;
  outcome = RankOutcome{};
  outcome.errorKind = RankErrorKind::comm;
  outcome.error = describeEnd(child, status);
  return outcome;
}

// Reads the children's reports as they arrive; a child's pipe reaches end-of-file when it
// exits. Kills whoever is still running at `deadline`.
void waitForChildren(std::vector<Child>& children, std::vector<RankOutcome>& outcomes,
                     Clock::time_point deadline, std::chrono::milliseconds waitLimit) {
  std::vector<pollfd> fds;
  std::vector<Child*> polled;
  char buffer[4096];
  while (true) {
    fds.clear();
    polled.clear();
    for (auto& child : children)
      if (child.fd >= 0) {
        fds.push_back({child.fd, POLLIN, 0});
        polled.push_back(&child);
      }
    if (fds.empty()) return;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(std::min<long>(left, 1000)));
    if (ready < 0 && errno != EINTR)
      throw CommError(
          fmt::format("waiting for the rank processes failed: poll: {}", std::strerror(errno)));
    for (std::size_t i = 0; ready > 0 && i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Child& child = *polled[i];
      const ssize_t got = ::read(child.fd, buffer, sizeof(buffer));
      if (got > 0) {
        child.received.append(buffer, static_cast<std::size_t>(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        outcomes[child.rank] = collect(child);
      }
    }
  }
  for (auto& child : children) {
    if (child.fd < 0) continue;
    ::kill(child.pid, SIGKILL);
    const pid_t pid = child.pid;
    RankOutcome& outcome = outcomes[child.rank];
    outcome = collect(child);
    if (outcome.reported) continue;  // it finished just in time
    outcome.errorKind = RankErrorKind::timeout;
    outcome.error = fmt::format(
        "rank {} (pid {}) was still running after {} ms and was killed (SIGKILL); it was stuck "
        "outside chorus's deadlines or the run needs a longer timeout (--timeout)",
        child.rank, pid, waitLimit.count());
  }
}

[[noreturn]] void rethrowAs(RankErrorKind kind, const std::string& message) {
  switch (kind) {
    case RankErrorKind::option:
      throw OptionError(message);
    case RankErrorKind::parse:
      throw ParseError(message);
    case RankErrorKind::compile:
      throw CompileError(message);
    case RankErrorKind::timeout:
      throw TimeoutError(message);
    case RankErrorKind::comm:
      throw CommError(message);
    case RankErrorKind::internal:
      throw InternalError(message);
    case RankErrorKind::plan:
      throw PlanError(message);
    case RankErrorKind::none:
    case RankErrorKind::other:
      break;
  }
  throw std::runtime_error(message);
}

}  // namespace

std::vector<RankOutcome> runRankProcesses(const RankProcessOptions& options,
                                          const RankMain& rankMain) {
  if (options.nranks < 1)
    throw OptionError(fmt::format("a process run needs at least 1 rank, got {}", options.nranks));
  const transport::TransportEntry& transportEntry = processTransport(options.transport);
  TemporaryDirectory directory;
  const LaunchPlan plan{options, transportEntry, directory.path(), uniqueRunPrefix()};
  ShmNameSweeper sweeper(plan.namePrefix);
  std::vector<Child> children;
  children.reserve(static_cast<std::size_t>(options.nranks));
  ChildGuard guard(children);
  const auto deadline = Clock::now() + options.waitLimit;
  std::fflush(nullptr);  // the children must not write the parent's buffered output again
  for (int rank = 0; rank < options.nranks; ++rank) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
      throw CommError(
          fmt::format("cannot start rank {}: pipe: {}; raise the open-file limit "
                      "(ulimit -n) or use fewer ranks",
                      rank, std::strerror(errno)));
    const pid_t pid = ::fork();
    if (pid < 0) {
      const int error = errno;
      ::close(fds[0]);
      ::close(fds[1]);
      throw CommError(
          fmt::format("cannot start rank {}: fork: {}; use fewer ranks or raise the "
                      "process limit (ulimit -u)",
                      rank, std::strerror(error)));
    }
    if (pid == 0) {
      ::close(fds[0]);
      for (const auto& child : children)
        ::close(child.fd);
      runChild(plan, rank, fds[1], rankMain);
    }
    ::close(fds[1]);
    children.push_back({rank, pid, fds[0], {}});
  }
  std::vector<RankOutcome> outcomes(static_cast<std::size_t>(options.nranks));
  waitForChildren(children, outcomes, deadline, options.waitLimit);
  return outcomes;
}

ShmNameSweeper::~ShmNameSweeper() {
  std::error_code error;
  for (std::filesystem::directory_iterator it("/dev/shm", error), end; !error && it != end;
       it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix_, 0) == 0) ::shm_unlink(("/" + name).c_str());
  }
}

std::string uniqueRunPrefix() {
  std::random_device random;
  return fmt::format("chorus-run-{}-{:08x}", ::getpid(), random());
}

RunReport mergeRankReports(const std::vector<RankOutcome>& outcomes) {
  RunReport report;
  for (const auto& o : outcomes) {
    report.checkedElements += o.report.checkedElements;
    report.wrongElements += o.report.wrongElements;
    if (report.firstWrong.empty()) report.firstWrong = o.report.firstWrong;
    report.seconds = std::max(report.seconds, o.report.seconds);
  }
  return report;
}

void throwFirstFailure(const std::vector<RankOutcome>& outcomes) {
  for (const auto& o : outcomes)
    if (o.reported && !o.ok() && o.errorKind != RankErrorKind::comm)
      rethrowAs(o.errorKind, o.error);
  for (const auto& o : outcomes)
    if (!o.reported && !o.ok()) rethrowAs(o.errorKind, o.error);
  for (const auto& o : outcomes)
    if (!o.ok()) rethrowAs(o.errorKind, o.error);
}

ProcessRunReport runOnProcesses(const ir::Algorithm& algorithm, const ProcessRunOptions& options) {
  // One-sided plans (MSCCL++) have their own runner: peers' memory mapped, no messages.
  if (ir::hasOneSidedOps(algorithm)) return runOneSidedOnProcesses(algorithm, options);
  ir::requireStepEndpoints(algorithm, "run");  // plans arrive here unverified (chorus run FILE)
  const int iterations = std::max(1, options.iterations);
  const ExecutorEntry& executorEntry = requireExecutor(options.executor, "RunOptions.executor");
  ExecutorConfig executorConfig;
  executorConfig.streamingWorkingSetBytes = options.streamingWorkingSetBytes;
  executorConfig.alwaysByReference = options.alwaysByReference;
  RankProcessOptions launch;
  launch.nranks = algorithm.nranks;
  launch.transport = options.transport;
  launch.fifo = options.fifo;
  launch.timeout = options.timeout;
  launch.waitLimit = options.timeout * (iterations + 1) + std::chrono::seconds(10);
  const auto outcomes =
      runRankProcesses(launch, [&](int rank, transport::ConnectionSet& connections) {
        RankBuffers buffers(algorithm, rank, options);
        const std::unique_ptr<Executor> executor =
            executorEntry.make(rank, connections, executorConfig);
        RunReport report;
        for (int iteration = 0; iteration < iterations; ++iteration) {
          buffers.reset();
          const CallIdentity call = identifyCall(algorithm, options, iteration);
          connections.publishCall(call.description);
          CallOptions exec;
          exec.timeout = options.timeout;
          exec.label = call.description.c_str();
          exec.callTag = call.tag;
          const CollectiveArgs args{buffers.input(), buffers.output(), options.count, options.type,
                                    options.op};
          const auto start = Clock::now();
          executor->run(algorithm, args, exec);
          report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
        }
        checkRankOutput(algorithm, rank, options, buffers.output(), &report);
        checkRankInput(algorithm, rank, options, buffers.input(), &report);
        return report;
      });
  throwFirstFailure(outcomes);
  return mergeRankReports(outcomes);
}

}  // namespace chorus::runtime
