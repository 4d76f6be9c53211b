// Runs every library algorithm and every reference MSCCL XML file on the shm transport (ranks
// are forked processes) and checks every output element exactly; then the failures a
// multi-process run must report fast and by name: a killed rank, mismatched calls, a rank's own
// error (rethrown with its type) and a hung rank.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <ostream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "algorithms/registry.h"
#include "compile_for_test.h"
#include "ir/msccl_xml.h"
#include "run_calls.h"
#include "runtime/interpreter.h"
#include "runtime/process_runner.h"
#include "support/error.h"
#include "valid_msccl_files.h"

namespace chorus {
namespace ir {
// Test names and failures print the protocol's name.
void PrintTo(Protocol protocol, std::ostream* os) {
  *os << protocolName(protocol);
}
}  // namespace ir
namespace {

using runtime::DataType;
using runtime::ReduceOp;
using ::testing::HasSubstr;
using testing_support::compileAtTestShape;
using testing_support::libraryAlgorithmNames;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// `byReference`: every message by reference (single copy through process_vm_readv).
runtime::RunReport runShm(const ir::Algorithm& a, std::size_t count,
                          DataType type = DataType::float32, ReduceOp op = ReduceOp::sum,
                          int iterations = 1, bool byReference = false) {
  runtime::ProcessRunOptions options;
  if (byReference) {
    options.fifo.singleCopyBytes = 1;
    options.alwaysByReference = true;
  }
  options.count = count;
  options.type = type;
  options.op = op;
  options.iterations = iterations;
  options.timeout = 30s;
  options.fifo.slotBytes = 16 << 10;  // small slots: a few hundred KiB make many tiles
  return runtime::runOnProcesses(a, options);
}

std::string testName(std::string name) {
  for (auto& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

// Each algorithm with each protocol: Simple, and LL and LL128, whose messages travel the shm
// FIFOs as flagged words and lines (ShmFifo, docs/runtime.md).
class LibraryOnShm : public ::testing::TestWithParam<std::tuple<std::string, ir::Protocol>> {};

TEST_P(LibraryOnShm, ExactResults) {
  const auto& [name, protocol] = GetParam();
  const auto& info = algorithms::findAlgorithm(name);
  const auto a = compileAtTestShape(info, protocol);
  ASSERT_EQ(a.protocol, protocol);
  // A different type and operator per algorithm keeps the test short and covers them all.
  const std::vector<std::pair<DataType, ReduceOp>> variants = {
      {DataType::int32, ReduceOp::max},    {DataType::float64, ReduceOp::min},
      {DataType::bfloat16, ReduceOp::sum}, {DataType::uint8, ReduceOp::prod},
      {DataType::int64, ReduceOp::avg},    {DataType::float16, ReduceOp::sum},
      {DataType::int8, ReduceOp::min},     {DataType::uint64, ReduceOp::max},
      {DataType::uint32, ReduceOp::sum},   {DataType::float32, ReduceOp::avg}};
  const std::vector<std::string> names = libraryAlgorithmNames();
  const auto index =
      static_cast<std::size_t>(std::find(names.begin(), names.end(), info.name) - names.begin());
  const auto [type, op] = variants[index % variants.size()];
  struct Case {
    std::size_t count;
    DataType type;
    ReduceOp op;
    bool byReference = false;
  };
  // One element, a count the chunking does not divide, and 300 KiB per block (many tiles); the
  // odd count again with every message by reference. Flagged protocols: 40 KiB per block (a
  // few 8 KiB LL tiles; odd-sized LL128 messages), never by reference (they do not go so).
  const std::vector<Case> cases =
      protocol == ir::Protocol::simple
          ? std::vector<Case>{Case{1, DataType::float32, ReduceOp::sum}, Case{777, type, op},
                              Case{(300 << 10) / 4, DataType::float32, ReduceOp::sum},
                              Case{777, type, op, true}}
          : std::vector<Case>{Case{1, DataType::float32, ReduceOp::sum}, Case{777, type, op},
                              Case{(40 << 10) / 4 + 1, DataType::float32, ReduceOp::sum}};
  for (const Case& c : cases) {
    // By reference: a second call, so every FIFO's receiver has probed its sender by then.
    const auto report = runShm(a, c.count, c.type, c.op, c.byReference ? 2 : 1, c.byReference);
    EXPECT_TRUE(report.ok()) << info.name << " " << ir::protocolName(protocol) << " count "
                             << c.count << " " << runtime::dataTypeName(c.type) << " "
                             << runtime::reduceOpName(c.op)
                             << (c.byReference ? " by reference" : "") << ": " << report.firstWrong;
    EXPECT_GT(report.checkedElements, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Registry, LibraryOnShm,
    ::testing::Combine(::testing::ValuesIn(libraryAlgorithmNames()),
                       ::testing::Values(ir::Protocol::simple, ir::Protocol::ll,
                                         ir::Protocol::ll128)),
    [](const ::testing::TestParamInfo<std::tuple<std::string, ir::Protocol>>& info) {
      const ir::Protocol protocol = std::get<1>(info.param);
      // Simple keeps the names the suite had before protocols were swept.
      return testName(std::get<0>(info.param)) +
             (protocol == ir::Protocol::simple ? ""
                                               : "_" + std::string(ir::protocolName(protocol)));
    });

TEST(LibraryOnShmIterations, BackToBackCallsReuseTheSegments) {
  const auto a = compileAtTestShape(algorithms::findAlgorithm("allreduce.ring"));
  const auto report = runShm(a, 5000, DataType::float32, ReduceOp::sum, 4);
  EXPECT_TRUE(report.ok()) << report.firstWrong;
  EXPECT_EQ(report.checkedElements, 3u * 5000u);
}

// Several MiB per rank with the default 256 KiB slots, for the default plan of each collective
// family (counts not divisible by the chunking included).
TEST(LibraryOnShmLarge, SeveralMebibytesPerRank) {
  for (const char* name : {"allreduce.ring", "allgather.ring", "reducescatter.ring",
                           "alltoall.direct", "broadcast.binomial"}) {
    const auto a = compileAtTestShape(algorithms::findAlgorithm(name));
    runtime::ProcessRunOptions options;
    options.count = (std::size_t{3} << 20) / 4 + 3;  // just over 3 MiB of float32
    options.timeout = std::chrono::milliseconds(60'000);
    const auto report = runtime::runOnProcesses(a, options);
    EXPECT_TRUE(report.ok()) << name << ": " << report.firstWrong;
    EXPECT_GT(report.checkedElements, options.count) << name;
  }
}

using testing_support::validFiles;

class MscclFileOnShm : public ::testing::TestWithParam<std::string> {};

TEST_P(MscclFileOnShm, ExactResult) {
  for (const auto& a : ir::readMscclXmlFile(GetParam())) {
    const auto report = runShm(a, 777, DataType::int32, ReduceOp::sum);
    EXPECT_TRUE(report.ok()) << a.name << ": " << report.firstWrong;
  }
}

INSTANTIATE_TEST_SUITE_P(Interop, MscclFileOnShm, ::testing::ValuesIn(validFiles()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return testName(std::filesystem::path(info.param).stem().string());
                         });

// ---- failures ----------------------------------------------------------------------------------

ir::Algorithm ringAllreduce(int ranks) {
  algorithms::BuildRequest request;
  request.algorithm = "allreduce.ring";
  request.ranks = ranks;
  return algorithms::compileAlgorithm(request).algorithm;
}

runtime::RankProcessOptions processOptions(int nranks) {
  runtime::RankProcessOptions options;
  options.nranks = nranks;
  options.fifo.slotBytes = 16 << 10;
  options.timeout = 30s;
  options.waitLimit = 60s;
  return options;
}

// Runs `rank`'s part of `a` on `count` elements `calls` times (see run_calls.h).
runtime::RunReport runCallsOverShm(const ir::Algorithm& a, int rank,
                                   transport::ConnectionSet& connections, std::size_t count,
                                   int calls) {
  return testing_support::runCalls(a, rank, connections, count, calls, 30s);
}

TEST(ShmRunFailures, RankKilledBeforeItsPartFailsEveryOtherRankFast) {
  const auto a = ringAllreduce(4);
  const auto start = Clock::now();
  const auto outcomes = runtime::runRankProcesses(
      processOptions(4), [&](int rank, transport::ConnectionSet& connections) {
        if (rank == 2) ::raise(SIGKILL);
        return runCallsOverShm(a, rank, connections, 4096, 1);
      });
  EXPECT_LT(Clock::now() - start, 5s) << "the others must not wait for the 30 s timeout";
  ASSERT_EQ(outcomes.size(), 4u);
  EXPECT_FALSE(outcomes[2].reported);
  EXPECT_THAT(outcomes[2].error, HasSubstr("rank 2 (pid"));
  EXPECT_THAT(outcomes[2].error, HasSubstr("killed by signal 9"));
  for (int r : {0, 1, 3}) {
    EXPECT_EQ(outcomes[r].errorKind, runtime::RankErrorKind::comm) << outcomes[r].error;
    EXPECT_THAT(outcomes[r].error, HasSubstr("rank 2 (pid")) << "rank " << r;
    EXPECT_THAT(outcomes[r].error, HasSubstr("exited before the group finished"));
  }
  try {
    runtime::throwFirstFailure(outcomes);
    FAIL() << "expected a CommError";
  } catch (const CommError& e) {
    EXPECT_THAT(e.what(), HasSubstr("rank 2 (pid"));
    EXPECT_THAT(e.what(), HasSubstr("killed by signal 9"));
  }
}

TEST(ShmRunFailures, RankKilledMidCollectiveFailsEveryOtherRankFast) {
  const auto a = ringAllreduce(3);
  const auto start = Clock::now();
  const auto outcomes = runtime::runRankProcesses(
      processOptions(3), [&](int rank, transport::ConnectionSet& connections) {
        // One call first, so every connection is up before rank 1 dies (under a sanitizer,
        // setting them up alone can take longer than the timer).
        runCallsOverShm(a, rank, connections, 1 << 14, 1);
        if (rank == 1) {
          // SIGALRM's default action ends the process wherever it is, mid-call.
          itimerval timer{};
          timer.it_value.tv_usec = 50'000;
          ::setitimer(ITIMER_REAL, &timer, nullptr);
        }
        return runCallsOverShm(a, rank, connections, 1 << 14, 1'000'000);
      });
  EXPECT_LT(Clock::now() - start, 5s);
  EXPECT_THAT(outcomes[1].error, HasSubstr("killed by signal 14"));
  for (int r : {0, 2}) {
    EXPECT_EQ(outcomes[r].errorKind, runtime::RankErrorKind::comm) << outcomes[r].error;
    EXPECT_THAT(outcomes[r].error, HasSubstr("rank 1 (pid")) << "rank " << r;
    EXPECT_THAT(outcomes[r].error, HasSubstr("aborted"));
  }
}

// A rank killed while its peers copy messages straight out of its memory: they fail fast and
// name it, whether they notice through the liveness check or a failed process_vm_readv.
TEST(ShmRunFailures, RankKilledWhilePeersReadItsMemoryFailsThemFast) {
  const auto a = compileAtTestShape(algorithms::findAlgorithm("allgather.direct"));
  const auto start = Clock::now();
  runtime::RankProcessOptions options = processOptions(3);
  options.fifo.singleCopyBytes = 1;
  const auto outcomes =
      runtime::runRankProcesses(options, [&](int rank, transport::ConnectionSet& connections) {
        if (rank == 1) {
          itimerval timer{};
          timer.it_value.tv_usec = 50'000;
          ::setitimer(ITIMER_REAL, &timer, nullptr);
        }
        return testing_support::runCalls(a, rank, connections, 1 << 16, 1'000'000, 30s, true);
      });
  EXPECT_LT(Clock::now() - start, 5s);
  EXPECT_THAT(outcomes[1].error, HasSubstr("killed by signal 14"));
  for (int r : {0, 2}) {
    EXPECT_EQ(outcomes[r].errorKind, runtime::RankErrorKind::comm) << outcomes[r].error;
    EXPECT_THAT(outcomes[r].error, HasSubstr("rank 1")) << "rank " << r;
  }
}

TEST(ShmRunFailures, MismatchedCountsAreNamed) {
  const auto a = ringAllreduce(2);
  const auto start = Clock::now();
  const auto outcomes = runtime::runRankProcesses(
      processOptions(2), [&](int rank, transport::ConnectionSet& connections) {
        return runCallsOverShm(a, rank, connections, rank == 0 ? 64 : 32, 1);
      });
  EXPECT_LT(Clock::now() - start, 5s);
  EXPECT_FALSE(outcomes[0].ok());
  EXPECT_FALSE(outcomes[1].ok());
  const std::string all = outcomes[0].error + " | " + outcomes[1].error;
  EXPECT_THAT(all, HasSubstr("sent a message for a different call"));
  EXPECT_THAT(all, ::testing::ContainsRegex("it is running .*\\(count (32|64) float32 sum\\)"));
  EXPECT_THROW(runtime::throwFirstFailure(outcomes), CommError);
}

TEST(ShmRunFailures, RankErrorIsRethrownWithItsType) {
  const auto a = ringAllreduce(3);
  const auto outcomes = runtime::runRankProcesses(
      processOptions(3), [&](int rank, transport::ConnectionSet& connections) {
        if (rank == 1) throw OptionError("rank 1 did not like its options");
        return runCallsOverShm(a, rank, connections, 4096, 1);
      });
  EXPECT_EQ(outcomes[1].errorKind, runtime::RankErrorKind::option);
  EXPECT_THAT(outcomes[0].error, HasSubstr("rank 1 failed: rank 1 did not like its options"));
  try {
    runtime::throwFirstFailure(outcomes);
    FAIL() << "expected an OptionError";
  } catch (const OptionError& e) {
    EXPECT_STREQ(e.what(), "rank 1 did not like its options");
  }
}

TEST(ShmRunFailures, HungRankIsKilledAndNamed) {
  auto options = processOptions(2);
  options.waitLimit = 1500ms;
  const auto outcomes =
      runtime::runRankProcesses(options, [&](int rank, transport::ConnectionSet&) {
        if (rank == 1) ::pause();
        return runtime::RunReport{};
      });
  EXPECT_TRUE(outcomes[0].ok()) << outcomes[0].error;
  EXPECT_EQ(outcomes[1].errorKind, runtime::RankErrorKind::timeout);
  EXPECT_THAT(outcomes[1].error, HasSubstr("rank 1 (pid"));
  EXPECT_THAT(outcomes[1].error, HasSubstr("was still running after 1500 ms and was killed"));
  EXPECT_THROW(runtime::throwFirstFailure(outcomes), TimeoutError);
}

}  // namespace
}  // namespace chorus
