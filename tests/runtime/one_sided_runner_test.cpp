// The one-sided thread runner (src/runtime/one_sided_runner.h): hand-written MSCCL++ plans run
// exactly on thread ranks, whatever the count and type; a plan that deadlocks times out naming
// the step; processes refuse one-sided plans.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "chorus/error.h"
#include "ir/mscclpp_plan.h"
#include "mscclpp_plans.h"
#include "runtime/process_runner.h"
#include "runtime/thread_runner.h"

namespace chorus::runtime {
namespace {

using ::testing::HasSubstr;
namespace plans = chorus::testing_support::mscclpp_plans;

ir::Algorithm planOf(const nlohmann::json& plan) {
  return ir::readMscclppPlan(plan.dump(), "plan.json");
}

RunOptions optionsFor(std::size_t count, DataType type) {
  RunOptions options;
  options.count = count;
  options.type = type;
  options.timeout = std::chrono::milliseconds(20'000);
  return options;
}

TEST(OneSidedRunner, HandWrittenPlansRunExactly) {
  for (int n : {2, 3, 4}) {
    // 1000 elements do not divide into 3 chunks: the last chunk of each block is shorter.
    for (std::size_t count : {std::size_t{1000}, std::size_t{4096}}) {
      SCOPED_TRACE(testing::Message() << n << " ranks, count " << count);
      const RunReport allreduce =
          runOnThreads(planOf(plans::twoPhaseAllReduce(n)), optionsFor(count, DataType::float32));
      EXPECT_TRUE(allreduce.ok()) << allreduce.firstWrong;
      EXPECT_EQ(allreduce.checkedElements, static_cast<std::size_t>(n) * count);
      const RunReport allgather =
          runOnThreads(planOf(plans::portAllGather(n)), optionsFor(count, DataType::int32));
      EXPECT_TRUE(allgather.ok()) << allgather.firstWrong;
      // Every output element plus, out of place, every input element.
      EXPECT_EQ(allgather.checkedElements, static_cast<std::size_t>(n) * (n + 1) * count);
      // Read as its pipelines' bodies (ir/mscclpp_pipelines.h), iterations of 4 KiB or not.
      for (long long unit : {4096LL, 1LL << 20}) {
        const RunReport alltoall = runOnThreads(planOf(plans::pipelinedAllToAll(n, unit)),
                                                optionsFor(count, DataType::int32));
        EXPECT_TRUE(alltoall.ok()) << alltoall.firstWrong;
        // count per peer: n blocks of it per rank.
        EXPECT_EQ(alltoall.checkedElements, static_cast<std::size_t>(n) * n * count);
      }
    }
  }
  for (bool barrier : {false, true}) {
    RunOptions options = optionsFor(777, DataType::float16);
    options.iterations = 3;
    const RunReport report = runOnThreads(planOf(plans::handOff(barrier)), options);
    EXPECT_TRUE(report.ok()) << report.firstWrong;
  }
}

TEST(OneSidedRunner, PacketPlansRunExactly) {
  for (int n : {2, 3, 4}) {
    for (std::size_t count : {std::size_t{1000}, std::size_t{4096}}) {
      SCOPED_TRACE(testing::Message() << n << " ranks, count " << count);
      const RunReport allreduce =
          runOnThreads(planOf(plans::packetAllReduce(n)), optionsFor(count, DataType::float32));
      EXPECT_TRUE(allreduce.ok()) << allreduce.firstWrong;
      EXPECT_EQ(allreduce.checkedElements, static_cast<std::size_t>(n) * count);
      RunOptions options = optionsFor(count, DataType::int32);
      options.iterations = 2;  // packets start unwritten in every launch
      const RunReport allgather = runOnThreads(planOf(plans::portPacketAllGather(n)), options);
      EXPECT_TRUE(allgather.ok()) << allgather.firstWrong;
    }
  }
}

TEST(OneSidedRunner, AMissingPacketTimesOutNamingIt) {
  nlohmann::json plan = plans::packetAllReduce(2);
  plan["gpus"][1]["threadblocks"][0]["ops"][0]["dst_buff"][0]["index"] = 0;
  plan["gpus"][1]["threadblocks"][0]["ops"][0]["src_buff"][0]["index"] = 1;
  RunOptions options = optionsFor(64, DataType::float32);
  options.timeout = std::chrono::milliseconds(300);
  try {
    runOnThreads(planOf(plan), options);
    FAIL() << "the missing packets went unnoticed";
  } catch (const TimeoutError& error) {
    // Rank 0 waits for packets that never come, and rank 1 then for rank 0's sum: either
    // timeout may come first.
    EXPECT_THAT(error.what(),
                ::testing::AnyOf(HasSubstr("rank 0 tb 0 step 1 (reduce) waited 0 s for the "
                                           "packets of rank 0's scratch[1]"),
                                 HasSubstr("rank 1 tb 0 step 3 (copy) waited 0 s for the packets "
                                           "of rank 1's scratch[2]")));
  }
}

TEST(OneSidedRunner, OtherOperatorsRunToo) {
  RunOptions options = optionsFor(512, DataType::int32);
  options.op = ReduceOp::max;
  const RunReport report = runOnThreads(planOf(plans::twoPhaseAllReduce(3)), options);
  EXPECT_TRUE(report.ok()) << report.firstWrong;
  options.op = ReduceOp::avg;
  EXPECT_THROW(runOnThreads(planOf(plans::twoPhaseAllReduce(3)), options), OptionError);
}

TEST(OneSidedRunner, ADeadlockTimesOutNamingTheStep) {
  nlohmann::json plan = plans::twoPhaseAllReduce(2);
  plan["gpus"][0]["threadblocks"][0]["ops"].erase(2);  // rank 0's first signal
  RunOptions options = optionsFor(64, DataType::float32);
  options.timeout = std::chrono::milliseconds(300);
  try {
    runOnThreads(planOf(plan), options);
    FAIL() << "the deadlock went unnoticed";
  } catch (const TimeoutError& error) {
    EXPECT_THAT(error.what(), HasSubstr("rank 1 tb 0 step 10 (wait with rank 0 on channel 0) "
                                        "waited 0 s for signal number 2 from rank 0; the plan "
                                        "deadlocks ('chorus verify' says why)"));
  }
}

// How many /dev/shm names one-sided process runs left behind ("-os-r<rank>" segments).
int leftoverSegments() {
  int count = 0;
  std::error_code error;
  for (std::filesystem::directory_iterator it("/dev/shm", error), end; !error && it != end;
       it.increment(error))
    count += it->path().filename().string().find("-os-r") != std::string::npos ? 1 : 0;
  return count;
}

// Rank processes map each other's segments: the same plans run exactly, several times in a row
// (token counts and packets start afresh), and leave no segment behind.
TEST(OneSidedRunner, ProcessesRunOneSidedPlansExactly) {
  const int before = leftoverSegments();
  for (int n : {2, 3}) {
    SCOPED_TRACE(testing::Message() << n << " ranks");
    RunOptions options = optionsFor(1000, DataType::float32);
    options.iterations = 2;
    for (const nlohmann::json& plan : {plans::twoPhaseAllReduce(n), plans::packetAllReduce(n)}) {
      const RunReport report = runOnProcesses(planOf(plan), options);
      EXPECT_TRUE(report.ok()) << report.firstWrong;
      EXPECT_EQ(report.checkedElements, static_cast<std::size_t>(n) * 1000);
    }
    options.type = DataType::int32;
    const RunReport alltoall = runOnProcesses(planOf(plans::pipelinedAllToAll(n, 4096)), options);
    EXPECT_TRUE(alltoall.ok()) << alltoall.firstWrong;
    for (const nlohmann::json& plan : {plans::portAllGather(n), plans::portPacketAllGather(n)}) {
      const RunReport report = runOnProcesses(planOf(plan), options);
      EXPECT_TRUE(report.ok()) << report.firstWrong;
      EXPECT_EQ(report.checkedElements, static_cast<std::size_t>(n) * (n + 1) * 1000);
    }
  }
  const RunReport handOff =
      runOnProcesses(planOf(plans::handOff(true)), optionsFor(777, DataType::float16));
  EXPECT_TRUE(handOff.ok()) << handOff.firstWrong;
  EXPECT_EQ(leftoverSegments(), before);
}

TEST(OneSidedRunner, ADeadlockOnProcessesTimesOutNamingTheStep) {
  nlohmann::json plan = plans::twoPhaseAllReduce(2);
  plan["gpus"][0]["threadblocks"][0]["ops"].erase(2);  // rank 0's first signal
  RunOptions options = optionsFor(64, DataType::float32);
  options.timeout = std::chrono::milliseconds(300);
  try {
    runOnProcesses(planOf(plan), options);
    FAIL() << "the deadlock went unnoticed";
  } catch (const TimeoutError& error) {
    EXPECT_THAT(error.what(), HasSubstr("rank 1 tb 0 step 10 (wait with rank 0 on channel 0) "
                                        "waited 0 s for signal number 2 from rank 0"));
  }
}

// Over tcp and ucx, port-channel puts and signals travel as messages, landed by each rank's
// receiver: port-channel plans run exactly, messages larger than a FIFO slot included.
class OneSidedOverMessages : public ::testing::TestWithParam<const char*> {};

TEST_P(OneSidedOverMessages, PortChannelPlansRunExactly) {
  for (int n : {2, 3}) {
    for (std::size_t count : {std::size_t{1000}, std::size_t{300'000}}) {
      SCOPED_TRACE(testing::Message() << n << " ranks, count " << count);
      RunOptions options = optionsFor(count, DataType::int32);
      options.transport = GetParam();
      options.iterations = 2;
      for (const nlohmann::json& plan : {plans::portAllGather(n), plans::portPacketAllGather(n)}) {
        const RunReport report = runOnProcesses(planOf(plan), options);
        EXPECT_TRUE(report.ok()) << report.firstWrong;
        EXPECT_EQ(report.checkedElements, static_cast<std::size_t>(n) * (n + 1) * count);
      }
    }
  }
}

TEST_P(OneSidedOverMessages, MemoryChannelsAreRefusedByName) {
  RunOptions options = optionsFor(64, DataType::float32);
  options.transport = GetParam();
  try {
    runOnProcesses(planOf(plans::twoPhaseAllReduce(2)), options);
    FAIL() << GetParam() << " took a memory-channel plan";
  } catch (const OptionError& error) {
    EXPECT_THAT(error.what(), HasSubstr("rank 0 tb 0 step 0 (put with rank 1) reaches rank 1's "
                                        "memory through a memory channel"));
    EXPECT_THAT(error.what(), HasSubstr(GetParam()));
  }
}

TEST_P(OneSidedOverMessages, ADeadlockTimesOutNamingTheStep) {
  nlohmann::json plan = plans::portAllGather(2);
  plan["gpus"][0]["threadblocks"][0]["ops"].erase(1);  // rank 0's put-with-signal
  RunOptions options = optionsFor(64, DataType::int32);
  options.transport = GetParam();
  options.timeout = std::chrono::milliseconds(300);
  try {
    runOnProcesses(planOf(plan), options);
    FAIL() << "the deadlock went unnoticed";
  } catch (const TimeoutError& error) {
    EXPECT_THAT(error.what(), HasSubstr("rank 1 tb 0 step 3 (wait with rank 0 on channel 0) "
                                        "waited 0 s for signal number 1 from rank 0"));
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, OneSidedOverMessages, ::testing::Values("tcp", "ucx"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

}  // namespace
}  // namespace chorus::runtime
