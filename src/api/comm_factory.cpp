#include "api/comm_factory.h"

#include <algorithm>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "api/communicator_impl.h"
#include "runtime/executor.h"
#include "selection/plan_selection.h"
#include "support/error.h"
#include "transport/in_memory_store.h"
#include "transport/registry.h"

namespace chorus::api {

namespace {

transport::TransportOptions transportOptions(const std::string& groupName,
                                             const ResolvedConfig& config) {
  transport::TransportOptions options;
  options.fifo = config.fifo;
  options.groupName = groupName;
  options.timeout = config.timeout;
  options.authToken = config.authToken;
  options.interfaceFilter = config.socketIfname;
  options.socketsPerPeer = config.socketsPerPeer;
  options.remoteTransport = config.remoteTransport;
  return options;
}

runtime::ExecutorConfig executorConfig(const ResolvedConfig& config) {
  runtime::ExecutorConfig executor;
  executor.threads = config.threads;
  executor.streamingWorkingSetBytes = config.streamingWorkingSetBytes;
  executor.ranksAreThreads = config.ranksAreThreads;
  return executor;
}

// Rank `rank`'s communicator over `connections` (kept alive by handle.owner).
Communicator wrapRank(int rank, int nranks, TransportHandle handle,
                      std::shared_ptr<runtime::PlanProvider> plans, const ResolvedConfig& config) {
  auto executor =
      runtime::makeExecutor(config.executor, rank, *handle.connections, executorConfig(config));
  return Communicator::Impl::wrap(std::make_unique<Communicator::Impl>(
      rank, nranks, std::move(handle), std::move(executor), std::move(plans), config));
}

// Every rank made at once by the transport's group factory (the thread transport).
std::vector<Communicator> makeGroupCommunicators(int nranks, const ResolvedConfig& config,
                                                 std::shared_ptr<runtime::PlanProvider> plans) {
  std::vector<std::shared_ptr<transport::ConnectionSet>> ranks =
      config.transport->makeGroup(nranks, transportOptions({}, config));
  std::vector<Communicator> comms;
  comms.reserve(static_cast<std::size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    transport::ConnectionSet* connections = ranks[static_cast<std::size_t>(r)].get();
    TransportHandle handle{std::move(ranks[static_cast<std::size_t>(r)]), connections, nullptr};
    comms.push_back(wrapRank(r, nranks, std::move(handle), plans, config));
  }
  return comms;
}

// Ranks as threads of this process over a transport whose ranks connect one by one (shm, tcp),
// through an in-memory store.
std::vector<Communicator> makeStoreThreadCommunicators(
    int nranks, const ResolvedConfig& config, std::shared_ptr<runtime::PlanProvider> plans) {
  auto store = std::make_shared<transport::InMemoryStore>();
  std::random_device random;
  const std::string prefix = fmt::format("chorus-{:08x}{:08x}-all", random(), random());
  std::vector<std::optional<Communicator>> made(static_cast<std::size_t>(nranks));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(nranks));
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < nranks; ++r)
      threads.emplace_back([&, r] {
        try {
          made[r].emplace(makeProcessCommunicator(store, prefix, r, nranks, config, plans));
        } catch (...) {
          errors[r] = std::current_exception();
        }
      });
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  std::vector<Communicator> comms;
  for (auto& c : made)
    comms.push_back(std::move(*c));
  return comms;
}

// Across hosts, AllReduces from this size up run hierarchically (nodes = hosts): shm inside
// each host, tcp across, on 1/G of the data; AllToAlls below the other size run in two steps
// (MVAPICH all-to-all: aggregate inside a host, one exchange per host pair), which sends fewer,
// larger messages over tcp. Both measured on namespace-hosts (docs/performance.md, issue 7).
constexpr std::string_view kHostAwareAllReduceMinBytes = "16K";
constexpr std::string_view kHostAwareAllToAllMaxBytes = "512K";

// The CHORUS_ALGO that runs AllReduce hierarchically and AllToAll in two steps when the ranks
// span several hosts, host by host with as many on each; empty when they do not or the user
// chose plans.
std::string hostAwareAlgo(const std::vector<int>& hostOfRank, const ResolvedConfig& config) {
  // The user's choices (CHORUS_ALGO, CHORUS_ALGO_DIR) win.
  if (!config.algo.empty() || !config.algoDir.empty() || hostOfRank.empty()) return {};
  const int nranks = static_cast<int>(hostOfRank.size());
  const int hosts = *std::max_element(hostOfRank.begin(), hostOfRank.end()) + 1;
  if (hosts < 2 || nranks % hosts != 0 || nranks / hosts < 2) return {};
  const int perHost = nranks / hosts;
  for (int r = 0; r < nranks; ++r)
    if (hostOfRank[static_cast<std::size_t>(r)] != r / perHost) return {};  // not host by host
  return fmt::format("allreduce=hierarchical{{nodes={}}}:{}-max;alltoall=two-step{{nodes={}}}:0-{}",
                     hosts, kHostAwareAllReduceMinBytes, hosts, kHostAwareAllToAllMaxBytes);
}

// Whether every rank runs on a host of its own (so the default transport reaches every peer
// over tcp).
bool everyRankOnItsOwnHost(const std::vector<int>& hostOfRank) {
  if (hostOfRank.size() < 2) return false;
  std::vector<int> hosts = hostOfRank;
  std::sort(hosts.begin(), hosts.end());
  return std::adjacent_find(hosts.begin(), hosts.end()) == hosts.end();
}

}  // namespace

std::shared_ptr<runtime::PlanProvider> selectPlans(int nranks, const ResolvedConfig& config,
                                                   std::string_view tuningTransport) {
  selection::SelectionConfig selection;
  selection.nranks = nranks;
  selection.algo = config.algo;
  selection.algoDir = config.algoDir;
  selection.tuningFile = config.tuningFile;
  selection.transport =
      std::string(tuningTransport.empty() ? config.transport->tuning.withinHost : tuningTransport);
  selection.fifoSlots = config.fifo.slots;
  return selection::makePlanProvider(selection);
}

int nextCommunicatorIndex(const std::string& key) {
  static std::mutex mutex;
  static std::map<std::string, int> counts;
  std::lock_guard lock(mutex);
  return counts[key]++;
}

std::vector<Communicator> makeInProcessCommunicators(int nranks, const ResolvedConfig& config,
                                                     std::shared_ptr<runtime::PlanProvider> plans) {
  if (config.transport->makeGroup) return makeGroupCommunicators(nranks, config, std::move(plans));
  return makeStoreThreadCommunicators(nranks, config, std::move(plans));
}

Communicator makeProcessCommunicator(std::shared_ptr<transport::Store> store,
                                     const std::string& namePrefix, int rank, int nranks,
                                     const ResolvedConfig& config,
                                     std::shared_ptr<runtime::PlanProvider> plans) {
  const transport::TransportEntry& entry = *config.transport;
  if (!entry.runsProcesses())
    throw OptionError(fmt::format(
        "transport '{}' ({}) makes every rank at once in one process; a rank that connects on "
        "its own needs one of {}",
        entry.name, entry.description,
        transport::transportNames(
            [](const transport::TransportEntry& e) { return e.runsProcesses(); }, "'")));
  std::shared_ptr<transport::ConnectionSet> connections =
      entry.connectRank(*store, rank, nranks, transportOptions(namePrefix, config));
  // Every rank sees the same hosts (exchanged through the store), so every rank picks alike.
  if (const std::string algo = hostAwareAlgo(connections->hostOfRank(), config); !algo.empty()) {
    ResolvedConfig hostAware = config;
    hostAware.algo = algo;
    plans = selectPlans(nranks, hostAware);
  } else if (entry.tuning.acrossHosts != entry.tuning.withinHost &&
             everyRankOnItsOwnHost(connections->hostOfRank())) {
    // Every peer is on another host: the tables of the transport that crosses hosts.
    plans = selectPlans(nranks, config, entry.tuning.acrossHosts);
  }
  transport::ConnectionSet* view = connections.get();
  TransportHandle handle{std::move(connections), view, std::move(store)};
  return wrapRank(rank, nranks, std::move(handle), std::move(plans), config);
}

}  // namespace chorus::api
