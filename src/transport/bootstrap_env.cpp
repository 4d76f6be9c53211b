#include "transport/bootstrap_env.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "support/error.h"
#include "transport/file_store.h"
#include "transport/tcp_store.h"

namespace chorus::transport {
namespace {

constexpr int kMaxWorldSize = 1 << 20;

constexpr const char* kReadVariables[] = {
    "CHORUS_RANK",
    "CHORUS_WORLD_SIZE",
    "CHORUS_LOCAL_RANK",
    "CHORUS_STORE",
    "CHORUS_JOB_ID",
    "CHORUS_MASTER_PORT",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE",
    "OMPI_MCA_ess_base_jobid",
    "PMIX_NAMESPACE",
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCHELASTIC_RUN_ID",
    "TORCHELASTIC_RESTART_COUNT",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "SLURM_NPROCS",
    "SLURM_LOCALID",
    "SLURM_JOB_ID",
    "SLURM_STEP_ID",
    "SLURM_STEPID",
    "SLURM_STEP_NODELIST",
    "SLURM_JOB_NODELIST",
    "SLURM_NODELIST",
    "SLURMD_NODENAME",
    "PMIX_RANK",
    "TMPDIR",
};

constexpr const char* kLookedFor =
    "chorus launch (CHORUS_RANK, CHORUS_WORLD_SIZE, CHORUS_STORE), Open MPI mpirun "
    "(OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE), torchrun (RANK, WORLD_SIZE, MASTER_ADDR, "
    "MASTER_PORT) or Slurm srun (SLURM_PROCID, SLURM_NTASKS, SLURM_STEP_ID, SLURM_JOB_ID, "
    "SLURM_STEP_NODELIST)";

// Who this process is, as one launcher's variables say.
struct Launch {
  std::string source;
  int rank = 0;
  int size = 0;
  int localRank = 0;
  std::string jobId;
  std::string masterAddress;  // torchrun, srun: where rank 0's store is reached
  int storePort = 0;          // torchrun, srun: where rank 0 serves it
  std::string serverHost;     // srun: the host rank 0 must run on (empty: not checked)
};

std::optional<std::string> lookup(const EnvVariables& variables, const char* name) {
  const auto it = variables.find(name);
  if (it == variables.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

std::string require(const EnvVariables& variables, const char* name, const char* becauseOf) {
  auto value = lookup(variables, name);
  if (!value) {
    throw OptionError(
        fmt::format("{} is set but {} is not; the launcher must set both (or "
                    "neither)",
                    becauseOf, name));
  }
  return *value;
}

int parseInt(const char* name, const std::string& text, int minValue, int maxValue,
             std::string_view meaning) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value < minValue ||
      value > maxValue) {
    throw OptionError(fmt::format("{}='{}' is not {} (an integer in {}..{})", name, text, meaning,
                                  minValue, maxValue));
  }
  return value;
}

// Rank, size and local rank from three variables; the local rank is optional (default: rank).
void parseRanks(const EnvVariables& variables, const char* rankName, const char* sizeName,
                const char* localName, Launch& launch) {
  launch.size =
      parseInt(sizeName, require(variables, sizeName, rankName), 1, kMaxWorldSize, "a world size");
  launch.rank = parseInt(rankName, *lookup(variables, rankName), 0, launch.size - 1,
                         fmt::format("a rank of {}={}", sizeName, launch.size));
  const auto local = lookup(variables, localName);
  launch.localRank = local ? parseInt(localName, *local, 0, launch.size - 1,
                                      fmt::format("a local rank of {}={}", sizeName, launch.size))
                           : launch.rank;
}

// Characters safe in a file name and a store prefix.
std::string sanitizeJobId(std::string_view id) {
  std::string out;
  for (char c : id) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.';
    out += safe ? c : '_';
  }
  return out;
}

// A port for a step's store when nothing names one: 20000 + (FNV-1a of "JOB.STEP") mod 12000,
// the same on every rank of the step and below Linux's ephemeral range (32768-60999), so
// concurrent steps rarely meet.
int slurmStorePort(std::string_view step) {
  std::uint32_t hash = 2166136261u;
  for (char c : step) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 16777619u;
  }
  return 20000 + static_cast<int>(hash % 12000);
}

Launch parseChorusLaunch(const EnvVariables& variables) {
  Launch launch;
  launch.source = "chorus launch";
  parseRanks(variables, "CHORUS_RANK", "CHORUS_WORLD_SIZE", "CHORUS_LOCAL_RANK", launch);
  const std::string store = require(variables, "CHORUS_STORE", "CHORUS_RANK");
  launch.jobId = lookup(variables, "CHORUS_JOB_ID").value_or(store);
  return launch;
}

Launch parseOpenMpi(const EnvVariables& variables) {
  Launch launch;
  launch.source = "Open MPI mpirun";
  parseRanks(variables, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
             "OMPI_COMM_WORLD_LOCAL_RANK", launch);
  auto job = lookup(variables, "CHORUS_JOB_ID");
  if (!job) job = lookup(variables, "OMPI_MCA_ess_base_jobid");
  if (!job) job = lookup(variables, "PMIX_NAMESPACE");
  if (!job) {
    throw OptionError(
        "Open MPI mpirun: neither OMPI_MCA_ess_base_jobid nor PMIX_NAMESPACE is set, so the "
        "ranks cannot agree on a job id; set CHORUS_JOB_ID to the same unique value on every "
        "rank");
  }
  launch.jobId = *job;
  return launch;
}

Launch parseTorchrun(const EnvVariables& variables) {
  Launch launch;
  launch.source = "torchrun";
  parseRanks(variables, "RANK", "WORLD_SIZE", "LOCAL_RANK", launch);
  const std::string address = require(variables, "MASTER_ADDR", "RANK");
  const std::string port = require(variables, "MASTER_PORT", "RANK");
  launch.masterAddress = address;
  if (auto storePort = lookup(variables, "CHORUS_MASTER_PORT")) {
    parseInt("MASTER_PORT", port, 1, 65535, "a TCP port");
    launch.storePort = parseInt("CHORUS_MASTER_PORT", *storePort, 1, 65535, "a TCP port");
  } else {
    launch.storePort = parseInt("MASTER_PORT", port, 1, 65534,
                                "a TCP port below 65535 (chorus's store listens on MASTER_PORT "
                                "+ 1; set CHORUS_MASTER_PORT to choose another)") +
                       1;
  }
  auto job = lookup(variables, "CHORUS_JOB_ID");
  launch.jobId = job ? *job
                     : fmt::format("torchrun-{}-{}-{}-{}", address, port,
                                   lookup(variables, "TORCHELASTIC_RUN_ID").value_or("none"),
                                   lookup(variables, "TORCHELASTIC_RESTART_COUNT").value_or("0"));
  return launch;
}

// srun: SLURM_PROCID/NTASKS/LOCALID of a job step (SLURM_STEP_ID tells a task of srun from
// the batch script, which has SLURM_PROCID=0 too). Rank 0 serves the store on the first host of
// the step's node list (srun places task 0 there unless told otherwise), or at MASTER_ADDR.
Launch parseSlurm(const EnvVariables& variables) {
  Launch launch;
  launch.source = "Slurm srun";
  const char* size = lookup(variables, "SLURM_NTASKS") ? "SLURM_NTASKS" : "SLURM_NPROCS";
  if (!lookup(variables, size))
    throw OptionError(
        "Slurm srun: SLURM_PROCID is set but neither SLURM_NTASKS nor SLURM_NPROCS is; srun sets "
        "them for every task of a step");
  parseRanks(variables, "SLURM_PROCID", size, "SLURM_LOCALID", launch);
  const std::string job = require(variables, "SLURM_JOB_ID", "SLURM_PROCID");
  const std::string step =
      lookup(variables, "SLURM_STEP_ID").value_or(lookup(variables, "SLURM_STEPID").value_or(""));
  if (auto pmix = lookup(variables, "PMIX_RANK");
      pmix && *pmix != *lookup(variables, "SLURM_PROCID"))
    throw OptionError(fmt::format(
        "Slurm srun: PMIX_RANK={} but SLURM_PROCID={}; something between srun and this process "
        "changed one of them; unset the stale one",
        *pmix, *lookup(variables, "SLURM_PROCID")));
  launch.jobId = lookup(variables, "CHORUS_JOB_ID").value_or(fmt::format("slurm-{}.{}", job, step));
  if (auto address = lookup(variables, "MASTER_ADDR")) {
    launch.masterAddress = *address;
  } else {
    const char* listName = lookup(variables, "SLURM_STEP_NODELIST")  ? "SLURM_STEP_NODELIST"
                           : lookup(variables, "SLURM_JOB_NODELIST") ? "SLURM_JOB_NODELIST"
                                                                     : "SLURM_NODELIST";
    launch.masterAddress = firstSlurmHost(require(variables, listName, "SLURM_PROCID"), listName);
    launch.serverHost = launch.masterAddress;
  }
  if (auto port = lookup(variables, "CHORUS_MASTER_PORT")) {
    launch.storePort = parseInt("CHORUS_MASTER_PORT", *port, 1, 65535, "a TCP port");
  } else if (auto master = lookup(variables, "MASTER_PORT")) {
    launch.storePort = parseInt("MASTER_PORT", *master, 1, 65534,
                                "a TCP port below 65535 (chorus's store listens on MASTER_PORT "
                                "+ 1; set CHORUS_MASTER_PORT to choose another)") +
                       1;
  } else {
    launch.storePort = slurmStorePort(job + "." + step);
  }
  return launch;
}

std::optional<Launch> parseLaunch(const EnvVariables& variables) {
  std::optional<Launch> launch;
  if (lookup(variables, "CHORUS_RANK"))
    launch = parseChorusLaunch(variables);
  else if (lookup(variables, "OMPI_COMM_WORLD_RANK"))
    launch = parseOpenMpi(variables);
  else if (lookup(variables, "RANK"))
    launch = parseTorchrun(variables);
  else if (lookup(variables, "SLURM_PROCID") &&
           (lookup(variables, "SLURM_STEP_ID") || lookup(variables, "SLURM_STEPID")))
    launch = parseSlurm(variables);
  if (launch) launch->jobId = sanitizeJobId(launch->jobId);
  return launch;
}

bool isIpv6(std::string_view host) {
  return host.find(':') != std::string_view::npos;
}

// A store from CHORUS_STORE: tcp://HOST:PORT (served here when `serve`) or file:///DIR.
std::shared_ptr<Store> storeFromSpec(const std::string& spec, bool serve,
                                     std::chrono::milliseconds timeout,
                                     const std::string& authToken) {
  const auto fail = [&](std::string_view problem) -> std::shared_ptr<Store> {
    throw OptionError(fmt::format(
        "CHORUS_STORE='{}' {}; use tcp://HOST:PORT or file:///ABSOLUTE/DIRECTORY", spec, problem));
  };
  constexpr std::string_view kTcp = "tcp://";
  constexpr std::string_view kFile = "file://";
  std::string_view text = spec;
  if (text.starts_with(kFile)) {
    text.remove_prefix(kFile.size());
    if (!text.starts_with('/')) return fail("does not name an absolute directory");
    return std::make_shared<FileStore>(std::string(text));
  }
  if (!text.starts_with(kTcp)) return fail("has an unknown scheme");
  text.remove_prefix(kTcp.size());
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return fail("has no HOST:PORT");
  std::string host(text.substr(0, colon));
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  const int port =
      parseInt("CHORUS_STORE port", std::string(text.substr(colon + 1)), 1, 65535, "a TCP port");
  return std::make_shared<TcpStore>(host, port, serve, timeout, authToken);
}

std::shared_ptr<Store> openStore(const EnvVariables& variables, const Launch& launch,
                                 std::chrono::milliseconds timeout, const std::string& authToken) {
  const auto spec = lookup(variables, "CHORUS_STORE");
  if (launch.source == "chorus launch") return storeFromSpec(*spec, false, timeout, authToken);
  if (spec) return storeFromSpec(*spec, launch.rank == 0, timeout, authToken);
  if (launch.source == "Open MPI mpirun") {
    if (auto local = lookup(variables, "OMPI_COMM_WORLD_LOCAL_SIZE")) {
      const int localSize =
          parseInt("OMPI_COMM_WORLD_LOCAL_SIZE", *local, 1, kMaxWorldSize, "a process count");
      if (localSize != launch.size) {
        throw OptionError(fmt::format(
            "Open MPI mpirun: the ranks run on several hosts (OMPI_COMM_WORLD_LOCAL_SIZE={} of "
            "OMPI_COMM_WORLD_SIZE={}), but the default store is a directory on one host; set "
            "CHORUS_STORE=tcp://HOST:PORT (rank 0 serves it on HOST) or file:///DIR on a shared "
            "file system",
            localSize, launch.size));
      }
    }
    const std::string tmp = lookup(variables, "TMPDIR").value_or("/tmp");
    return std::make_shared<FileStore>(fmt::format("{}/chorus-{}", tmp, launch.jobId));
  }
  // torchrun, srun: rank 0 serves on every interface; the others reach it at masterAddress.
  const std::string& address = launch.masterAddress;
  const int port = launch.storePort;
  const auto here = lookup(variables, "SLURMD_NODENAME");
  if (launch.rank == 0 && !launch.serverHost.empty() && here && *here != launch.serverHost)
    throw OptionError(fmt::format(
        "Slurm srun: rank 0 runs on {}, but the other ranks look for its store on {}, the first "
        "host of the step's node list; set MASTER_ADDR to rank 0's host (or CHORUS_STORE) on "
        "every rank, or launch with srun's default block distribution",
        *here, launch.serverHost));
  if (launch.rank == 0)
    return std::make_shared<TcpStore>(isIpv6(address) ? "::" : "0.0.0.0", port, true, timeout,
                                      authToken);
  return std::make_shared<TcpStore>(address, port, false, timeout, authToken);
}

}  // namespace

std::string firstSlurmHost(std::string_view list, const char* name) {
  const auto fail = [&](std::string_view problem) -> std::string {
    throw OptionError(
        fmt::format("{}='{}' {}; expected a Slurm host list such as "
                    "node[01-04,07],login1",
                    name, list, problem));
  };
  std::string host;
  std::size_t i = 0;
  while (i < list.size() && list[i] != ',') {
    if (list[i] == ']') return fail("closes a bracket it did not open");
    if (list[i] != '[') {
      host += list[i++];
      continue;
    }
    const std::size_t close = list.find(']', i);
    if (close == std::string_view::npos) return fail("opens a bracket it does not close");
    const std::string_view group = list.substr(i + 1, close - i - 1);
    const std::string_view first = group.substr(0, group.find_first_of(",-"));
    if (first.empty() || first.find_first_not_of("0123456789") != std::string_view::npos)
      return fail(
          fmt::format("has a bracket group '[{}]' that does not start with a number", group));
    host += first;
    i = close + 1;
  }
  if (host.empty()) return fail("names no host first");
  return host;
}

EnvVariables launcherVariables() {
  EnvVariables variables;
  for (const char* name : kReadVariables) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') variables[name] = value;
  }
  return variables;
}

std::optional<std::string> detectLauncher(const EnvVariables& variables) {
  const std::optional<Launch> launch = parseLaunch(variables);
  if (!launch) return std::nullopt;
  return launch->source;
}

std::optional<std::string> detectLauncher() {
  return detectLauncher(launcherVariables());
}

EnvBootstrap bootstrapFromVariables(const EnvVariables& variables,
                                    std::chrono::milliseconds timeout,
                                    const std::string& authToken) {
  const std::optional<Launch> launch = parseLaunch(variables);
  if (!launch) {
    throw OptionError(fmt::format(
        "no launcher environment found: looked for {}; start the program with 'chorus launch -n "
        "N PROGRAM', mpirun or torchrun, or create the communicator from a unique id",
        kLookedFor));
  }
  EnvBootstrap boot;
  boot.rank = launch->rank;
  boot.size = launch->size;
  boot.localRank = launch->localRank;
  boot.source = launch->source;
  boot.jobId = launch->jobId;
  boot.store = std::make_shared<PrefixStore>(openStore(variables, *launch, timeout, authToken),
                                             "job-" + boot.jobId);
  return boot;
}

EnvBootstrap bootstrapFromEnvironment(std::chrono::milliseconds timeout,
                                      const std::string& authToken) {
  return bootstrapFromVariables(launcherVariables(), timeout, authToken);
}

}  // namespace chorus::transport
