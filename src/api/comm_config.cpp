#include "api/comm_config.h"

#include <fmt/format.h>

#include "device/host_executor.h"
#ifdef CHORUS_HAVE_CUDA
#include "cuda/cuda_executor.h"
#endif
#include "runtime/stream_copy.h"
#include "support/env.h"
#include "support/error.h"
#include "support/size.h"
#include "transport/tcp/tcp_transport.h"

namespace chorus::api {

namespace {

std::chrono::milliseconds resolveTimeout(const CommConfig& config) {
  if (config.timeout) {
    if (config.timeout->count() <= 0)
      throw OptionError(fmt::format(
          "CommConfig.timeout is {} ms; give a positive deadline (e.g. 30s) or leave it empty to "
          "use CHORUS_TIMEOUT (default 300 s)",
          config.timeout->count()));
    return *config.timeout;
  }
  return envDuration("CHORUS_TIMEOUT").value_or(std::chrono::milliseconds(300'000));
}

const transport::TransportEntry* resolveTransport(const CommConfig& config, InitKind kind) {
  std::string name = config.transport;
  std::string what = "CommConfig.transport";
  if (name.empty()) {
    name = envString("CHORUS_TRANSPORT").value_or("");
    what = "CHORUS_TRANSPORT";
  }
  if (name.empty())
    return &transport::defaultTransport(kind == InitKind::allInProcess
                                            ? transport::TransportReach::oneProcess
                                            : transport::TransportReach::anyHosts);
  const transport::TransportEntry& entry =
      transport::requireTransport(name, what, ", or leave it empty for the default");
  if (kind == InitKind::allInProcess && !entry.runsThreads())
    throw OptionError(
        fmt::format("{}='{}' chooses {}; that is for ranks in separate processes, so with "
                    "Communicator::initAll use {}",
                    what, name, entry.description,
                    transport::transportNames(
                        [](const transport::TransportEntry& e) { return e.runsThreads(); }, "'")));
  if (kind == InitKind::perProcess && !entry.runsProcesses())
    throw OptionError(fmt::format(
        "{}='{}' only works with Communicator::initAll ({}); ranks in separate processes use {} "
        "(or leave {} empty)",
        what, name, entry.description,
        transport::transportNames(
            [](const transport::TransportEntry& e) { return e.runsProcesses(); }, "'"),
        what));
  return &entry;
}

int resolveSlots(const CommConfig& config) {
  if (config.slots) {
    if (*config.slots < kMinSlots || *config.slots > kMaxSlots)
      throw OptionError(fmt::format(
          "CommConfig.slots is {}; a FIFO needs {} to {} slots (default 8, CHORUS_SLOTS)",
          *config.slots, kMinSlots, kMaxSlots));
    return *config.slots;
  }
  return static_cast<int>(envInt("CHORUS_SLOTS", kMinSlots, kMaxSlots).value_or(8));
}

std::size_t resolveSlotBytes(const CommConfig& config) {
  std::size_t bytes = std::size_t{256} << 10;
  std::string what;
  if (config.slotBytes) {
    bytes = *config.slotBytes;
    what = "CommConfig.slotBytes";
  } else if (auto env = envSize("CHORUS_SLOT_BYTES")) {
    bytes = static_cast<std::size_t>(*env);
    what = "CHORUS_SLOT_BYTES";
  }
  if (bytes < kMinSlotBytes || bytes > kMaxSlotBytes)
    throw OptionError(fmt::format("{} is {} bytes; a FIFO slot holds {} to {} (default 256K)", what,
                                  bytes, formatSize(kMinSlotBytes), formatSize(kMaxSlotBytes)));
  return bytes;
}

int resolveThreads(const CommConfig& config) {
  if (config.threads) {
    if (*config.threads < 1 || *config.threads > kMaxThreads)
      throw OptionError(
          fmt::format("CommConfig.threads is {}; use 1 to {} executor threads per rank (default 1, "
                      "CHORUS_THREADS)",
                      *config.threads, kMaxThreads));
    return *config.threads;
  }
  return static_cast<int>(envInt("CHORUS_THREADS", 1, kMaxThreads).value_or(1));
}

std::string resolveExecutor(const CommConfig& config) {
  std::string name = config.executor;
  std::string what = "CommConfig.executor";
  if (name.empty()) {
    name = envString("CHORUS_EXECUTOR").value_or("");
    what = "CHORUS_EXECUTOR";
  }
  if (name.empty()) return std::string(runtime::kDefaultExecutor);
  registerExecutors();
  return runtime::requireExecutor(name, what).name;
}

// A byte threshold from `variable` (0 switches the feature off), else `fallback`.
std::size_t resolveThreshold(const char* variable, std::size_t fallback) {
  if (auto env = envSize(variable)) return static_cast<std::size_t>(*env);
  return fallback;
}

}  // namespace

void registerExecutors() {
  device::registerDeviceExecutors();
#ifdef CHORUS_HAVE_CUDA
  cuda::registerCudaExecutors();
#endif
}

ResolvedConfig resolveConfig(const CommConfig& config, InitKind kind) {
  ResolvedConfig resolved;
  resolved.timeout = resolveTimeout(config);
  resolved.transport = resolveTransport(config, kind);
  resolved.algo = config.algo ? *config.algo : envString("CHORUS_ALGO").value_or("");
  resolved.algoDir = config.algoDir ? *config.algoDir : envString("CHORUS_ALGO_DIR").value_or("");
  resolved.tuningFile =
      config.tuningFile ? *config.tuningFile : envString("CHORUS_TUNING_FILE").value_or("");
  resolved.fifo.slots = resolveSlots(config);
  resolved.fifo.slotBytes = resolveSlotBytes(config);
  resolved.fifo.singleCopyBytes =
      resolveThreshold("CHORUS_SINGLE_COPY_BYTES", transport::FifoOptions{}.singleCopyBytes);
  resolved.streamingWorkingSetBytes =
      resolveThreshold("CHORUS_STREAMING_BYTES", runtime::defaultStreamingWorkingSetBytes());
  resolved.threads = resolveThreads(config);
  resolved.executor = resolveExecutor(config);
  resolved.ranksAreThreads = kind == InitKind::allInProcess;
  resolved.authToken = envString("CHORUS_AUTH_TOKEN").value_or("");
  resolved.socketIfname = envString("CHORUS_SOCKET_IFNAME").value_or("");
  resolved.socketsPerPeer = static_cast<int>(
      envInt("CHORUS_SOCKETS_PER_PEER", 1, transport::kMaxSocketsPerPeer).value_or(1));
  if (const auto remote = envString("CHORUS_REMOTE_TRANSPORT"))
    resolved.remoteTransport = transport::parseRemoteTransport(*remote, "CHORUS_REMOTE_TRANSPORT");
  return resolved;
}

}  // namespace chorus::api
