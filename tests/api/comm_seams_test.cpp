// The communicator's seams: the transport it resolves from the registry (defaults, and the
// messages for a transport the kind of creation cannot use, generated from the registry) and the
// executor it runs calls on (the default "cpu", or one registered at run time, chosen in the
// communicator factory).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "api/comm_config.h"
#include "api/comm_factory.h"
#include "api_test_util.h"
#include "chorus/chorus.h"
#include "counting_executor.h"
#include "runtime/executor.h"
#include "support/error.h"
#include "transport/registry.h"

namespace chorus {
namespace {

using ::testing::HasSubstr;

std::atomic<int> seamExecutorCalls{0};

void registerSeamExecutor() {
  static const bool registered = [] {
    runtime::registerExecutor(testing_support::countingExecutorEntry(
        "comm-seams-counting", "counts the communicator's calls", seamExecutorCalls));
    return true;
  }();
  (void)registered;
}

std::string resolveError(const std::string& transportName, api::InitKind kind) {
  CommConfig config;
  config.transport = transportName;
  try {
    api::resolveConfig(config, kind);
  } catch (const OptionError& error) {
    return error.what();
  }
  return "no error";
}

// One AllReduce of 64 floats on every rank of `comms`; true if every result is right.
bool allReduceIsExact(std::vector<Communicator>& comms) {
  const int n = static_cast<int>(comms.size());
  std::vector<std::vector<float>> in(n, std::vector<float>(64)), out = in;
  for (int r = 0; r < n; ++r)
    for (std::size_t i = 0; i < 64; ++i)
      in[r][i] = static_cast<float>(r + i);
  apitest::onThreads(n, [&](int r) {
    comms[r].allReduce(in[r].data(), out[r].data(), 64, DataType::float32, ReduceOp::sum);
  });
  for (int r = 0; r < n; ++r)
    for (std::size_t i = 0; i < 64; ++i)
      if (out[r][i] != static_cast<float>(n * (n - 1) / 2 + n * static_cast<int>(i))) return false;
  return true;
}

TEST(CommSeams, DefaultsComeFromTheRegistries) {
  const api::ResolvedConfig threads = api::resolveConfig({}, api::InitKind::allInProcess);
  EXPECT_EQ(threads.transport, &transport::defaultTransport(transport::TransportReach::oneProcess));
  EXPECT_EQ(threads.transport->name, "thread");
  EXPECT_EQ(threads.executor, "cpu");
  const api::ResolvedConfig processes = api::resolveConfig({}, api::InitKind::perProcess);
  EXPECT_EQ(processes.transport->name, "auto");
  CommConfig shm;
  shm.transport = "shm";
  EXPECT_EQ(api::resolveConfig(shm, api::InitKind::allInProcess).transport,
            transport::findTransport("shm"));
}

TEST(CommSeams, RemoteTransportComesFromTheEnvironment) {
  EXPECT_EQ(api::resolveConfig({}, api::InitKind::perProcess).remoteTransport,
            transport::RemoteTransport::automatic);
  ::setenv("CHORUS_REMOTE_TRANSPORT", "ucx", 1);
  EXPECT_EQ(api::resolveConfig({}, api::InitKind::perProcess).remoteTransport,
            transport::RemoteTransport::ucx);
  ::setenv("CHORUS_REMOTE_TRANSPORT", "verbs", 1);
  EXPECT_THAT([] { api::resolveConfig({}, api::InitKind::perProcess); },
              ::testing::ThrowsMessage<OptionError>(
                  HasSubstr("CHORUS_REMOTE_TRANSPORT='verbs' is not a way to reach other hosts")));
  ::unsetenv("CHORUS_REMOTE_TRANSPORT");
}

TEST(CommSeams, TransportMessagesListWhatTheRegistryAllows) {
  const std::string thread = resolveError("thread", api::InitKind::perProcess);
  EXPECT_THAT(thread, HasSubstr("CommConfig.transport='thread' only works with "
                                "Communicator::initAll"));
  EXPECT_THAT(
      thread,
      HasSubstr("ranks in separate processes use " +
                transport::transportNames(
                    [](const transport::TransportEntry& e) { return e.runsProcesses(); }, "'")));
  const std::string automatic = resolveError("auto", api::InitKind::allInProcess);
  EXPECT_THAT(automatic, HasSubstr("CommConfig.transport='auto' chooses shm or tcp per peer"));
  EXPECT_THAT(automatic,
              HasSubstr("with Communicator::initAll use 'thread', 'shm', 'tcp' or 'ucx'"));
  const std::string unknown = resolveError("udp", api::InitKind::allInProcess);
  EXPECT_THAT(unknown, HasSubstr("CommConfig.transport='udp' is not a transport"));
  EXPECT_THAT(unknown, HasSubstr("or leave it empty for the default"));
  for (const transport::TransportEntry* entry : transport::listTransports())
    EXPECT_THAT(unknown, HasSubstr(entry->name + ": " + entry->description));
}

TEST(CommSeams, CommunicatorRunsCallsOnTheExecutorItWasMadeWith) {
  registerSeamExecutor();
  for (const char* transportName : {"thread", "shm"}) {
    CommConfig config = apitest::testConfig();
    config.transport = transportName;
    api::ResolvedConfig resolved = api::resolveConfig(config, api::InitKind::allInProcess);
    resolved.executor = "comm-seams-counting";
    auto comms = api::makeInProcessCommunicators(3, resolved, api::selectPlans(3, resolved));
    const int before = seamExecutorCalls.load();
    EXPECT_TRUE(allReduceIsExact(comms)) << transportName;
    EXPECT_EQ(seamExecutorCalls.load() - before, 3) << transportName;  // one call per rank
  }
}

TEST(CommSeams, UnknownExecutorIsAnOptionError) {
  api::ResolvedConfig resolved =
      api::resolveConfig(apitest::testConfig(), api::InitKind::allInProcess);
  resolved.executor = "gpu";
  const std::string message = apitest::messageOf<OptionError>(
      [&] { api::makeInProcessCommunicators(2, resolved, api::selectPlans(2, resolved)); });
  EXPECT_THAT(message, HasSubstr("'gpu' is not an executor"));
  EXPECT_THAT(message, HasSubstr("'cpu' ("));
}

}  // namespace
}  // namespace chorus
