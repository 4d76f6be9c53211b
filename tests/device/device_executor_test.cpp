// The device interpreter's host build as an executor ("device", src/device/host_executor.h): the
// reference MSCCL files and every type and operator through the thread runner, library plans
// through forked processes (mailboxes in /dev/shm, found over the connections), plans kept
// between calls and the least recently used dropped, and the failures: a peer that never calls
// (the set-up times out naming it), a group aborted while the blocks wait (they stop at once),
// ranks on several hosts and unknown executor names refused. The communicator's own sweep over
// this executor is tests/api/collectives_test.cpp.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "api/comm_config.h"
#include "chorus/chorus.h"
#include "device/host_executor.h"
#include "forwarding_connections.h"
#include "library_cases.h"
#include "process_threads.h"
#include "runtime/process_runner.h"
#include "runtime/thread_runner.h"
#include "support/error.h"
#include "transport/thread/thread_group.h"

namespace chorus {
namespace {

using namespace std::chrono_literals;
using runtime::DataType;
using testing_support::exactRun;

runtime::RunOptions onDevice(runtime::RunOptions options) {
  device::registerDeviceExecutors();
  options.executor = std::string(device::HostDeviceExecutor::kName);
  return options;
}

TEST(DeviceExecutor, RunsTheReferenceMscclFilesExactly) {
  testing_support::expectReferenceFilesExact(
      [](const ir::Algorithm& a, const runtime::RunOptions& o) {
        return runtime::runOnThreads(a, onDevice(o));
      },
      1031);
}

TEST(DeviceExecutor, EveryTypeAndOperatorIsExact) {
  testing_support::expectEveryTypeAndOperatorExact(
      [](const ir::Algorithm& a, const runtime::RunOptions& o) {
        return runtime::runOnThreads(a, onDevice(o));
      },
      3, 1031);
}

TEST(DeviceExecutor, RanksAsProcessesAreExactOnEveryProtocol) {
  if (testing_support::processThreadCount() > 1)
    GTEST_SKIP() << "fork needs a single-threaded test process; run this test on its own";
  for (const char* name : {"allreduce.ring", "allgather.ring", "alltoall.direct"})
    for (ir::Protocol protocol : {ir::Protocol::simple, ir::Protocol::ll, ir::Protocol::ll128}) {
      const ir::Algorithm algorithm = testing_support::compileOnProtocol(name, 3, protocol);
      runtime::RunOptions options = onDevice(exactRun(100'003));
      options.iterations = 2;
      const runtime::RunReport report = runtime::runOnProcesses(algorithm, options);
      EXPECT_TRUE(report.ok()) << name << " " << ir::protocolName(protocol) << ": "
                               << report.firstWrong;
    }
}

// Rank r's executor over a thread group, made on its own thread.
struct ThreadRanks {
  explicit ThreadRanks(int n) : group(n) {
    for (int r = 0; r < n; ++r) {
      runtime::ExecutorConfig config;
      config.ranksAreThreads = true;
      executors.push_back(std::make_unique<device::HostDeviceExecutor>(r, group.rank(r), config));
    }
  }
  transport::ThreadGroup group;
  std::vector<std::unique_ptr<device::HostDeviceExecutor>> executors;
};

TEST(DeviceExecutor, KeepsPlansBetweenCallsAndDropsTheLeastRecentlyUsed) {
  const int n = 2;
  ThreadRanks ranks(n);
  // Twelve plans (one ring under twelve names), called 1..12 then 12..1: more plans than a
  // rank keeps, each call exact; a plan is found by its content, not by the object passed.
  std::vector<ir::Algorithm> plans;
  for (int k = 1; k <= 12; ++k) {
    plans.push_back(testing_support::compileOnProtocol("allreduce.ring", n, ir::Protocol::simple));
    plans.back().name = "ring-" + std::to_string(k);
  }
  std::vector<std::size_t> order;
  for (std::size_t k = 0; k < 12; ++k)
    order.push_back(k);
  for (std::size_t k = 12; k-- > 0;)
    order.push_back(k);
  const std::size_t count = 4099;
  std::vector<std::string> failures(n);
  std::vector<std::size_t> held(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      device::HostDeviceExecutor& executor = *ranks.executors[static_cast<std::size_t>(r)];
      std::vector<std::int32_t> values(count);
      try {
        for (std::size_t call = 0; call < order.size(); ++call) {
          for (std::size_t i = 0; i < count; ++i)
            values[i] = static_cast<std::int32_t>(i % 17) + r + static_cast<int>(call);
          runtime::CallOptions options;
          options.timeout = 30s;
          const ir::Algorithm copy = plans[order[call]];  // another object, the same plan
          executor.run(copy, {values.data(), values.data(), count, DataType::int32, ReduceOp::sum},
                       options);
          for (std::size_t i = 0; i < count; ++i)
            if (values[i] != 2 * (static_cast<std::int32_t>(i % 17) + static_cast<int>(call)) + 1)
              throw CommError("call " + std::to_string(call) + " element " + std::to_string(i));
          if (executor.plansHeld() > device::HostDeviceExecutor::kMaxPlans)
            throw CommError("more plans held than kMaxPlans");
        }
        held[static_cast<std::size_t>(r)] = executor.plansHeld();
      } catch (const std::exception& e) {
        failures[static_cast<std::size_t>(r)] = e.what();
      }
    });
  for (std::thread& t : threads)
    t.join();
  EXPECT_EQ(failures, std::vector<std::string>(n));
  EXPECT_EQ(held, std::vector<std::size_t>(n, device::HostDeviceExecutor::kMaxPlans));
}

TEST(DeviceExecutor, CallsOfAnyCountShareOnePlansMailboxes) {
  const int n = 3;
  ThreadRanks ranks(n);
  const ir::Algorithm ring =
      testing_support::compileOnProtocol("allreduce.ring", n, ir::Protocol::ll);
  std::vector<std::thread> threads;
  std::vector<std::string> failures(n);
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        for (std::size_t count = 1; count <= 40; ++count) {
          std::vector<float> values(count, static_cast<float>(r + 1));
          runtime::CallOptions options;
          options.timeout = 30s;
          options.planKey = count;  // a shape key per count, as the communicator passes
          ranks.executors[static_cast<std::size_t>(r)]->run(
              ring, {values.data(), values.data(), count, DataType::float32, ReduceOp::sum},
              options);
          for (float v : values)
            if (v != 6.0f) throw CommError("count " + std::to_string(count) + " is wrong");
        }
      } catch (const std::exception& e) {
        failures[static_cast<std::size_t>(r)] = e.what();
      }
    });
  for (std::thread& t : threads)
    t.join();
  EXPECT_EQ(failures, std::vector<std::string>(n));
  EXPECT_EQ(ranks.executors[0]->plansHeld(), 1u);
}

TEST(DeviceExecutorErrors, APeerThatNeverCallsTimesOutTheSetUpNamingIt) {
  ThreadRanks ranks(2);
  const ir::Algorithm ring =
      testing_support::compileOnProtocol("allreduce.ring", 2, ir::Protocol::simple);
  std::vector<float> values(64, 1.0f);
  runtime::CallOptions options;
  options.timeout = 500ms;
  options.planKey = 1;
  try {
    ranks.executors[0]->run(
        ring, {values.data(), values.data(), 64, DataType::float32, ReduceOp::sum}, options);
    ADD_FAILURE() << "a call without its peer returned";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("mailboxes of rank(s) 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("CHORUS_EXECUTOR"), std::string::npos) << e.what();
  }
}

TEST(DeviceExecutorErrors, AGroupAbortedWhileTheBlocksWaitStopsThemAtOnce) {
  ThreadRanks ranks(2);
  const ir::Algorithm ring =
      testing_support::compileOnProtocol("allreduce.ring", 2, ir::Protocol::simple);
  const std::size_t count = 1000;
  std::vector<std::vector<float>> values(2, std::vector<float>(count, 1.0f));
  runtime::CallOptions options;
  options.timeout = 60s;
  options.planKey = 1;
  auto call = [&](int r) {
    ranks.executors[static_cast<std::size_t>(r)]->run(
        ring,
        {values[static_cast<std::size_t>(r)].data(), values[static_cast<std::size_t>(r)].data(),
         count, DataType::float32, ReduceOp::sum},
        options);
  };
  {  // both ranks call once, so the plan is set up and the next call goes straight to the blocks
    std::jthread peer([&] { call(1); });
    call(0);
  }
  std::jthread aborter([&] {
    std::this_thread::sleep_for(200ms);
    ranks.group.rank(1).abort("the application aborted rank 1");
  });
  const auto start = std::chrono::steady_clock::now();
  try {
    call(0);
    ADD_FAILURE() << "a call whose peer never came returned";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("the application aborted rank 1"), std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

// A thread group's rank that claims its peers run on other hosts.
class SpreadOverHosts final : public testing_support::ForwardingConnections {
 public:
  using ForwardingConnections::ForwardingConnections;
  int ranksOnThisHost() const override { return 1; }
};

TEST(DeviceExecutorErrors, RanksOnSeveralHostsAreRefused) {
  transport::ThreadGroup group(2);
  SpreadOverHosts spread(group.rank(0));
  try {
    device::HostDeviceExecutor executor(0, spread, {});
    ADD_FAILURE() << "an executor over two hosts was made";
  } catch (const OptionError& e) {
    EXPECT_NE(std::string(e.what()).find("every rank on one host"), std::string::npos) << e.what();
  }
}

TEST(DeviceExecutorConfig, ChorusExecutorSelectsItAndUnknownNamesListTheExecutors) {
  ::setenv("CHORUS_EXECUTOR", "device", 1);
  EXPECT_EQ(api::resolveConfig({}, api::InitKind::perProcess).executor, "device");
  ::unsetenv("CHORUS_EXECUTOR");
  EXPECT_EQ(api::resolveConfig({}, api::InitKind::perProcess).executor, "cpu");
  CommConfig config;
  config.executor = "gpu";
  try {
    api::resolveConfig(config, api::InitKind::allInProcess);
    ADD_FAILURE() << "executor 'gpu' was accepted";
  } catch (const OptionError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("CommConfig.executor 'gpu'"), std::string::npos) << message;
    EXPECT_NE(message.find("'device'"), std::string::npos) << message;
    EXPECT_NE(message.find("'cpu'"), std::string::npos) << message;
  }
}

// The host build finishes each call before returning: a stream is refused by name, and the
// communicator stays usable (send/recv copy through Executor::copyBytes).
TEST(DeviceExecutorErrors, AStreamIsRefusedAndSendRecvStillWork) {
  CommConfig config;
  config.executor = "device";
  config.timeout = std::chrono::seconds(60);
  std::vector<Communicator> comms = Communicator::initAll(2, config);
  std::vector<float> data{1, 2, 3, 4}, got(4, 0.0f);
  int notAStream = 0;
  try {
    comms[0].allGather(data.data(), data.data(), 1, DataType::float32, &notAStream);
    ADD_FAILURE() << "a stream was accepted";
  } catch (const OptionError& e) {
    EXPECT_NE(std::string(e.what()).find("executor 'device'"), std::string::npos) << e.what();
  }
  groupStart();
  comms[0].send(data.data(), 4, DataType::float32, 1);
  comms[1].recv(got.data(), 4, DataType::float32, 0);
  groupEnd();
  EXPECT_EQ(got, data);
}

}  // namespace
}  // namespace chorus
