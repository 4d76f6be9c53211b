// Bootstrap from a launcher's environment: who am I (rank, size, local rank) and which store
// do the ranks meet in. Understands `chorus launch` (CHORUS_*), Open MPI's mpirun
// (OMPI_COMM_WORLD_*), torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and Slurm's srun
// (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_JOB_ID, SLURM_STEP_ID, node lists).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "transport/store.h"

namespace chorus::transport {

struct EnvBootstrap {
  int rank = 0;
  int size = 0;
  int localRank = 0;
  std::shared_ptr<Store> store;  // already namespaced for this job
  std::string source;            // "chorus launch", "Open MPI mpirun", "torchrun", "Slurm srun"
  std::string jobId;             // the same on every rank of the job; unique per job
};

// Environment variables by name (a snapshot of the process environment, or a test's own).
using EnvVariables = std::map<std::string, std::string>;

// The variables the bootstrap reads, from the process environment (unset or empty ones are
// left out).
EnvVariables launcherVariables();

// Which launcher's variables are set, or nullopt when none is (no store is created).
// Precedence: CHORUS_RANK (chorus launch), then OMPI_COMM_WORLD_RANK (mpirun), then RANK
// (torchrun), then SLURM_PROCID with SLURM_STEP_ID (a task of srun; a batch script alone has
// no step id and is no launch). Throws OptionError naming the variable when one is set but
// malformed or inconsistent (not a number, rank >= size, a required partner variable missing).
std::optional<std::string> detectLauncher();
std::optional<std::string> detectLauncher(const EnvVariables& variables);

// The bootstrap of this process. Creates/joins the store, then wraps it in a PrefixStore named
// after the job id:
//   chorus launch: CHORUS_STORE, tcp://HOST:PORT (served by the launcher) or file:///ABS/DIR;
//     job id CHORUS_JOB_ID.
//   mpirun: CHORUS_STORE if set (a tcp:// store is served by rank 0), else a file store in
//     ${TMPDIR:-/tmp}/chorus-<job id>, which needs every rank on one host; job id
//     OMPI_MCA_ess_base_jobid, else PMIX_NAMESPACE.
//   torchrun: a TCP store served by rank 0 on every interface at port CHORUS_MASTER_PORT
//     (default MASTER_PORT + 1, because torchrun's agent already listens on MASTER_PORT) and
//     reached at MASTER_ADDR; CHORUS_STORE overrides it like for mpirun.
//   srun: like torchrun, reached at MASTER_ADDR if set, else at the first host of
//     SLURM_STEP_NODELIST (else SLURM_JOB_NODELIST, SLURM_NODELIST); port CHORUS_MASTER_PORT,
//     else MASTER_PORT + 1, else 20000 + a hash of job and step id mod 12000. Rank 0 refuses
//     to serve when SLURMD_NODENAME says it runs elsewhere than that first host. Job id
//     slurm-JOB.STEP. A PMIX_RANK that differs from SLURM_PROCID is an OptionError.
// CHORUS_JOB_ID, when set, overrides the job id for every launcher. `timeout` bounds the
// connection to a TCP store. Throws OptionError listing the variables looked for when no
// launcher is found, CommError when the store cannot be reached or served. A TCP store served
// here requires `authToken` of its clients, and a TCP store joined here is shown it
// (CHORUS_AUTH_TOKEN; empty: none); a file store has no token.
// The first host of a Slurm host list ("node[07-09,12],gpu1" -> "node07"): its first entry
// (commas inside brackets do not end one), each bracket group replaced by its first number or
// range's lower end as written (zero padding kept). Throws OptionError naming `name` (the
// variable it came from) when the list is malformed.
std::string firstSlurmHost(std::string_view list, const char* name);

EnvBootstrap bootstrapFromEnvironment(std::chrono::milliseconds timeout,
                                      const std::string& authToken = {});
EnvBootstrap bootstrapFromVariables(const EnvVariables& variables,
                                    std::chrono::milliseconds timeout,
                                    const std::string& authToken = {});

}  // namespace chorus::transport
