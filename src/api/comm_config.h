// Communicator options after resolution (api layer): CommConfig fields, else the CHORUS_*
// environment variables, else the documented defaults, each checked with an OptionError that
// names the field or variable and the accepted range.
#pragma once

#include <chrono>
#include <string>

#include "chorus/chorus.h"
#include "runtime/executor.h"
#include "transport/fifo.h"
#include "transport/registry.h"

namespace chorus::api {

inline constexpr int kMinSlots = 1;
inline constexpr int kMaxSlots = 1024;
inline constexpr int kMaxThreads = 64;
inline constexpr std::size_t kMinSlotBytes = std::size_t{4} << 10;
inline constexpr std::size_t kMaxSlotBytes = std::size_t{1} << 30;

struct ResolvedConfig {
  std::chrono::milliseconds timeout{300'000};
  // The registry's entry (transport/registry.h); by default the one for threads of one process
  // with initAll, the one that may span hosts for ranks in separate processes.
  const transport::TransportEntry* transport =
      &transport::defaultTransport(transport::TransportReach::oneProcess);
  std::string algo;        // CHORUS_ALGO syntax; empty: no overrides
  std::string algoDir;     // empty: none
  std::string tuningFile;  // empty: the shipped table only; "off": no tuning tables
  transport::FifoOptions fifo;
  int threads = 1;  // executor threads per rank (runtime::ExecutorConfig::threads)
  // CHORUS_STREAMING_BYTES: runtime::ExecutorConfig::streamingWorkingSetBytes (0: never stream).
  std::size_t streamingWorkingSetBytes = 0;
  std::string authToken;     // CHORUS_AUTH_TOKEN: tcp peers must present it
  std::string socketIfname;  // CHORUS_SOCKET_IFNAME: the tcp transport's interface filter
  int socketsPerPeer = 1;    // CHORUS_SOCKETS_PER_PEER: tcp connections per pair of ranks
  // CHORUS_REMOTE_TRANSPORT: how the auto transport reaches other hosts (auto, tcp or ucx).
  transport::RemoteTransport remoteTransport = transport::RemoteTransport::automatic;
  // The runtime::Executor each rank runs its calls on (runtime/executor.h): CommConfig.executor,
  // else CHORUS_EXECUTOR, else "cpu".
  std::string executor{runtime::kDefaultExecutor};
  bool ranksAreThreads = false;  // initAll: runtime::ExecutorConfig::ranksAreThreads
};

// How the communicator is being created: initAll (ranks are threads of this process) or
// initRank / initFromEnvironment (ranks are processes).
enum class InitKind { allInProcess, perProcess };

// Adds the executors of the layers above the runtime to its table: "device" and, where chorus
// is built with CUDA, "cuda". Thread-safe; resolveConfig calls it, as does the CLI.
void registerExecutors();

// Throws OptionError for a bad field or variable (and for a transport the kind of creation
// cannot use: one for threads of one process outside initAll, one that chooses per peer with
// initAll). Reads the environment; thread-safe.
ResolvedConfig resolveConfig(const CommConfig& config, InitKind kind);

}  // namespace chorus::api
