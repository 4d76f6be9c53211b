// Runs library algorithms on forked rank processes joined by TCP over loopback
// (runOnProcesses with transport "tcp", what `chorus run --transport tcp` does) and
// checks every output element exactly; then the failures such a run must report on every rank
// instead of hanging: a killed rank, a rank's own error and mismatched calls.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/time.h>

#include <chrono>
#include <string>

#include "compile_for_test.h"
#include "run_calls.h"
#include "runtime/interpreter.h"
#include "runtime/process_runner.h"
#include "support/error.h"

namespace chorus {
namespace {

using runtime::DataType;
using runtime::RankErrorKind;
using runtime::ReduceOp;
using ::testing::HasSubstr;
using testing_support::compileForTest;
using namespace std::chrono_literals;

runtime::RunReport runTcp(const ir::Algorithm& a, std::size_t count, DataType type, ReduceOp op,
                          int iterations = 1) {
  runtime::ProcessRunOptions options;
  options.transport = "tcp";
  options.count = count;
  options.type = type;
  options.op = op;
  options.iterations = iterations;
  options.timeout = 60s;
  options.fifo.slotBytes = 16 << 10;  // small slots: many tiles and credits
  // Small calls through the slots, larger ones by reference (sent from the rank's buffers).
  options.fifo.singleCopyBytes = count > 1000 ? 1 : 0;
  return runtime::runOnProcesses(a, options);
}

TEST(TcpRun, LibraryAlgorithmsAreExact) {
  struct Case {
    const char* name;
    int ranks;
    DataType type;
    ReduceOp op;
  };
  for (const Case& c : {Case{"allreduce.ring", 3, DataType::float32, ReduceOp::sum},
                        Case{"allgather.ring", 4, DataType::int32, ReduceOp::sum},
                        Case{"reducescatter.ring", 3, DataType::bfloat16, ReduceOp::max},
                        Case{"alltoall.direct", 3, DataType::int64, ReduceOp::sum},
                        Case{"broadcast.binomial", 4, DataType::uint8, ReduceOp::sum}}) {
    const auto a = compileForTest(c.name, c.ranks);
    // A count the chunking does not divide, and 200 KiB per block (many tiles, by reference).
    for (const std::size_t count : {std::size_t{777}, std::size_t{(200 << 10) / 4}}) {
      const auto report = runTcp(a, count, c.type, c.op);
      EXPECT_TRUE(report.ok()) << c.name << " count " << count << ": " << report.firstWrong;
      EXPECT_GE(report.checkedElements, count) << c.name;
    }
  }
}

TEST(TcpRun, BackToBackCallsAreExact) {
  const auto a = compileForTest("allreduce.ring", 3);
  const auto report = runTcp(a, 5000, DataType::float32, ReduceOp::sum, 4);
  EXPECT_TRUE(report.ok()) << report.firstWrong;
  EXPECT_EQ(report.checkedElements, 3u * 5000u);
}

// ---- failures: every rank gets an error, none waits out its timeout ----------------------------

runtime::RankProcessOptions tcpProcessOptions(int nranks) {
  runtime::RankProcessOptions options;
  options.nranks = nranks;
  options.transport = "tcp";
  options.fifo.slotBytes = 16 << 10;
  options.timeout = 60s;
  options.waitLimit = 120s;
  return options;
}

// Runs `rank`'s part of `a` on `count` elements `calls` times (see run_calls.h).
runtime::RunReport runCallsOverTcp(const ir::Algorithm& a, int rank,
                                   transport::ConnectionSet& connections, std::size_t count,
                                   int calls) {
  return testing_support::runCalls(a, rank, connections, count, calls, 60s);
}

// A lost peer is a CommError on the others, not a timeout (the 60 s deadline would make it
// one): that is what shows they did not wait.
TEST(TcpRunFailures, RankKilledBeforeItsPartFailsEveryOtherRankNamingIt) {
  const auto a = compileForTest("allreduce.ring", 4);
  const auto outcomes = runtime::runRankProcesses(
      tcpProcessOptions(4), [&](int rank, transport::ConnectionSet& connections) {
        if (rank == 2) ::raise(SIGKILL);
        return runCallsOverTcp(a, rank, connections, 4096, 1);
      });
  ASSERT_EQ(outcomes.size(), 4u);
  EXPECT_FALSE(outcomes[2].reported);
  EXPECT_THAT(outcomes[2].error, HasSubstr("rank 2 (pid"));
  EXPECT_THAT(outcomes[2].error, HasSubstr("killed by signal 9"));
  for (int r : {0, 1, 3}) {
    EXPECT_EQ(outcomes[r].errorKind, RankErrorKind::comm)
        << "rank " << r << ": " << outcomes[r].error;
    EXPECT_THAT(outcomes[r].error, HasSubstr("lost rank 2")) << "rank " << r;
  }
  try {
    runtime::throwFirstFailure(outcomes);
    FAIL() << "expected a CommError";
  } catch (const CommError& e) {
    EXPECT_THAT(e.what(), HasSubstr("rank 2 (pid"));
  }
}

TEST(TcpRunFailures, RankKilledMidCollectiveFailsEveryOtherRank) {
  const auto a = compileForTest("allreduce.ring", 3);
  const auto outcomes = runtime::runRankProcesses(
      tcpProcessOptions(3), [&](int rank, transport::ConnectionSet& connections) {
        if (rank == 1) {
          // SIGALRM's default action ends the process wherever it is, mid-call.
          itimerval timer{};
          timer.it_value.tv_usec = 50'000;
          ::setitimer(ITIMER_REAL, &timer, nullptr);
        }
        return runCallsOverTcp(a, rank, connections, 1 << 14, 1'000'000);
      });
  EXPECT_THAT(outcomes[1].error, HasSubstr("killed by signal 14"));
  for (int r : {0, 2}) {
    EXPECT_EQ(outcomes[r].errorKind, RankErrorKind::comm)
        << "rank " << r << ": " << outcomes[r].error;
    EXPECT_THAT(outcomes[r].error, HasSubstr("rank 1")) << "rank " << r;
  }
}

TEST(TcpRunFailures, RankErrorReachesEveryRankAndIsRethrownWithItsType) {
  const auto a = compileForTest("allreduce.ring", 3);
  const auto outcomes = runtime::runRankProcesses(
      tcpProcessOptions(3), [&](int rank, transport::ConnectionSet& connections) {
        if (rank == 1) throw OptionError("rank 1 did not like its options");
        return runCallsOverTcp(a, rank, connections, 4096, 1);
      });
  EXPECT_EQ(outcomes[1].errorKind, RankErrorKind::option);
  for (int r : {0, 2}) {
    EXPECT_EQ(outcomes[r].errorKind, RankErrorKind::comm)
        << "rank " << r << ": " << outcomes[r].error;
    EXPECT_THAT(outcomes[r].error, HasSubstr("rank 1 failed: rank 1 did not like its options"));
  }
  try {
    runtime::throwFirstFailure(outcomes);
    FAIL() << "expected an OptionError";
  } catch (const OptionError& e) {
    EXPECT_STREQ(e.what(), "rank 1 did not like its options");
  }
}

TEST(TcpRunFailures, MismatchedCountsAreNamed) {
  const auto a = compileForTest("allreduce.ring", 2);
  const auto outcomes = runtime::runRankProcesses(
      tcpProcessOptions(2), [&](int rank, transport::ConnectionSet& connections) {
        return runCallsOverTcp(a, rank, connections, rank == 0 ? 64 : 32, 1);
      });
  EXPECT_FALSE(outcomes[0].ok());
  EXPECT_FALSE(outcomes[1].ok());
  const std::string all = outcomes[0].error + " | " + outcomes[1].error;
  EXPECT_THAT(all, HasSubstr("sent a message for a different call"));
  EXPECT_THROW(runtime::throwFirstFailure(outcomes), CommError);
}

}  // namespace
}  // namespace chorus
