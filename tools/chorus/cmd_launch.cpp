// `chorus launch -n N [--timeout D] [--grace D] [--hosts H] [--] PROGRAM [ARGS...]`: the local
// launcher. Serves a TcpStore on 127.0.0.1 (ephemeral port) for the job's rendezvous and runs N
// copies of PROGRAM with CHORUS_RANK, CHORUS_WORLD_SIZE, CHORUS_LOCAL_RANK, CHORUS_STORE and
// CHORUS_JOB_ID set (read by transport/bootstrap_env.h). Ranks unlink their own /dev/shm
// segments; the launcher removes nothing.
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cli.h"
#include "launch_supervisor.h"
#include "support/env.h"
#include "support/error.h"
#include "transport/tcp_store.h"

namespace chorus::cli {
namespace {

constexpr int kMaxRanks = 4096;

struct LaunchArgs {
  int ranks = 0;
  std::string timeout;  // empty: no limit
  std::string grace = "10s";
  std::string hosts;
};

std::string thisHostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

// Only this host for now: every entry of the comma list (optionally HOST:SLOTS) must name it.
void checkHosts(const std::string& hosts) {
  if (hosts.empty()) return;
  const std::string self = thisHostName();
  std::size_t start = 0;
  while (start <= hosts.size()) {
    const std::size_t comma = std::min(hosts.find(',', start), hosts.size());
    std::string host = hosts.substr(start, comma - start);
    if (const std::size_t colon = host.rfind(':');
        colon != std::string::npos && host != "::1" && host.find(':') == colon)
      host.resize(colon);
    const bool local = host == "localhost" || host == "127.0.0.1" || host == "::1" ||
                       (!self.empty() && host == self);
    if (!local) {
      throw OptionError(fmt::format(
          "--hosts {}: '{}' is not this host; chorus launch starts ranks on this host only. "
          "To run across hosts start the ranks with mpirun (-H/--hostfile, with "
          "CHORUS_STORE=tcp://HOST:PORT) or with torchrun's variables (RANK, WORLD_SIZE, "
          "MASTER_ADDR, MASTER_PORT): see docs/multihost.md",
          hosts, host));
    }
    start = comma + 1;
  }
}

std::string makeJobId() {
  std::random_device random;
  return fmt::format("launch-{}-{:08x}{:08x}", ::getpid(), random(), random());
}

ExitCode runLaunch(const LaunchArgs& args, const std::vector<std::string>& program) {
  if (args.ranks < 1 || args.ranks > kMaxRanks) {
    throw OptionError(fmt::format("-n {} is out of range; use 1..{}", args.ranks, kMaxRanks));
  }
  if (program.empty()) {
    throw OptionError("chorus launch needs the PROGRAM to run: chorus launch -n N PROGRAM [ARGS]");
  }
  checkHosts(args.hosts);
  SuperviseOptions options;
  options.ranks = args.ranks;
  options.argv = program;
  options.grace = parseDuration(args.grace, "--grace");
  if (!args.timeout.empty()) options.timeout = parseDuration(args.timeout, "--timeout");

  // Signals are blocked before the store's server thread starts, so only the supervisor's
  // sigtimedwait sees them.
  blockLauncherSignals();
  transport::TcpStore store("127.0.0.1", 0, true, std::chrono::seconds(10),
                            envString("CHORUS_AUTH_TOKEN").value_or(""));
  const std::string storeAddress = fmt::format("tcp://127.0.0.1:{}", store.port());
  const std::string jobId = makeJobId();
  options.environment = [&](int rank) {
    return std::map<std::string, std::string>{
        {"CHORUS_RANK", std::to_string(rank)},
        {"CHORUS_WORLD_SIZE", std::to_string(args.ranks)},
        {"CHORUS_LOCAL_RANK", std::to_string(rank)},
        {"CHORUS_STORE", storeAddress},
        {"CHORUS_JOB_ID", jobId},
    };
  };
  return static_cast<ExitCode>(superviseRanks(options));
}

}  // namespace

Command addLaunchCommand(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "launch",
      "Run N copies of PROGRAM on this host as the ranks of one job (sets CHORUS_RANK, "
      "CHORUS_WORLD_SIZE, CHORUS_LOCAL_RANK, CHORUS_STORE, CHORUS_JOB_ID)");
  auto args = std::make_shared<LaunchArgs>();
  command->add_option("-n,--ranks", args->ranks, "Number of ranks (processes)")->required();
  command->add_option("--timeout", args->timeout,
                      "Kill the job if it runs longer than this (300, 1.5s, 500ms, 2m); default: "
                      "no limit");
  command
      ->add_option("--grace", args->grace,
                   "After a rank fails, how long the others may still run before they are "
                   "killed")
      ->capture_default_str();
  command->add_option("--hosts", args->hosts,
                      "Hosts to run on; only this host (localhost) for now");
  // PROGRAM and its ARGS are everything after the launcher's options (or after '--'), kept
  // verbatim in remaining(). The positional below only documents PROGRAM in --help: its
  // validator refuses every value, so prefix_command() hands the first non-option and all that
  // follows to remaining(), and a '--' stays inside this subcommand instead of ending it.
  command->prefix_command();
  command->validate_positionals();
  auto unused = std::make_shared<std::vector<std::string>>();
  command
      ->add_option("program", *unused, "PROGRAM [ARGS...] to run as every rank (PATH is searched)")
      ->check(
          CLI::Validator([](std::string&) { return std::string("taken verbatim"); }, "PROGRAM"));
  return [command, args, unused]() {
    std::vector<std::string> program = command->remaining();
    if (!program.empty() && program.front() == "--") program.erase(program.begin());
    return runLaunch(*args, program);
  };
}

}  // namespace chorus::cli
