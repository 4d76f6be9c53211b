// Bootstrap from a launcher's environment: detection and precedence of chorus launch, Open MPI,
// torchrun and Slurm srun variables, malformed values named in OptionErrors, and real rendezvous of
// several ranks (threads, each with its own variable map) through file and TCP stores.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/error.h"
#include "temp_dir.h"
#include "transport/bootstrap_env.h"
#include "transport/file_store.h"
#include "transport/tcp_store.h"

namespace chorus::transport {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

constexpr milliseconds kTimeout{10'000};

std::string errorOf(const std::function<void()>& action) {
  try {
    action();
  } catch (const OptionError& error) {
    return error.what();
  }
  return "(no OptionError)";
}

std::string detectError(const EnvVariables& variables) {
  return errorOf([&] { detectLauncher(variables); });
}

// A fresh directory, removed at the end of the test.
using chorus::testing_support::TempDir;

// A TCP port that was free a moment ago (bound to 0, read back, closed).
int freePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  socklen_t length = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

EnvVariables chorusLaunch(int rank, int size, const std::string& store) {
  return {{"CHORUS_RANK", std::to_string(rank)},
          {"CHORUS_WORLD_SIZE", std::to_string(size)},
          {"CHORUS_LOCAL_RANK", std::to_string(rank)},
          {"CHORUS_STORE", store},
          {"CHORUS_JOB_ID", "job42"}};
}

EnvVariables openMpi(int rank, int size) {
  return {{"OMPI_COMM_WORLD_RANK", std::to_string(rank)},
          {"OMPI_COMM_WORLD_SIZE", std::to_string(size)},
          {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(rank)},
          {"OMPI_COMM_WORLD_LOCAL_SIZE", std::to_string(size)},
          {"OMPI_MCA_ess_base_jobid", "920780801"},
          {"PMIX_NAMESPACE", "920780801"}};
}

EnvVariables torchrun(int rank, int size, int masterPort) {
  return {{"RANK", std::to_string(rank)},
          {"WORLD_SIZE", std::to_string(size)},
          {"LOCAL_RANK", std::to_string(rank)},
          {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", std::to_string(masterPort)}};
}

// A task of `srun -n size` in job 4242, step 0, as srun sets it (without MPI plugin); ranks 0
// and 1 run on the first host of the node list, written PREFIX[1-...] (others elsewhere).
EnvVariables srun(int rank, int size, const std::string& nodeList = "127.0.0.[1-2]") {
  return {{"SLURM_PROCID", std::to_string(rank)},
          {"SLURM_NTASKS", std::to_string(size)},
          {"SLURM_NPROCS", std::to_string(size)},
          {"SLURM_LOCALID", std::to_string(rank % 2)},
          {"SLURM_JOB_ID", "4242"},
          {"SLURM_STEP_ID", "0"},
          {"SLURM_JOB_NODELIST", "login[1-9]"},
          {"SLURM_STEP_NODELIST", nodeList},
          {"SLURMD_NODENAME",
           rank < 2 ? nodeList.substr(0, nodeList.find_first_of(",[")) + "1" : "elsewhere"}};
}

EnvVariables merged(EnvVariables a, const EnvVariables& b) {
  for (const auto& [key, value] : b)
    a[key] = value;
  return a;
}

// Bootstraps `size` ranks as threads from per-rank variables; every rank publishes its rank
// and reads everyone else's through the store. Returns the bootstraps (rank order).
std::vector<EnvBootstrap> rendezvous(int size, const std::function<EnvVariables(int)>& variables) {
  std::vector<EnvBootstrap> boots(size);
  std::vector<std::exception_ptr> errors(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        boots[r] = bootstrapFromVariables(variables(r), kTimeout);
        boots[r].store->set(fmt::format("hello/{}", r), toBytes(std::to_string(boots[r].rank)));
        for (int peer = 0; peer < size; ++peer) {
          const std::string got =
              toString(boots[r].store->get(fmt::format("hello/{}", peer), kTimeout));
          if (got != std::to_string(peer))
            throw CommError("rank " + std::to_string(r) + " read " + got);
        }
        boots[r].store->add("done", 1);
        // Keep rank 0 (which may serve the store) alive until every rank has read.
        while (boots[r].store->get("done", kTimeout) != toBytes(std::to_string(size)))
          std::this_thread::sleep_for(milliseconds(2));
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& thread : threads)
    thread.join();
  for (auto& error : errors)
    if (error) std::rethrow_exception(error);
  return boots;
}

// ---- detection ------------------------------------------------------------------------------

TEST(BootstrapEnvTest, DetectsEachLauncherAndNone) {
  EXPECT_EQ(detectLauncher(EnvVariables{}), std::nullopt);
  EXPECT_EQ(detectLauncher(EnvVariables{{"PATH", "/bin"}, {"CHORUS_RANK", ""}}), std::nullopt);
  EXPECT_EQ(detectLauncher(chorusLaunch(0, 2, "file:///tmp/x")), "chorus launch");
  EXPECT_EQ(detectLauncher(openMpi(1, 2)), "Open MPI mpirun");
  EXPECT_EQ(detectLauncher(torchrun(1, 2, 29500)), "torchrun");
  EXPECT_EQ(detectLauncher(srun(1, 2)), "Slurm srun");
  // A batch script has SLURM_PROCID=0 and SLURM_NTASKS but is no task of a step.
  EnvVariables batch = srun(0, 4);
  batch.erase("SLURM_STEP_ID");
  EXPECT_EQ(detectLauncher(batch), std::nullopt);
  batch["SLURM_STEPID"] = "3";  // the older name
  EXPECT_EQ(detectLauncher(batch), "Slurm srun");
  // torchrun (or mpirun) started by srun: theirs are the ranks.
  EXPECT_EQ(detectLauncher(merged(srun(0, 2), torchrun(1, 4, 29500))), "torchrun");
  EXPECT_EQ(detectLauncher(merged(srun(0, 2), openMpi(1, 4))), "Open MPI mpirun");
}

TEST(BootstrapEnvTest, FirstHostOfASlurmHostList) {
  EXPECT_EQ(firstSlurmHost("node07", "L"), "node07");
  EXPECT_EQ(firstSlurmHost("node[07-09,12],gpu1", "L"), "node07");
  EXPECT_EQ(firstSlurmHost("gpu1,node[1-2]", "L"), "gpu1");
  EXPECT_EQ(firstSlurmHost("node[12,3-4]", "L"), "node12");
  EXPECT_EQ(firstSlurmHost("rack[2-3]-n[001-004]x", "L"), "rack2-n001x");
  EXPECT_EQ(firstSlurmHost("10.0.0.[5-8]", "L"), "10.0.0.5");
  EXPECT_THAT(errorOf([] { firstSlurmHost("node[1-2", "SLURM_STEP_NODELIST"); }),
              HasSubstr("SLURM_STEP_NODELIST='node[1-2' opens a bracket it does not close"));
  EXPECT_THAT(errorOf([] { firstSlurmHost("node[a-b]", "L"); }),
              HasSubstr("bracket group '[a-b]' that does not start with a number"));
  EXPECT_THAT(errorOf([] { firstSlurmHost("node1]", "L"); }), HasSubstr("closes a bracket"));
  EXPECT_THAT(errorOf([] { firstSlurmHost(",node1", "L"); }), HasSubstr("names no host first"));
}

TEST(BootstrapEnvTest, SrunStepRendezvousAtTheFirstHostOfItsNodeList) {
  const int storePort = freePort();
  const auto boots = rendezvous(3, [&](int r) {
    EnvVariables variables = srun(r, 3);
    variables["CHORUS_MASTER_PORT"] = std::to_string(storePort);
    return variables;
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(boots[r].source, "Slurm srun");
    EXPECT_EQ(boots[r].rank, r);
    EXPECT_EQ(boots[r].size, 3);
    EXPECT_EQ(boots[r].localRank, r % 2);
    EXPECT_EQ(boots[r].jobId, "slurm-4242.0");
  }
  // MASTER_PORT (a training script's own store) moves chorus's to the port after it.
  const int besidePort = freePort();
  const auto beside = rendezvous(2, [&](int r) {
    EnvVariables variables = srun(r, 2, "127.0.0.1,node9");
    variables["SLURMD_NODENAME"] = "127.0.0.1";
    variables["SLURM_STEP_ID"] = "1";
    variables["MASTER_PORT"] = std::to_string(besidePort - 1);
    return variables;
  });
  EXPECT_EQ(beside[1].jobId, "slurm-4242.1");
}

TEST(BootstrapEnvTest, SrunMistakesAreOptionErrors) {
  auto bootError = [](const EnvVariables& variables) {
    return errorOf([&] { bootstrapFromVariables(variables, milliseconds(200)); });
  };
  // Rank 0 placed elsewhere than the first host (srun -m arbitrary, or a node list edited).
  EnvVariables moved = srun(0, 2, "node[1-2]");
  moved["SLURMD_NODENAME"] = "node2";
  EXPECT_THAT(bootError(moved),
              HasSubstr("rank 0 runs on node2, but the other ranks look for its store on node1"));
  EnvVariables pmix = srun(1, 2);
  pmix["PMIX_RANK"] = "0";
  EXPECT_THAT(detectError(pmix), HasSubstr("PMIX_RANK=0 but SLURM_PROCID=1"));
  EnvVariables noSize = srun(1, 2);
  noSize.erase("SLURM_NTASKS");
  noSize.erase("SLURM_NPROCS");
  EXPECT_THAT(detectError(noSize), HasSubstr("neither SLURM_NTASKS nor SLURM_NPROCS"));
  EXPECT_THAT(detectError(merged(srun(0, 2), {{"SLURM_PROCID", "2"}})),
              HasSubstr("SLURM_PROCID='2' is not a rank of SLURM_NTASKS=2"));
  EnvVariables noJob = srun(1, 2);
  noJob.erase("SLURM_JOB_ID");
  EXPECT_THAT(detectError(noJob), HasSubstr("SLURM_PROCID is set but SLURM_JOB_ID is not"));
  EXPECT_THAT(detectError(srun(1, 2, "n[x]")), HasSubstr("SLURM_STEP_NODELIST='n[x]'"));
}

TEST(BootstrapEnvTest, ChorusVariablesWinThenOpenMpiThenTorchrun) {
  const EnvVariables all =
      merged(merged(torchrun(1, 2, 29500), openMpi(0, 4)), chorusLaunch(2, 3, "file:///tmp/x"));
  EXPECT_EQ(detectLauncher(all), "chorus launch");
  EXPECT_EQ(detectLauncher(merged(torchrun(1, 2, 29500), openMpi(0, 4))), "Open MPI mpirun");
  TempDir dir;
  const EnvBootstrap boot =
      bootstrapFromVariables(merged(merged(torchrun(1, 2, 29500), openMpi(0, 4)),
                                    chorusLaunch(2, 3, "file://" + dir.path())),
                             kTimeout);
  EXPECT_EQ(boot.source, "chorus launch");
  EXPECT_EQ(boot.rank, 2);
  EXPECT_EQ(boot.size, 3);
  EXPECT_EQ(boot.jobId, "job42");
}

TEST(BootstrapEnvTest, MalformedValuesNameTheVariable) {
  auto with = [](EnvVariables variables, const std::string& key, const std::string& value) {
    variables[key] = value;
    return variables;
  };
  const EnvVariables chorus = chorusLaunch(0, 4, "file:///tmp/x");
  EXPECT_THAT(detectError(with(chorus, "CHORUS_RANK", "abc")), HasSubstr("CHORUS_RANK='abc'"));
  EXPECT_THAT(detectError(with(chorus, "CHORUS_RANK", "4")),
              HasSubstr("CHORUS_RANK='4' is not a rank of CHORUS_WORLD_SIZE=4"));
  EXPECT_THAT(detectError(with(chorus, "CHORUS_RANK", "-1")), HasSubstr("CHORUS_RANK='-1'"));
  EXPECT_THAT(detectError(with(chorus, "CHORUS_WORLD_SIZE", "0")),
              HasSubstr("CHORUS_WORLD_SIZE='0' is not a world size"));
  EXPECT_THAT(detectError(with(chorus, "CHORUS_WORLD_SIZE", "4x")),
              HasSubstr("CHORUS_WORLD_SIZE='4x'"));
  EXPECT_THAT(detectError(with(chorus, "CHORUS_LOCAL_RANK", "9")),
              HasSubstr("CHORUS_LOCAL_RANK='9'"));
  EXPECT_THAT(detectError(with(chorus, "CHORUS_WORLD_SIZE", "")),
              HasSubstr("CHORUS_RANK is set but CHORUS_WORLD_SIZE is not"));
  EXPECT_THAT(detectError(with(chorus, "CHORUS_STORE", "")),
              HasSubstr("CHORUS_RANK is set but CHORUS_STORE is not"));
  EXPECT_THAT(detectError(with(openMpi(0, 2), "OMPI_COMM_WORLD_SIZE", "two")),
              HasSubstr("OMPI_COMM_WORLD_SIZE='two'"));
  EXPECT_THAT(detectError(with(torchrun(0, 2, 29500), "RANK", "2")),
              HasSubstr("RANK='2' is not a rank of WORLD_SIZE=2"));
  EXPECT_THAT(detectError(with(torchrun(0, 2, 29500), "MASTER_PORT", "70000")),
              HasSubstr("MASTER_PORT='70000'"));
  EXPECT_THAT(detectError(with(torchrun(0, 2, 29500), "MASTER_PORT", "65535")),
              HasSubstr("CHORUS_MASTER_PORT"));
  EXPECT_THAT(detectError(with(torchrun(0, 2, 29500), "MASTER_ADDR", "")),
              HasSubstr("RANK is set but MASTER_ADDR is not"));
  EXPECT_THAT(detectError(with(torchrun(0, 2, 29500), "CHORUS_MASTER_PORT", "0")),
              HasSubstr("CHORUS_MASTER_PORT='0'"));
}

TEST(BootstrapEnvTest, BadStoresAndMissingLaunchersAreOptionErrors) {
  auto bootError = [](const EnvVariables& variables) {
    return errorOf([&] { bootstrapFromVariables(variables, milliseconds(200)); });
  };
  EXPECT_THAT(bootError(chorusLaunch(0, 1, "redis://x:1")),
              HasSubstr("CHORUS_STORE='redis://x:1'"));
  EXPECT_THAT(bootError(chorusLaunch(0, 1, "file://relative/dir")),
              HasSubstr("absolute directory"));
  EXPECT_THAT(bootError(chorusLaunch(0, 1, "tcp://127.0.0.1")), HasSubstr("HOST:PORT"));
  EXPECT_THAT(bootError(chorusLaunch(0, 1, "tcp://127.0.0.1:99999")), HasSubstr("99999"));
  const std::string none = bootError({{"HOME", "/root"}});
  EXPECT_THAT(none, HasSubstr("no launcher environment found"));
  EXPECT_THAT(none, HasSubstr("CHORUS_RANK"));
  EXPECT_THAT(none, HasSubstr("OMPI_COMM_WORLD_RANK"));
  EXPECT_THAT(none, HasSubstr("MASTER_ADDR"));
  EXPECT_THAT(none, HasSubstr("SLURM_PROCID"));
  EnvVariables noJob = openMpi(0, 1);
  noJob.erase("OMPI_MCA_ess_base_jobid");
  noJob.erase("PMIX_NAMESPACE");
  EXPECT_THAT(bootError(noJob), HasSubstr("set CHORUS_JOB_ID"));
  EnvVariables multiHost = openMpi(0, 4);
  multiHost["OMPI_COMM_WORLD_LOCAL_SIZE"] = "2";
  const std::string hosts = bootError(multiHost);
  EXPECT_THAT(hosts, HasSubstr("several hosts"));
  EXPECT_THAT(hosts, HasSubstr("CHORUS_STORE=tcp://"));
}

// ---- rendezvous -----------------------------------------------------------------------------

TEST(BootstrapEnvTest, ChorusLaunchFileStoreRendezvousOfThreeRanks) {
  TempDir dir;
  const auto boots =
      rendezvous(3, [&](int r) { return chorusLaunch(r, 3, "file://" + dir.path()); });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(boots[r].rank, r);
    EXPECT_EQ(boots[r].localRank, r);
    EXPECT_EQ(boots[r].size, 3);
    EXPECT_EQ(boots[r].source, "chorus launch");
  }
  // The keys live under the job's namespace: another job id sees none of them.
  FileStore raw(dir.path());
  EXPECT_TRUE(raw.check({"job-job42/hello/0"}));
  EXPECT_FALSE(raw.check({"hello/0"}));
  EnvVariables other = chorusLaunch(0, 3, "file://" + dir.path());
  other["CHORUS_JOB_ID"] = "job43";
  EXPECT_FALSE(bootstrapFromVariables(other, kTimeout).store->check({"hello/0"}));
}

TEST(BootstrapEnvTest, ChorusLaunchTcpStoreServedByTheLauncher) {
  TcpStore server("127.0.0.1", 0, true, kTimeout);
  const std::string spec = fmt::format("tcp://127.0.0.1:{}", server.port());
  const auto boots = rendezvous(3, [&](int r) { return chorusLaunch(r, 3, spec); });
  EXPECT_EQ(boots[2].rank, 2);
  EXPECT_TRUE(server.check({"job-job42/hello/1"}));
}

TEST(BootstrapEnvTest, OpenMpiDefaultsToAFileStoreInTmpdirNamedByJob) {
  TempDir tmp;
  const auto boots = rendezvous(2, [&](int r) {
    EnvVariables variables = openMpi(r, 2);
    variables["PMIX_NAMESPACE"] = "prterun-host-77@1";
    variables.erase("OMPI_MCA_ess_base_jobid");
    variables["TMPDIR"] = tmp.path();
    return variables;
  });
  EXPECT_EQ(boots[1].source, "Open MPI mpirun");
  EXPECT_EQ(boots[1].jobId, "prterun-host-77_1");
  EXPECT_TRUE(fs::is_directory(tmp.path() + "/chorus-prterun-host-77_1"));
}

TEST(BootstrapEnvTest, TorchrunRankZeroServesOnMasterPortPlusOne) {
  const int storePort = freePort();
  const auto boots = rendezvous(3, [&](int r) { return torchrun(r, 3, storePort - 1); });
  EXPECT_EQ(boots[0].source, "torchrun");
  EXPECT_EQ(boots[0].jobId, fmt::format("torchrun-127.0.0.1-{}-none-0", storePort - 1));
}

TEST(BootstrapEnvTest, TorchrunHonoursChorusMasterPort) {
  const int storePort = freePort();
  const auto boots = rendezvous(2, [&](int r) {
    EnvVariables variables = torchrun(r, 2, 65535);
    variables["CHORUS_MASTER_PORT"] = std::to_string(storePort);
    return variables;
  });
  EXPECT_EQ(boots[1].rank, 1);
}

TEST(BootstrapEnvTest, TorchrunStoreServedWithATokenRefusesARankWithAnother) {
  // Rank 0 serves the store requiring its token; rank 1 presents another and is refused with a
  // message naming the variable, while a rank with the right token joins.
  const int storePort = freePort();
  const EnvBootstrap server = bootstrapFromVariables(torchrun(0, 3, storePort - 1), kTimeout, "a");
  const EnvBootstrap good = bootstrapFromVariables(torchrun(2, 3, storePort - 1), kTimeout, "a");
  good.store->set("k", toBytes("v"));
  EXPECT_EQ(toString(server.store->get("k", kTimeout)), "v");
  std::string message;
  try {
    bootstrapFromVariables(torchrun(1, 3, storePort - 1), kTimeout, "b");
  } catch (const CommError& error) {
    message = error.what();
  }
  EXPECT_THAT(message, HasSubstr("wrong or missing CHORUS_AUTH_TOKEN"));
}

// ---- the process environment ------------------------------------------------------------------

// Sets variables for one test and restores the previous values afterwards.
class ScopedEnv {
 public:
  explicit ScopedEnv(const EnvVariables& variables) {
    for (const auto& [name, value] : variables) {
      const char* old = std::getenv(name.c_str());
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      ::setenv(name.c_str(), value.c_str(), 1);
    }
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) {
      if (value)
        ::setenv(name.c_str(), value->c_str(), 1);
      else
        ::unsetenv(name.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST(BootstrapEnvTest, ReadsTheProcessEnvironment) {
  TempDir dir;
  ScopedEnv env(chorusLaunch(0, 1, "file://" + dir.path()));
  EXPECT_EQ(launcherVariables().at("CHORUS_STORE"), "file://" + dir.path());
  EXPECT_EQ(detectLauncher(), "chorus launch");
  const EnvBootstrap boot = bootstrapFromEnvironment(kTimeout);
  EXPECT_EQ(boot.size, 1);
  EXPECT_EQ(boot.rank, 0);
  boot.store->set("k", toBytes("v"));
  EXPECT_EQ(toString(boot.store->get("k", kTimeout)), "v");
}

}  // namespace
}  // namespace chorus::transport
