// Runs library algorithms and the reference MSCCL XML files on the thread transport and checks
// every output element exactly (integer-valued data, so any reduction order is exact).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "compile_for_test.h"
#include "ir/msccl_xml.h"
#include "runtime/interpreter.h"
#include "runtime/thread_runner.h"
#include "support/error.h"
#include "valid_msccl_files.h"

namespace chorus {
namespace {

using runtime::DataType;
using runtime::ReduceOp;

runtime::ThreadRunReport run(const ir::Algorithm& a, std::size_t count,
                             DataType type = DataType::float32, ReduceOp op = ReduceOp::sum,
                             std::size_t slotBytes = 4096) {
  runtime::ThreadRunOptions options;
  options.count = count;
  options.type = type;
  options.op = op;
  options.timeout = std::chrono::milliseconds(60'000);
  options.fifo.slotBytes = slotBytes;  // small slots: many tiles, exercises pipelining
  return runtime::runOnThreads(a, options);
}

using testing_support::compileForTest;

struct LibraryCase {
  std::string algorithm;
  int ranks = 0, nodes = 0, gpus = 0;
  std::map<std::string, int> params = {};
};

class LibraryOnThreads : public ::testing::TestWithParam<LibraryCase> {};

TEST_P(LibraryOnThreads, ExactResultsAcrossCountsTypesAndOps) {
  const auto& c = GetParam();
  const auto a = compileForTest(c.algorithm, c.ranks, c.nodes, c.gpus, c.params);
  // Counts: tiny, not divisible by the chunking, divisible, and several tiles.
  for (std::size_t count :
       {std::size_t{1}, std::size_t{7}, std::size_t{1000}, std::size_t{4096}, std::size_t{70001}}) {
    const auto report = run(a, count);
    EXPECT_TRUE(report.ok()) << c.algorithm << " count " << count << ": " << report.firstWrong;
    EXPECT_GT(report.checkedElements, 0u);
  }
  for (DataType type : {DataType::int8, DataType::uint32, DataType::int64, DataType::float16,
                        DataType::bfloat16, DataType::float64})
    for (ReduceOp op :
         {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::avg}) {
      const auto report = run(a, 513, type, op);
      EXPECT_TRUE(report.ok()) << c.algorithm << " " << runtime::dataTypeName(type) << " "
                               << runtime::reduceOpName(op) << ": " << report.firstWrong;
    }
}

INSTANTIATE_TEST_SUITE_P(
    Registry, LibraryOnThreads,
    ::testing::Values(LibraryCase{"allreduce.ring", 4}, LibraryCase{"allreduce.ring", 3},
                      LibraryCase{"allreduce.allpairs", 4}, LibraryCase{"allgather.ring", 5},
                      LibraryCase{"reducescatter.ring", 4}, LibraryCase{"alltoall.direct", 3},
                      LibraryCase{"allreduce.hierarchical", 0, 2, 3},
                      LibraryCase{"alltoall.two-step", 0, 2, 2}, LibraryCase{"alltonext", 0, 2, 3},
                      LibraryCase{"alltonext", 0, 2, 3, {{"direction", 1}}}),
    [](const ::testing::TestParamInfo<LibraryCase>& info) {
      std::string name = info.param.algorithm + "_" + std::to_string(info.index);
      for (auto& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

TEST(LibraryOnThreads, InstancesAndLargeSlots) {
  algorithms::BuildRequest request;
  request.algorithm = "allreduce.ring";
  request.ranks = 4;
  request.instances = 2;
  request.params["channels"] = 2;
  const auto a = algorithms::compileAlgorithm(request).algorithm;
  const auto report = run(a, std::size_t{1} << 18, DataType::float32, ReduceOp::sum, 256 << 10);
  EXPECT_TRUE(report.ok()) << report.firstWrong;
}

// LL and LL128 plans on threads: the thread transport keeps Simple semantics (no flagged
// lines), and only the message cap (8 KiB, 64 KiB) changes the tiles. Exact either way.
TEST(LibraryOnThreads, LlAndLl128PlansAreExact) {
  for (ir::Protocol protocol : {ir::Protocol::ll, ir::Protocol::ll128}) {
    for (const char* name : {"allreduce.ring", "alltoall.direct"}) {
      algorithms::BuildRequest request;
      request.algorithm = name;
      request.ranks = 3;
      request.protocol = protocol;
      const auto a = algorithms::compileAlgorithm(request).algorithm;
      for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{70001}}) {
        const auto report = run(a, count, DataType::int32, ReduceOp::sum, 256 << 10);
        EXPECT_TRUE(report.ok()) << name << " " << ir::protocolName(protocol) << " count " << count
                                 << ": " << report.firstWrong;
      }
    }
  }
}

using testing_support::validFiles;

class MscclFileOnThreads : public ::testing::TestWithParam<std::string> {};

TEST_P(MscclFileOnThreads, ExactResult) {
  for (const auto& a : ir::readMscclXmlFile(GetParam())) {
    for (std::size_t count : {std::size_t{1}, std::size_t{777}, std::size_t{8192}}) {
      const auto report = run(a, count);
      EXPECT_TRUE(report.ok()) << a.name << " count " << count << ": " << report.firstWrong;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Interop, MscclFileOnThreads, ::testing::ValuesIn(validFiles()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = std::filesystem::path(info.param).stem().string();
                           for (auto& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

TEST(RuntimeErrors, MismatchedCountsAreNamedOnEveryRank) {
  const auto a = compileForTest("allreduce.ring", 2);
  transport::ThreadGroup group(2, {8, 4096});
  std::vector<float> in0(64, 1), out0(64), in1(32, 1), out1(32);
  std::string errors[2];
  std::thread t0([&] {
    try {
      runtime::executeRank(a, 0, {in0.data(), out0.data(), 64}, group.rank(0),
                           {std::chrono::milliseconds(5000)});
    } catch (const UserError& e) {
      errors[0] = e.what();
    }
  });
  std::thread t1([&] {
    try {
      runtime::executeRank(a, 1, {in1.data(), out1.data(), 32}, group.rank(1),
                           {std::chrono::milliseconds(5000)});
    } catch (const UserError& e) {
      errors[1] = e.what();
    }
  });
  t0.join();
  t1.join();
  const std::string all = errors[0] + " | " + errors[1];
  EXPECT_NE(all.find("not running the same algorithm, count or datatype"), std::string::npos)
      << all;
  EXPECT_FALSE(errors[0].empty());
  EXPECT_FALSE(errors[1].empty());
}

TEST(RuntimeErrors, MissingPeerTimesOutWithTheWaitNamed) {
  const auto a = compileForTest("allreduce.ring", 2);
  transport::ThreadGroup group(2, {8, 4096});
  std::vector<float> in(64, 1), out(64);
  try {
    runtime::executeRank(a, 0, {in.data(), out.data(), 64}, group.rank(0),
                         {std::chrono::milliseconds(200)});
    FAIL() << "expected a timeout";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("timed out after 200 ms"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(group.rank(1).abortReason().empty());
}

// Caller-given inputs (chorus.run in Python): the outputs come back and are checked against
// the same inputs; floating results within the relative tolerance.
TEST(GivenInputs, OutputsReturnedAndChecked) {
  const ir::Algorithm a = compileForTest("allgather.ring", 3);
  std::vector<std::vector<float>> inputs = {{1.5f, 2.5f}, {3.5f, 4.5f}, {5.5f, 6.5f}};
  runtime::ThreadRunOptions options;
  options.count = 2;
  options.relativeTolerance = 1e-6;
  for (const auto& in : inputs)
    options.givenInputs.push_back(in.data());
  std::vector<std::vector<std::uint8_t>> outputs;
  const auto report = runtime::runOnThreads(a, options, &outputs);
  EXPECT_TRUE(report.ok()) << report.firstWrong;
  ASSERT_EQ(outputs.size(), 3u);
  std::vector<float> got(6);
  ASSERT_EQ(outputs[2].size(), got.size() * sizeof(float));
  std::memcpy(got.data(), outputs[2].data(), outputs[2].size());
  EXPECT_EQ(got, (std::vector<float>{1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f}));
}

TEST(GivenInputs, WrongInputCountIsAnOptionError) {
  const ir::Algorithm a = compileForTest("allgather.ring", 3);
  float one = 1;
  runtime::ThreadRunOptions options;
  options.count = 1;
  options.givenInputs = {&one};
  EXPECT_THROW(runtime::runOnThreads(a, options), OptionError);
}

}  // namespace
}  // namespace chorus
