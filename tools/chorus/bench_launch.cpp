#include "bench_launch.h"

#include <fmt/format.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench_runner.h"
#include "gpu_buffers.h"
#include "runtime/datatype.h"
#include "support/error.h"
#include "transport_option.h"

namespace chorus::cli {
namespace {

// Creates the communicator(s) through `init`, naming --algo when the selection rejects it.
template <class Init>
auto initCommunicators(const SweepJob& job, Init init) {
  try {
    return init();
  } catch (const OptionError& error) {
    if (job.algo == "auto") throw;
    throw OptionError(fmt::format("--algo {}: {}", job.algo, error.what()));
  }
}

// The largest input or output buffer of the sweep, in elements.
std::size_t maxElements(const perf::SweepOptions& options, int nranks) {
  std::size_t elements = 1;
  for (std::uint64_t size : options.sizes) {
    const auto shape = perf::shapeFor(options.collective, size, options.elementSize, nranks);
    elements = std::max({elements, shape.sendCount, shape.recvCount});
  }
  return elements;
}

// One rank's sweep; true when no element was wrong.
bool benchRank(Communicator& comm, const SweepJob& job) {
  const std::size_t elements = maxElements(job.options, comm.size());
  ChorusRunner runner(comm, job.type, elements, job.bufferOffset, job.registered, job.onGpu);
  std::string title = perf::sweepTitle("chorus bench", job.options, comm.size());
  title += fmt::format("; --algo {}", job.algo);
  if (job.bufferOffset != 0) title += fmt::format("; buffers {} B past a page", job.bufferOffset);
  if (job.registered) title += "; registered buffers (chorus::memAlloc)";
  if (job.onGpu && comm.rank() == 0) {
    // docs/gpu.md "Benchmark": with the ranks on one GPU, their summed send rate (ranks x busbw)
    // is bounded by this rate.
    const std::size_t copyBytes = std::max<std::size_t>(
        std::min<std::size_t>(elements * runtime::dataTypeSize(job.type), std::size_t{1} << 28),
        std::size_t{1} << 20);
    title += fmt::format(
        "; executor cuda, device buffers, calls on a stream; the GPU's device-to-device copy "
        "rate ({} B): {:.1f} GB/s, the ceiling of ranks x busbw with every rank on this GPU",
        copyBytes, deviceCopyRate(copyBytes));
  }
  return perf::runAndReport(runner, job.options, job.sweep, title);
}

ExitCode exitCodeOf(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const OptionError&) {
    return ExitCode::usage;
  } catch (const UserError&) {
    return ExitCode::failure;
  } catch (...) {
    return ExitCode::internal;
  }
}

// Ranks as threads of this process over a transport that makes its group in one process. The
// first error aborts the communicators (so no rank waits for a dead one) and is rethrown.
ExitCode benchThreads(const SweepJob& job) {
  std::vector<Communicator> comms =
      initCommunicators(job, [&] { return Communicator::initAll(job.ranks, job.config); });
  std::mutex mutex;
  std::exception_ptr firstError;
  std::vector<char> correct(comms.size(), 0);
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < comms.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        correct[r] = benchRank(comms[r], job) ? 1 : 0;
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!firstError) firstError = std::current_exception();
        comms[r].abort(fmt::format("rank {} of chorus bench failed", r));
      }
    });
  }
  for (std::thread& thread : threads)
    thread.join();
  if (firstError) std::rethrow_exception(firstError);
  return correct[0] != 0 ? ExitCode::ok : ExitCode::failure;
}

// Reads exactly `size` bytes (the id hex) from a pipe.
std::string readAll(int fd, std::size_t size) {
  std::string text(size, '\0');
  std::size_t done = 0;
  while (done < size) {
    const ssize_t got = read(fd, text.data() + done, size - done);
    if (got <= 0) throw CommError("rank 0 of chorus bench exited before sending the unique id");
    done += static_cast<std::size_t>(got);
  }
  return text;
}

// The body of forked rank `r`: rendezvous (rank 0 makes the id and pipes it to the others),
// sweep, exit code. Never returns into the CLI.
[[noreturn]] void runChildRank(int r, const SweepJob& job, const std::vector<int>& pipeFds) {
  if (job.bindCores) bindToCore(r);
  // Keep only this rank's pipe ends, so a reader sees end-of-file if rank 0 dies early.
  for (std::size_t i = 0; i < pipeFds.size(); ++i) {
    const bool writeEnd = i % 2 == 1;
    const int peer = static_cast<int>(i / 2) + 1;
    if ((r == 0) != writeEnd || (r != 0 && peer != r)) close(pipeFds[i]);
  }
  ExitCode code = ExitCode::internal;
  try {
    UniqueId id;
    if (r == 0) {
      id = getUniqueId();
      const std::string hex = uniqueIdToHex(id);
      for (int peer = 1; peer < job.ranks; ++peer) {
        const int fd = pipeFds[2 * (peer - 1) + 1];
        if (write(fd, hex.data(), hex.size()) != static_cast<ssize_t>(hex.size()))
          throw CommError(fmt::format("cannot send the unique id to rank {}", peer));
      }
    } else {
      id = uniqueIdFromHex(readAll(pipeFds[2 * (r - 1)], uniqueIdToHex(UniqueId{}).size()));
    }
    if (r == 0)
      for (int peer = 1; peer < job.ranks; ++peer)
        close(pipeFds[2 * (peer - 1) + 1]);
    else
      close(pipeFds[2 * (r - 1)]);
    Communicator comm = initCommunicators(
        job, [&] { return Communicator::initRank(job.ranks, id, r, job.config); });
    try {
      code = benchRank(comm, job) ? ExitCode::ok : ExitCode::failure;
    } catch (const std::exception& e) {
      comm.abort(fmt::format("rank {} of chorus bench failed: {}", r, e.what()));
      throw;
    }
  } catch (const std::exception& error) {
    code = exitCodeOf(std::current_exception());
    // Option errors are the same on every rank: rank 0 reports them.
    const std::string_view message = error.what();
    if (code != ExitCode::usage || r == 0)
      fmt::print(stderr, "chorus: error: {}{}\n",
                 message.starts_with("rank ") ? "" : fmt::format("rank {}: ", r), message);
  }
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(static_cast<int>(code));
}

// Ranks as forked processes over a transport whose ranks connect on their own (shm, tcp). Forks
// before any thread exists; the parent only waits. Returns the worst child exit code.
ExitCode benchProcesses(const SweepJob& job) {
  std::vector<int> pipeFds;
  for (int peer = 1; peer < job.ranks; ++peer) {
    int fds[2];
    if (pipe(fds) != 0) throw UserError("cannot create pipes for the rendezvous; lower --ranks");
    pipeFds.push_back(fds[0]);
    pipeFds.push_back(fds[1]);
  }
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> children;
  for (int r = 0; r < job.ranks; ++r) {
    const pid_t pid = fork();
    if (pid < 0) {
      for (pid_t child : children)
        kill(child, SIGTERM);
      throw UserError("fork failed; lower --ranks");
    }
    if (pid == 0) runChildRank(r, job, pipeFds);
    children.push_back(pid);
  }
  for (int fd : pipeFds)
    close(fd);
  int worst = 0;
  for (std::size_t r = 0; r < children.size(); ++r) {
    int status = 0;
    waitpid(children[r], &status, 0);
    if (WIFEXITED(status)) {
      worst = std::max(worst, WEXITSTATUS(status));
    } else {
      printError(fmt::format("rank {} was killed by signal {}", r, WTERMSIG(status)));
      worst = std::max(worst, static_cast<int>(ExitCode::failure));
    }
  }
  return static_cast<ExitCode>(worst);
}

}  // namespace

void bindToCore(int r) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  if (cpus.empty()) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpus[static_cast<std::size_t>(r) % cpus.size()], &one);
  if (sched_setaffinity(0, sizeof(one), &one) != 0)
    fmt::print(stderr, "chorus: warning: rank {} could not be bound to CPU {}: {}\n", r,
               cpus[static_cast<std::size_t>(r) % cpus.size()], std::strerror(errno));
}

ExitCode runSweepJob(const SweepJob& job) {
  const auto forks = [](const transport::TransportEntry& e) {
    return runsOnThisHost(e) && e.runsProcesses();
  };
  if (const transport::TransportEntry* named = transport::findTransport(job.transport);
      job.bindCores && (named == nullptr || !forks(*named)))
    throw OptionError(fmt::format("--bind core pins rank processes; it needs --transport {}",
                                  transport::transportNames(forks)));
  const transport::TransportEntry& chosen = parseTransportOption(job.transport);
  return chosen.makeGroup ? benchThreads(job) : benchProcesses(job);
}

ExitCode runLaunchedRank(Communicator& comm, const SweepJob& job) {
  try {
    return benchRank(comm, job) ? ExitCode::ok : ExitCode::failure;
  } catch (const std::exception& e) {
    comm.abort(fmt::format("rank {} of chorus bench failed: {}", comm.rank(), e.what()));
    throw;
  }
}

}  // namespace chorus::cli
