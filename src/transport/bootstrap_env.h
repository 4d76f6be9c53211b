// Bootstrap from a launcher's environment: who am I (rank, size, local rank) and which store
// do the ranks meet in. Understands `chorus launch` (CHORUS_*), Open MPI's mpirun
// (OMPI_COMM_WORLD_*) and torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "transport/store.h"

namespace chorus::transport {

struct EnvBootstrap {
  int rank = 0;
  int size = 0;
  int localRank = 0;
  std::shared_ptr<Store> store;  // already namespaced for this job
  std::string source;            // "chorus launch", "Open MPI mpirun", "torchrun"
  std::string jobId;             // the same on every rank of the job; unique per job
};

// Which launcher's variables are set, or nullopt when none is (no store is created).
// Throws OptionError naming the variable when one is set but malformed or inconsistent.
std::optional<std::string> detectLauncher();

// The bootstrap of this process. Creates/joins the store: CHORUS_STORE (tcp://host:port or
// file:///dir) for chorus launch; for mpirun a file store under $TMPDIR keyed by the job id
// unless CHORUS_STORE is set; for torchrun a TCP store hosted by rank 0 at MASTER_ADDR and
// CHORUS_MASTER_PORT (default MASTER_PORT + 1, because torchrun's agent already listens on
// MASTER_PORT). Throws OptionError listing the variables looked for when no launcher is found.
EnvBootstrap bootstrapFromEnvironment(std::chrono::milliseconds timeout);

}  // namespace chorus::transport
