// Creating communicators: initAll (threads of this process), initRank (a unique id's TCP store),
// and the unique id helpers. initFromEnvironment is in init_env.cpp.
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "api/comm_factory.h"
#include "support/env.h"
#include "support/error.h"
#include "transport/tcp_store.h"
#include "transport/unique_id.h"

namespace chorus {

namespace {

constexpr int kMaxThreadRanks = 4096;
constexpr int kMaxRanks = 1 << 20;

transport::UniqueId toTransport(const UniqueId& id) {
  transport::UniqueId t;
  t.bytes = id.bytes;
  return t;
}

void checkRank(int nranks, int rank, std::string_view caller) {
  if (nranks < 1 || nranks > kMaxRanks)
    throw OptionError(fmt::format("{}: nranks is {}; pass the number of ranks (1 to {})", caller,
                                  nranks, kMaxRanks));
  if (rank < 0 || rank >= nranks)
    throw OptionError(fmt::format("{}: rank {} is not in [0, {}); pass this process's rank", caller,
                                  rank, nranks));
}

}  // namespace

UniqueId getUniqueId() {
  // Deliberately never destroyed: ranks may still be connecting when static destructors run,
  // and a forked child must not try to stop a server thread it does not have.
  static std::mutex mutex;
  static transport::TcpStore* server = nullptr;
  static std::string host;
  std::lock_guard lock(mutex);
  if (server == nullptr) {
    host = envString("CHORUS_STORE_HOST").value_or("127.0.0.1");
    server = new transport::TcpStore(host, 0, /*isServer=*/true, std::chrono::seconds(30),
                                     envString("CHORUS_AUTH_TOKEN").value_or(""));
  }
  UniqueId id;
  id.bytes = transport::makeUniqueId(host, server->port()).bytes;
  return id;
}

std::string uniqueIdToHex(const UniqueId& id) {
  return transport::uniqueIdToHex(toTransport(id));
}

UniqueId uniqueIdFromHex(std::string_view hex) {
  UniqueId id;
  id.bytes = transport::uniqueIdFromHex(hex).bytes;
  return id;
}

std::vector<Communicator> Communicator::initAll(int nranks, const CommConfig& config) {
  if (nranks < 1 || nranks > kMaxThreadRanks)
    throw OptionError(
        fmt::format("initAll: nranks is {}; pass the number of ranks to run as threads (1 to {})",
                    nranks, kMaxThreadRanks));
  const auto resolved = api::resolveConfig(config, api::InitKind::allInProcess);
  return api::makeInProcessCommunicators(nranks, resolved, api::selectPlans(nranks, resolved));
}

Communicator Communicator::initRank(int nranks, const UniqueId& id, int rank,
                                    const CommConfig& config) {
  checkRank(nranks, rank, "initRank");
  const auto resolved = api::resolveConfig(config, api::InitKind::perProcess);
  const transport::UniqueId tid = toTransport(id);
  const transport::StoreAddress address = transport::addressOf(tid);  // OptionError if not an id
  const std::uint64_t nonce = transport::nonceOf(tid);
  auto plans = api::selectPlans(nranks, resolved);
  const int index = api::nextCommunicatorIndex(fmt::format("id {:016x} rank {}", nonce, rank));
  auto tcp = std::make_shared<transport::TcpStore>(address.host, address.port, /*isServer=*/false,
                                                   resolved.timeout, resolved.authToken);
  auto store =
      std::make_shared<transport::PrefixStore>(tcp, fmt::format("{:016x}/comm{}", nonce, index));
  return api::makeProcessCommunicator(store, fmt::format("chorus-{:016x}-{}", nonce, index), rank,
                                      nranks, resolved, std::move(plans));
}

}  // namespace chorus
