// Communicator::initFromEnvironment: rank, size and rendezvous from a launcher's variables
// (transport/bootstrap_env.h), then the configured transport (by default shm within a host and
// tcp across hosts).
#include <fmt/format.h>

#include "api/call_tag.h"
#include "api/comm_factory.h"
#include "support/log.h"
#include "transport/bootstrap_env.h"

namespace chorus {

Communicator Communicator::initFromEnvironment(const CommConfig& config) {
  const auto resolved = api::resolveConfig(config, api::InitKind::perProcess);
  transport::EnvBootstrap boot =
      transport::bootstrapFromEnvironment(resolved.timeout, resolved.authToken);
  if (logEnabled(LogLevel::info))
    logLine(LogLevel::info,
            fmt::format("launched by {} (job {}): rank {} of {}, local rank {}", boot.source,
                        boot.jobId, boot.rank, boot.size, boot.localRank));
  auto plans = api::selectPlans(boot.size, resolved);
  const int index =
      api::nextCommunicatorIndex(fmt::format("job {} rank {}", boot.jobId, boot.rank));
  // Segment names allow only [A-Za-z0-9._-]; the job id may hold anything, so hash it.
  const std::uint64_t job = api::CallTag().add(boot.jobId).value();
  auto store = std::make_shared<transport::PrefixStore>(boot.store, fmt::format("comm{}", index));
  return api::makeProcessCommunicator(store, fmt::format("chorus-{:016x}-{}", job, index),
                                      boot.rank, boot.size, resolved, std::move(plans));
}

}  // namespace chorus
