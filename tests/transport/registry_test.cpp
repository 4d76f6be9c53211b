// The transport registry: the built-in transports in order with what each supports and whose
// tuning tables apply, the defaults per placement, lookups and their generated error listing
// every registered name, run-time registration, and each factory connecting ranks that pass a
// message (so the common options reach the transport's own).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/error.h"
#include "transport/in_memory_store.h"
#include "transport/registry.h"
#include "transport/thread/thread_group.h"

namespace chorus::transport {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

std::vector<std::string> registeredNames() {
  std::vector<std::string> names;
  for (const TransportEntry* entry : listTransports())
    names.push_back(entry->name);
  return names;
}

std::string lookupError(const std::string& name) {
  try {
    requireTransport(name, "CHORUS_TRANSPORT", ", or leave it empty");
  } catch (const OptionError& error) {
    return error.what();
  }
  return "no error";
}

// Sends one tagged message from rank 0 to rank 1 over `ranks` (one view per rank, each used
// from its own thread) and returns what rank 1 received.
std::string registryRoundTrip(const std::vector<ConnectionSet*>& ranks) {
  const std::string text = "through the registry";
  std::string received;
  std::thread sender([&] {
    Fifo& fifo = ranks[0]->sendFifo(1, 0);
    std::uint8_t* slot = nullptr;
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while ((slot = fifo.trySendSlot()) == nullptr && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    if (slot == nullptr) return;
    std::memcpy(slot, text.data(), text.size());
    fifo.commitSend(text.size(), 42);
  });
  Fifo& fifo = ranks[1]->recvFifo(0, 0);
  RecvSlot got;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!fifo.tryRecvSlot(&got) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  if (got.data != nullptr && got.tag == 42)
    received.assign(reinterpret_cast<const char*>(got.data), got.bytes);
  if (got.data != nullptr) fifo.releaseRecv();
  sender.join();
  return received;
}

// Both ranks of a 2-rank group connected through `entry`'s rank factory, each from a thread of
// its own through one in-memory store.
std::vector<std::unique_ptr<ConnectionSet>> connectPair(const TransportEntry& entry,
                                                        const std::string& group) {
  InMemoryStore store;
  TransportOptions options;
  options.fifo.slots = 2;
  options.fifo.slotBytes = 4 << 10;
  options.groupName = group;
  options.timeout = 30s;
  std::vector<std::unique_ptr<ConnectionSet>> ranks(2);
  std::vector<std::exception_ptr> errors(2);
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < 2; ++r)
      threads.emplace_back([&, r] {
        try {
          ranks[r] = entry.connectRank(store, r, 2, options);
        } catch (...) {
          errors[r] = std::current_exception();
        }
      });
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return ranks;
}

// Destroys every view at once, each on a thread of its own (a tcp rank leaving waits for its
// peers to close their side).
void leaveTogether(std::vector<std::unique_ptr<ConnectionSet>>& ranks) {
  std::vector<std::jthread> threads;
  for (auto& rank : ranks)
    threads.emplace_back([&rank] { rank.reset(); });
}

TEST(TransportRegistry, BuiltInTransportsComeFirstInOrder) {
  const std::vector<std::string> names = registeredNames();
  ASSERT_GE(names.size(), 5u);
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + 5),
            (std::vector<std::string>{"thread", "shm", "tcp", "auto", "ucx"}));
  for (const TransportEntry* entry : listTransports()) {
    EXPECT_FALSE(entry->description.empty()) << entry->name;
    EXPECT_NE(entry->makeGroup == nullptr, entry->connectRank == nullptr)
        << entry->name << " has exactly one factory";
    EXPECT_EQ(findTransport(entry->name), entry);
  }
  EXPECT_EQ(findTransport("udp"), nullptr);
}

TEST(TransportRegistry, CapabilitiesSayWhereRanksRunAndWhoseTablesApply) {
  const TransportEntry& thread = requireTransport("thread", "test");
  EXPECT_EQ(thread.supports.reach, TransportReach::oneProcess);
  EXPECT_TRUE(thread.makeGroup != nullptr);
  EXPECT_TRUE(thread.runsThreads());
  EXPECT_FALSE(thread.runsProcesses());
  EXPECT_FALSE(thread.supports.registeredSingleCopy);
  EXPECT_EQ(thread.tuning.withinHost, "thread");

  const TransportEntry& shm = requireTransport("shm", "test");
  EXPECT_EQ(shm.supports.reach, TransportReach::oneHost);
  EXPECT_TRUE(shm.runsThreads());
  EXPECT_TRUE(shm.runsProcesses());
  EXPECT_TRUE(shm.supports.registeredSingleCopy);
  EXPECT_EQ(shm.tuning.withinHost, "shm");
  EXPECT_EQ(shm.tuning.acrossHosts, "shm");

  const TransportEntry& tcp = requireTransport("tcp", "test");
  EXPECT_EQ(tcp.supports.reach, TransportReach::anyHosts);
  EXPECT_TRUE(tcp.runsThreads());
  EXPECT_TRUE(tcp.runsProcesses());
  EXPECT_FALSE(tcp.supports.registeredSingleCopy);
  EXPECT_EQ(tcp.tuning.acrossHosts, "tcp");

  // auto: shm's tables within a host, tcp's when every rank has a host of its own; only for
  // ranks in separate processes.
  const TransportEntry& automatic = requireTransport("auto", "test");
  EXPECT_EQ(automatic.supports.reach, TransportReach::anyHosts);
  EXPECT_TRUE(automatic.supports.choosesPerPeer);
  EXPECT_TRUE(automatic.supports.registeredSingleCopy);
  EXPECT_FALSE(automatic.runsThreads());
  EXPECT_TRUE(automatic.runsProcesses());
  EXPECT_EQ(automatic.tuning.withinHost, "shm");
  EXPECT_EQ(automatic.tuning.acrossHosts, "tcp");

  // ucx: any hosts, threads or processes; tcp's tables until ucx has its own.
  const TransportEntry& ucx = requireTransport("ucx", "test");
  EXPECT_EQ(ucx.supports.reach, TransportReach::anyHosts);
  EXPECT_TRUE(ucx.runsThreads());
  EXPECT_TRUE(ucx.runsProcesses());
  EXPECT_FALSE(ucx.supports.registeredSingleCopy);
  EXPECT_EQ(ucx.tuning.acrossHosts, "tcp");
}

TEST(TransportRegistry, DefaultsPerPlacement) {
  EXPECT_EQ(defaultTransport(TransportReach::oneProcess).name, "thread");
  EXPECT_EQ(defaultTransport(TransportReach::oneHost).name, "shm");
  EXPECT_EQ(defaultTransport(TransportReach::anyHosts).name, "auto");
}

TEST(TransportRegistry, UnknownNameListsEveryRegisteredTransportWithItsDescription) {
  const std::string message = lookupError("pigeon");
  EXPECT_THAT(message, HasSubstr("CHORUS_TRANSPORT='pigeon' is not a transport; choose 'thread', "
                                 "'shm', 'tcp'"));
  EXPECT_THAT(message, HasSubstr(", or leave it empty"));
  for (const TransportEntry* entry : listTransports()) {
    EXPECT_THAT(message, HasSubstr("'" + entry->name + "'"));
    EXPECT_THAT(message, HasSubstr(entry->name + ": " + entry->description));
  }
}

TEST(TransportRegistry, NameListsFollowTheFilter) {
  const auto builtIn = [](const TransportEntry& e) {
    return e.name == "thread" || e.name == "shm" || e.name == "tcp" || e.name == "auto";
  };
  EXPECT_EQ(transportNames(builtIn), "thread, shm, tcp or auto");
  EXPECT_THAT(transportNames(), HasSubstr("thread, shm, tcp"));
  EXPECT_EQ(transportNames(
                [](const TransportEntry& e) { return e.name == "shm" || e.name == "tcp"; }, "'"),
            "'shm' or 'tcp'");
  EXPECT_EQ(describeTransports([](const TransportEntry& e) { return e.name == "thread"; }),
            "thread: " + requireTransport("thread", "test").description);
  EXPECT_EQ(transportNames([](const TransportEntry&) { return false; }), "");
}

TEST(TransportRegistry, RegisteredAtRunTimeIsFoundListedAndNamedInErrors) {
  TransportEntry entry;
  entry.name = "registry-test-threads";
  entry.description = "a thread group registered by a test";
  entry.supports.reach = TransportReach::oneProcess;
  entry.tuning = {"thread", "thread"};
  entry.makeGroup = requireTransport("thread", "test").makeGroup;
  registerTransport(entry);
  const TransportEntry* found = findTransport("registry-test-threads");
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->description, "a thread group registered by a test");
  EXPECT_EQ(registeredNames().back(), "registry-test-threads");
  EXPECT_THAT(lookupError("pigeon"),
              HasSubstr("registry-test-threads: a thread group registered by a test"));

  auto group = found->makeGroup(2, {});
  ASSERT_EQ(group.size(), 2u);
  EXPECT_EQ(registryRoundTrip({group[0].get(), group[1].get()}), "through the registry");

  EXPECT_THROW(registerTransport(entry), OptionError);  // the name is taken
  TransportEntry nameless = entry;
  nameless.name.clear();
  EXPECT_THROW(registerTransport(nameless), OptionError);
  TransportEntry noFactory = entry;
  noFactory.name = "registry-test-none";
  noFactory.makeGroup = nullptr;
  EXPECT_THROW(registerTransport(noFactory), OptionError);
  TransportEntry twoFactories = noFactory;
  twoFactories.makeGroup = entry.makeGroup;
  twoFactories.connectRank = requireTransport("shm", "test").connectRank;
  EXPECT_THROW(registerTransport(twoFactories), OptionError);
  EXPECT_EQ(findTransport("registry-test-none"), nullptr);
}

TEST(TransportRegistry, ThreadGroupFactoryMakesEveryRankAndKeepsTheGroupAlive) {
  TransportOptions options;
  options.fifo.slots = 3;
  auto ranks = requireTransport("thread", "test").makeGroup(3, options);
  ASSERT_EQ(ranks.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(ranks[r]->rank(), r);
    EXPECT_EQ(ranks[r]->nranks(), 3);
  }
  EXPECT_EQ(ranks[1]->sendFifo(2, 0).slotCount(), 3);  // the FIFO options reach the group
  // The views share the group: rank 0's view still works after the others are gone.
  std::shared_ptr<ConnectionSet> last = ranks[0];
  ranks.clear();
  last->abort("test abort");
  EXPECT_EQ(last->abortReason(), "test abort");
}

TEST(TransportRegistry, RankFactoriesConnectThroughAStore) {
  for (const char* name : {"shm", "tcp", "auto"}) {
    const TransportEntry& entry = requireTransport(name, "test");
    auto ranks = connectPair(entry, std::string("chorus-registry-test-") + name);
    ASSERT_EQ(ranks.size(), 2u);
    EXPECT_EQ(ranks[0]->rank(), 0) << name;
    EXPECT_EQ(ranks[1]->nranks(), 2) << name;
    EXPECT_EQ(ranks[0]->sendFifo(1, 0).slotCount(), 2) << name;
    EXPECT_EQ(ranks[0]->sendFifo(1, 0).slotBytes(), std::size_t{4} << 10) << name;
    EXPECT_EQ(registryRoundTrip({ranks[0].get(), ranks[1].get()}), "through the registry") << name;
    leaveTogether(ranks);
  }
}

}  // namespace
}  // namespace chorus::transport
