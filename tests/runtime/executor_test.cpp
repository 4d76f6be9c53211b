// The executor interface: the table's default ("cpu") and its error for an unknown name, the CPU
// executor running a plan over a thread group and keeping its workspace's plan facts between
// calls, and the thread and process runners calling through the executor their options name
// (an executor registered at run time) and refusing transports of the other kind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "compile_for_test.h"
#include "counting_executor.h"
#include "runtime/cpu_executor.h"
#include "runtime/executor.h"
#include "runtime/process_runner.h"
#include "runtime/thread_runner.h"
#include "support/error.h"
#include "transport/thread/thread_group.h"

namespace chorus {
namespace {

using runtime::DataType;
using ::testing::HasSubstr;
using testing_support::compileForTest;
using namespace std::chrono_literals;

std::atomic<int> countingExecutorCalls{0};

// Fails every call with an OptionError that says so.
class RefusingExecutor final : public runtime::Executor {
 public:
  RefusingExecutor(int rank, transport::ConnectionSet& connections) : Executor(rank, connections) {}
  std::string_view name() const override { return "executor-test-refusing"; }
  void run(const ir::Algorithm&, const runtime::CollectiveArgs&,
           const runtime::CallOptions&) override {
    throw OptionError(fmt::format("rank {}: the refusing test executor ran", rank()));
  }
};

void registerTestExecutors() {
  static const bool registered = [] {
    runtime::registerExecutor(testing_support::countingExecutorEntry(
        "executor-test-counting", "counts calls, then runs them on the CPU",
        countingExecutorCalls));
    runtime::registerExecutor(
        {"executor-test-refusing", "fails every call",
         [](int rank, transport::ConnectionSet& connections, const runtime::ExecutorConfig&) {
           return std::unique_ptr<runtime::Executor>(new RefusingExecutor(rank, connections));
         }});
    return true;
  }();
  (void)registered;
}

std::string executorError(const std::string& name) {
  try {
    runtime::requireExecutor(name, "RunOptions.executor");
  } catch (const OptionError& error) {
    return error.what();
  }
  return "no error";
}

TEST(Executor, CpuIsTheDefaultAndListedFirst) {
  EXPECT_EQ(runtime::kDefaultExecutor, "cpu");
  EXPECT_EQ(runtime::RunOptions{}.executor, "cpu");
  const auto executors = runtime::listExecutors();
  ASSERT_FALSE(executors.empty());
  EXPECT_EQ(executors.front()->name, "cpu");
  EXPECT_FALSE(executors.front()->description.empty());
  EXPECT_EQ(&runtime::requireExecutor("cpu"), executors.front());
}

TEST(Executor, UnknownNameListsTheExecutors) {
  const std::string message = executorError("gpu");
  EXPECT_THAT(message, HasSubstr("RunOptions.executor 'gpu' is not an executor"));
  for (const runtime::ExecutorEntry* entry : runtime::listExecutors())
    EXPECT_THAT(message, HasSubstr("'" + entry->name + "' (" + entry->description + ")"));
  transport::ThreadGroup group(1);
  EXPECT_THROW(runtime::makeExecutor("gpu", 0, group.rank(0)), OptionError);
}

TEST(Executor, RegistrationRejectsTakenNamesAndMissingFactories) {
  registerTestExecutors();
  EXPECT_THAT(executorError("pigeon"), HasSubstr("'executor-test-counting' (counts calls"));
  EXPECT_THROW(runtime::registerExecutor({"cpu", "again", runtime::requireExecutor("cpu").make}),
               OptionError);
  EXPECT_THROW(runtime::registerExecutor({"", "nameless", runtime::requireExecutor("cpu").make}),
               OptionError);
  EXPECT_THROW(runtime::registerExecutor({"executor-test-none", "no factory", nullptr}),
               OptionError);
  EXPECT_THROW(runtime::requireExecutor("executor-test-none"), OptionError);
}

TEST(Executor, RegisterIfAbsentKeepsTheFirstEntry) {
  const auto make = runtime::requireExecutor("cpu").make;
  runtime::registerExecutorIfAbsent({"executor-test-once", "first", make});  // false on repeats
  EXPECT_FALSE(runtime::registerExecutorIfAbsent({"executor-test-once", "second", make}));
  EXPECT_EQ(runtime::requireExecutor("executor-test-once").description, "first");
  EXPECT_FALSE(runtime::registerExecutorIfAbsent({"cpu", "again", make}));
  EXPECT_THROW(runtime::registerExecutorIfAbsent({"", "nameless", make}), OptionError);
  EXPECT_THROW(runtime::registerExecutorIfAbsent({"executor-test-void", "no factory", nullptr}),
               OptionError);
}

// The CPU executor runs every rank's part of a ring AllReduce over a thread group.
TEST(Executor, CpuExecutorRunsAPlanAndKeepsPlanFactsBetweenCalls) {
  const ir::Algorithm a = compileForTest("allreduce.ring", 3);
  const std::size_t count = 3000;
  transport::ThreadGroup group(3);
  std::vector<std::unique_ptr<runtime::Executor>> executors;
  for (int r = 0; r < 3; ++r)
    executors.push_back(runtime::makeExecutor("cpu", r, group.rank(r)));
  std::vector<std::vector<float>> in(3, std::vector<float>(count)), out = in;
  for (int r = 0; r < 3; ++r)
    for (std::size_t i = 0; i < count; ++i)
      in[r][i] = static_cast<float>(r + 1 + i % 7);
  for (int call = 0; call < 2; ++call) {
    std::vector<std::thread> threads;
    for (int r = 0; r < 3; ++r)
      threads.emplace_back([&, r] {
        runtime::CallOptions options;
        options.timeout = 60s;
        options.planKey = 77;
        executors[r]->run(a, {in[r].data(), out[r].data(), count}, options);
      });
    for (auto& t : threads)
      t.join();
  }
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(executors[r]->name(), "cpu");
    EXPECT_EQ(executors[r]->rank(), r);
    EXPECT_EQ(&executors[r]->connections(), &group.rank(r));
    for (std::size_t i = 0; i < count; ++i)
      ASSERT_EQ(out[r][i], static_cast<float>(6 + 3 * (i % 7))) << "rank " << r << " [" << i << "]";
    const auto& cpu = dynamic_cast<const runtime::CpuExecutor&>(*executors[r]);
    EXPECT_EQ(cpu.workspace().facts.key, 77u);  // derived once for the plan key, then kept
  }
}

TEST(Executor, ThreadRunnerCallsThroughTheNamedExecutor) {
  registerTestExecutors();
  const ir::Algorithm a = compileForTest("allgather.ring", 4);
  runtime::RunOptions options;
  options.count = 1000;
  options.iterations = 2;
  options.executor = "executor-test-counting";
  const int before = countingExecutorCalls.load();
  const auto report = runtime::runOnThreads(a, options);
  EXPECT_TRUE(report.ok()) << report.firstWrong;
  EXPECT_EQ(countingExecutorCalls.load() - before, 4 * 2);  // every rank, every iteration

  options.executor = "gpu";
  EXPECT_THROW(runtime::runOnThreads(a, options), OptionError);
}

TEST(Executor, ProcessRunnerCallsThroughTheNamedExecutor) {
  registerTestExecutors();
  const ir::Algorithm a = compileForTest("allreduce.ring", 2);
  runtime::ProcessRunOptions options;
  options.count = 100;
  options.timeout = 30s;
  options.executor = "executor-test-counting";
  const auto report = runtime::runOnProcesses(a, options);
  EXPECT_TRUE(report.ok()) << report.firstWrong;

  // The forked ranks run the executor the options name: this one fails every call.
  options.executor = "executor-test-refusing";
  try {
    runtime::runOnProcesses(a, options);
    ADD_FAILURE() << "the refusing executor did not run";
  } catch (const OptionError& error) {
    EXPECT_THAT(error.what(), HasSubstr("the refusing test executor ran"));
  }
  options.executor = "gpu";
  try {
    runtime::runOnProcesses(a, options);
    ADD_FAILURE() << "an unknown executor ran";
  } catch (const OptionError& error) {
    EXPECT_THAT(error.what(), HasSubstr("'gpu' is not an executor"));
  }
}

TEST(Executor, RunnersRefuseATransportOfTheOtherKind) {
  const ir::Algorithm a = compileForTest("allreduce.ring", 2);
  runtime::RunOptions options;
  options.count = 100;
  options.transport = "shm";
  try {
    runtime::runOnThreads(a, options);
    ADD_FAILURE() << "runOnThreads took shm";
  } catch (const OptionError& error) {
    EXPECT_THAT(error.what(), HasSubstr("use runOnProcesses"));
  }
  options.transport = "thread";
  try {
    runtime::runOnProcesses(a, options);
    ADD_FAILURE() << "runOnProcesses took thread";
  } catch (const OptionError& error) {
    EXPECT_THAT(error.what(), HasSubstr("forked ranks need one of 'shm', 'tcp'"));
  }
  options.transport = "pigeon";
  EXPECT_THROW(runtime::runOnThreads(a, options), OptionError);
  EXPECT_THROW(runtime::runOnProcesses(a, options), OptionError);
}

}  // namespace
}  // namespace chorus
