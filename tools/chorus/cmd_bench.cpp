// `chorus bench COLL --ranks N ...`: nccl-tests style sweep of one collective through the public
// API (chorus::Communicator): time, algbw, busbw and #wrong per size, out of place and in place,
// with the timing method of bench/peers (see src/perf/). Ranks are threads of this process
// (--transport thread) or forked processes (--transport shm).
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench_runner.h"
#include "chorus/chorus.h"
#include "cli.h"
#include "perf/bench_args.h"
#include "runtime/datatype.h"
#include "support/error.h"

namespace chorus::cli {
namespace {

struct BenchCommandArgs {
  perf::BenchArgs sweep;
  int ranks = 0;
  std::string algo = "auto";
  std::string transport = "thread";
};

// --algo NAME|FILE becomes a CHORUS_ALGO override for this collective; auto keeps the default
// selection.
CommConfig makeConfig(const BenchCommandArgs& args, perf::Collective collective) {
  CommConfig config;
  config.transport = args.transport;
  if (args.algo != "auto")
    config.algo = fmt::format("{}={}", perf::collectiveName(collective), args.algo);
  return config;
}

// Creates the communicator(s) through `init`, naming --algo when the selection rejects it.
template <class Init>
auto initCommunicators(const BenchCommandArgs& args, Init init) {
  try {
    return init();
  } catch (const OptionError& error) {
    if (args.algo == "auto") throw;
    throw OptionError(fmt::format("--algo {}: {}", args.algo, error.what()));
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
bool benchRank(Communicator& comm, DataType type, const perf::SweepOptions& options,
               const BenchCommandArgs& args) {
  ChorusRunner runner(comm, type, maxElements(options, comm.size()));
  std::string title = perf::sweepTitle("chorus bench", options, comm.size());
  title += fmt::format("; --algo {}", args.algo);
  return perf::runAndReport(runner, options, args.sweep, title);
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

// Ranks as threads of this process over the thread transport. The first error aborts the
// communicators (so no rank waits for a dead one) and is rethrown.
ExitCode benchThreads(const BenchCommandArgs& args, DataType type,
                      const perf::SweepOptions& options, const CommConfig& config) {
  std::vector<Communicator> comms =
      initCommunicators(args, [&] { return Communicator::initAll(args.ranks, config); });
  std::mutex mutex;
  std::exception_ptr firstError;
  std::vector<char> correct(comms.size(), 0);
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < comms.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        correct[r] = benchRank(comms[r], type, options, args) ? 1 : 0;
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
[[noreturn]] void runChildRank(int r, const BenchCommandArgs& args, DataType type,
                               const perf::SweepOptions& options, const CommConfig& config,
                               const std::vector<int>& pipeFds) {
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
      for (int peer = 1; peer < args.ranks; ++peer) {
        const int fd = pipeFds[2 * (peer - 1) + 1];
        if (write(fd, hex.data(), hex.size()) != static_cast<ssize_t>(hex.size()))
          throw CommError(fmt::format("cannot send the unique id to rank {}", peer));
      }
    } else {
      id = uniqueIdFromHex(readAll(pipeFds[2 * (r - 1)], uniqueIdToHex(UniqueId{}).size()));
    }
    if (r == 0)
      for (int peer = 1; peer < args.ranks; ++peer)
        close(pipeFds[2 * (peer - 1) + 1]);
    else
      close(pipeFds[2 * (r - 1)]);
    Communicator comm =
        initCommunicators(args, [&] { return Communicator::initRank(args.ranks, id, r, config); });
    try {
      code = benchRank(comm, type, options, args) ? ExitCode::ok : ExitCode::failure;
    } catch (...) {
      comm.abort(fmt::format("rank {} of chorus bench failed", r));
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

// Ranks as forked processes over the shm transport. Forks before any thread exists; the
// parent only waits. Returns the worst child exit code.
ExitCode benchProcesses(const BenchCommandArgs& args, DataType type,
                        const perf::SweepOptions& options, const CommConfig& config) {
  std::vector<int> pipeFds;
  for (int peer = 1; peer < args.ranks; ++peer) {
    int fds[2];
    if (pipe(fds) != 0) throw UserError("cannot create pipes for the rendezvous; lower --ranks");
    pipeFds.push_back(fds[0]);
    pipeFds.push_back(fds[1]);
  }
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> children;
  for (int r = 0; r < args.ranks; ++r) {
    const pid_t pid = fork();
    if (pid < 0) {
      for (pid_t child : children)
        kill(child, SIGTERM);
      throw UserError("fork failed; lower --ranks");
    }
    if (pid == 0) runChildRank(r, args, type, options, config, pipeFds);
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

ExitCode runBench(const BenchCommandArgs& args) {
  if (args.ranks < 1) throw OptionError("--ranks must be at least 1, e.g. --ranks 2");
  const auto type = runtime::parseDataType(args.sweep.dtype);
  if (!type)
    throw OptionError(fmt::format(
        "unknown --dtype '{}'; use int8, uint8, int32, uint32, int64, uint64, float16, bfloat16, "
        "float32 or float64",
        args.sweep.dtype));
  perf::SweepOptions options =
      perf::makeSweepOptions(args.sweep, args.ranks, runtime::dataTypeSize(*type));
  options.library = "chorus";
  options.transport = args.transport;
  options.dtype = std::string(runtime::dataTypeName(*type));
  const CommConfig config = makeConfig(args, options.collective);
  if (args.transport == "thread") return benchThreads(args, *type, options, config);
  if (args.transport == "shm") return benchProcesses(args, *type, options, config);
  throw OptionError(
      fmt::format("unknown --transport '{}'; use thread (ranks are threads) or shm (ranks are "
                  "processes on this host)",
                  args.transport));
}

}  // namespace

Command addBenchCommand(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "bench", "Measure a collective over a size sweep (nccl-tests style: time, algbw, busbw)");
  auto args = std::make_shared<BenchCommandArgs>();
  perf::addBenchArgs(*command, args->sweep);
  command->add_option("-n,--ranks", args->ranks, "Number of ranks")->required();
  command
      ->add_option("--algo", args->algo,
                   "auto (default selection), a library algorithm name or a plan file")
      ->capture_default_str();
  command->add_option("--transport", args->transport, "thread or shm")->capture_default_str();
  return [args]() { return runBench(*args); };
}

}  // namespace chorus::cli
