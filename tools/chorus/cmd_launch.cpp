// `chorus launch -n N [--timeout D] [--grace D] [--hosts H [--rsh AGENT] [--store-addr A]]
// [-x NAME[=VALUE]]... [--] PROGRAM [ARGS...]`: the launcher. Serves a TcpStore for the job's
// rendezvous (on 127.0.0.1 when every rank runs here, else on every interface) and runs N copies
// of PROGRAM with CHORUS_RANK, CHORUS_WORLD_SIZE, CHORUS_LOCAL_RANK, CHORUS_STORE and
// CHORUS_JOB_ID set (read by transport/bootstrap_env.h). Ranks on other hosts are started
// through the remote shell agent (launch_hosts.h). Ranks unlink their own /dev/shm segments;
// the launcher removes nothing.
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <filesystem>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"
#include "launch_hosts.h"
#include "launch_supervisor.h"
#include "support/env.h"
#include "support/error.h"
#include "transport/process_identity.h"
#include "transport/tcp/net_interfaces.h"
#include "transport/tcp_store.h"

extern char** environ;

namespace chorus::cli {
namespace {

constexpr int kMaxRanks = 4096;
constexpr const char* kDefaultAgent = "ssh -o BatchMode=yes";

struct LaunchArgs {
  int ranks = 0;
  std::string timeout;  // empty: no limit
  std::string grace = "10s";
  std::string hosts;
  std::string rsh;           // empty: CHORUS_LAUNCH_RSH, else kDefaultAgent
  std::string storeAddress;  // empty: the address of the interface the tcp transport would use
  std::vector<std::string> exports;  // -x NAME or NAME=VALUE
};

std::string makeJobId() {
  std::random_device random;
  return fmt::format("launch-{}-{:08x}{:08x}", ::getpid(), random(), random());
}

std::vector<std::string> splitWords(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string word; in >> word;)
    words.push_back(word);
  return words;
}

// -x NAME (this process's value) or -x NAME=VALUE.
std::map<std::string, std::string> exportedVariables(const std::vector<std::string>& exports) {
  std::map<std::string, std::string> variables;
  for (const std::string& entry : exports) {
    const std::size_t equals = entry.find('=');
    if (equals != std::string::npos) {
      variables[entry.substr(0, equals)] = entry.substr(equals + 1);
      continue;
    }
    const std::optional<std::string> value = envString(entry.c_str());
    if (!value) {
      throw OptionError(fmt::format(
          "-x {}: the variable is not set here; set it, or give its value as -x {}=VALUE", entry,
          entry));
    }
    variables[entry] = *value;
  }
  return variables;
}

// Every CHORUS_* variable of this process (the rank's own ones are set per rank afterwards).
std::map<std::string, std::string> chorusVariables() {
  std::map<std::string, std::string> variables;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::size_t equals = text.find('=');
    if (equals == std::string_view::npos || !text.starts_with("CHORUS_")) continue;
    variables[std::string(text.substr(0, equals))] = std::string(text.substr(equals + 1));
  }
  return variables;
}

// Where ranks on other hosts reach this launcher's store: --store-addr, else the address of
// the interface the tcp transport would pick (CHORUS_SOCKET_IFNAME, else not loopback).
std::string remoteStoreAddress(const LaunchArgs& args) {
  if (!args.storeAddress.empty()) return args.storeAddress;
  try {
    return transport::chooseInterface(transport::listInterfaces(),
                                      envString("CHORUS_SOCKET_IFNAME").value_or(""),
                                      /*peersOnOtherHosts=*/true)
        .address;
  } catch (const CommError& error) {
    throw OptionError(fmt::format(
        "chorus launch: no address for the job's store that other hosts can reach ({}); pass "
        "--store-addr ADDRESS",
        error.what()));
  }
}

ExitCode runLaunch(const LaunchArgs& args, const std::vector<std::string>& program) {
  if (args.ranks < 1 || args.ranks > kMaxRanks) {
    throw OptionError(fmt::format("-n {} is out of range; use 1..{}", args.ranks, kMaxRanks));
  }
  if (program.empty()) {
    throw OptionError("chorus launch needs the PROGRAM to run: chorus launch -n N PROGRAM [ARGS]");
  }
  const std::vector<RankPlacement> placements =
      placeRanks(args.hosts.empty() ? std::vector<HostSlots>{{"localhost", std::nullopt}}
                                    : parseHosts(args.hosts),
                 args.ranks, transport::identifyThisProcess().hostname);
  const bool remote = std::any_of(placements.begin(), placements.end(),
                                  [](const RankPlacement& place) { return !place.local; });
  const std::vector<std::string> agent = splitWords(
      !args.rsh.empty() ? args.rsh : envString("CHORUS_LAUNCH_RSH").value_or(kDefaultAgent));
  if (remote && agent.empty())
    throw OptionError("--rsh is empty; name the remote shell agent, e.g. --rsh ssh");
  const std::map<std::string, std::string> exported = exportedVariables(args.exports);
  const std::string storeHost = remote ? remoteStoreAddress(args) : "127.0.0.1";
  const bool ipv6 = storeHost.find(':') != std::string::npos;

  SuperviseOptions options;
  options.ranks = args.ranks;
  options.grace = parseDuration(args.grace, "--grace");
  if (!args.timeout.empty()) options.timeout = parseDuration(args.timeout, "--timeout");

  // Signals are blocked before the store's server thread starts, so only the supervisor's
  // sigtimedwait sees them.
  blockLauncherSignals();
  transport::TcpStore store(remote ? (ipv6 ? "::" : "0.0.0.0") : "127.0.0.1", 0, true,
                            std::chrono::seconds(10), envString("CHORUS_AUTH_TOKEN").value_or(""));
  const std::string storeAddress =
      fmt::format("tcp://{}:{}", ipv6 ? "[" + storeHost + "]" : storeHost, store.port());
  const std::string jobId = makeJobId();
  const std::string directory = std::filesystem::current_path().string();
  const std::map<std::string, std::string> forwarded = chorusVariables();
  options.start = [&](int rank) {
    const RankPlacement& place = placements[static_cast<std::size_t>(rank)];
    RankStart how;
    how.environment = exported;
    how.environment["CHORUS_RANK"] = std::to_string(rank);
    how.environment["CHORUS_WORLD_SIZE"] = std::to_string(args.ranks);
    how.environment["CHORUS_LOCAL_RANK"] = std::to_string(place.localRank);
    how.environment["CHORUS_STORE"] = storeAddress;
    how.environment["CHORUS_JOB_ID"] = jobId;
    if (place.local) {
      how.argv = program;
      return how;
    }
    // A remote rank gets its variables on stdin, after this host's CHORUS_* ones.
    std::map<std::string, std::string> variables = forwarded;
    for (const auto& [name, value] : how.environment)
      variables[name] = value;
    how.environment.clear();
    how.input = environmentLines(variables);
    how.argv = agent;
    how.argv.push_back(place.host);
    how.argv.push_back(remoteRankScript(program, directory));
    how.host = place.host;
    return how;
  };
  return static_cast<ExitCode>(superviseRanks(options));
}

}  // namespace

Command addLaunchCommand(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "launch",
      "Run N copies of PROGRAM as the ranks of one job, on this host or across --hosts (sets "
      "CHORUS_RANK, CHORUS_WORLD_SIZE, CHORUS_LOCAL_RANK, CHORUS_STORE, CHORUS_JOB_ID)");
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
                      "Hosts to run on: NAME or NAME:SLOTS, comma-separated; ranks are placed "
                      "host by host (evenly without slot counts). Default: this host");
  command->add_option("--rsh", args->rsh,
                      "Remote shell agent for ranks on other hosts, run as AGENT HOST SCRIPT "
                      "(default: $CHORUS_LAUNCH_RSH, else 'ssh -o BatchMode=yes')");
  command->add_option("--store-addr", args->storeAddress,
                      "Address of this host that the other hosts reach the job's store at "
                      "(default: the interface CHORUS_SOCKET_IFNAME picks, not loopback)");
  command
      ->add_option("-x", args->exports,
                   "Pass NAME (its value here) or NAME=VALUE to every rank; CHORUS_* "
                   "variables reach remote ranks without it")
      ->allow_extra_args(false);
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
