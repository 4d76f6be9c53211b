// The device interpreter's host build (src/device/host_group.h) over the whole algorithm
// library: every library algorithm at 2 to 8 ranks (node-shaped ones at every N x G from 2 to 8
// ranks), each named parameter value, every protocol, a count no chunking divides and one
// element, small slots (many tiles, so senders wait for the receiver's acks), two calls on one
// group (message numbers continue across calls); every output element exact. Then the
// reference MSCCL XML files, every type and operator, buffers that do not match the plan's
// in-place flag, and the errors: a deadlock, a message of the wrong size, plans the
// interpreter refuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "../runtime/compile_for_test.h"
#include "../verify/ir_builders.h"
#include "algorithms/registry.h"
#include "device/host_group.h"
#include "ir/msccl_xml.h"
#include "library_cases.h"
#include "support/error.h"

namespace chorus {
namespace {

using runtime::DataType;
using testing_support::exactRun;
using testing_support::libraryCaseName;
using testing_support::LibrarySweepCase;

class DeviceInterpreterLibrary : public ::testing::TestWithParam<LibrarySweepCase> {};

TEST_P(DeviceInterpreterLibrary, ExactOnEveryProtocol) {
  const LibrarySweepCase& c = GetParam();
  for (ir::Protocol protocol : {ir::Protocol::simple, ir::Protocol::ll, ir::Protocol::ll128}) {
    const ir::Algorithm algorithm = testing_support::compileSweepCase(c, protocol);
    device::HostGroupOptions group;
    group.slotBytes = 1024;  // many tiles on Simple: senders wait for acks of the 8 slots
    for (std::size_t count : {std::size_t{1}, std::size_t{1031}}) {
      runtime::RunOptions options = exactRun(count);
      options.iterations = 2;
      const runtime::RunReport report = device::runKernelsOnHost(algorithm, options, group);
      EXPECT_TRUE(report.ok()) << libraryCaseName(c) << " " << ir::protocolName(protocol)
                               << " count " << count << ": " << report.firstWrong;
      EXPECT_GT(report.checkedElements, 0u);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, DeviceInterpreterLibrary,
                         ::testing::ValuesIn(testing_support::deviceSweepCases()),
                         [](const auto& info) { return libraryCaseName(info.param); });

TEST(DeviceInterpreter, RunsTheReferenceMscclFilesExactly) {
  testing_support::expectReferenceFilesExact(
      [](const ir::Algorithm& a, const runtime::RunOptions& o) {
        return device::runKernelsOnHost(a, o);
      },
      4099);
}

TEST(DeviceInterpreter, EveryTypeAndOperatorIsExact) {
  testing_support::expectEveryTypeAndOperatorExact(
      [](const ir::Algorithm& a, const runtime::RunOptions& o) {
        return device::runKernelsOnHost(a, o);
      },
      3, 777);
}

// Large messages on the default 64 KiB slots: whole-line LL128 and 16-byte vector paths.
TEST(DeviceInterpreter, LargeCallsOnDefaultSlots) {
  for (ir::Protocol protocol : {ir::Protocol::simple, ir::Protocol::ll, ir::Protocol::ll128}) {
    const ir::Algorithm algorithm =
        testing_support::compileOnProtocol("allgather.ring", 4, protocol);
    const runtime::RunReport report =
        device::runKernelsOnHost(algorithm, exactRun(std::size_t{1} << 18, DataType::float32));
    EXPECT_TRUE(report.ok()) << ir::protocolName(protocol) << ": " << report.firstWrong;
  }
}

// rank r's element i holds r + 1 + i % 7 (exact in float).
std::vector<std::vector<float>> rampInputs(int ranks, std::size_t count) {
  std::vector<std::vector<float>> in(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r)
    for (std::size_t i = 0; i < count; ++i)
      in[static_cast<std::size_t>(r)].push_back(
          static_cast<float>(r + 1 + static_cast<int>(i % 7)));
  return in;
}

TEST(DeviceInterpreter, InPlacePlanCalledWithSeparateBuffers) {
  const ir::Algorithm a = testing_support::compileForTest("allreduce.ring", 3);
  ASSERT_TRUE(a.inPlace);
  for (std::size_t count : {std::size_t{3000}, std::size_t{3001}}) {
    auto in = rampInputs(3, count);
    const auto original = in;
    std::vector<std::vector<float>> out(3, std::vector<float>(count, -1));
    std::vector<runtime::CollectiveArgs> args;
    for (int r = 0; r < 3; ++r)
      args.push_back({in[static_cast<std::size_t>(r)].data(),
                      out[static_cast<std::size_t>(r)].data(), count, DataType::float32,
                      ReduceOp::sum});
    device::HostKernelGroup(a).run(args, std::chrono::milliseconds(60'000));
    for (int r = 0; r < 3; ++r) {
      EXPECT_EQ(in[static_cast<std::size_t>(r)], original[static_cast<std::size_t>(r)]);
      for (std::size_t i = 0; i < count; ++i)
        ASSERT_EQ(out[static_cast<std::size_t>(r)][i], static_cast<float>(6 + 3 * (i % 7)))
            << "count " << count << " rank " << r << " [" << i << "]";
    }
  }
}

TEST(DeviceInterpreter, OutOfPlaceAllGatherPlanCalledInPlace) {
  const ir::Algorithm a = testing_support::compileForTest("allgather.ring", 4);
  ASSERT_FALSE(a.inPlace);
  const std::size_t count = 257;
  std::vector<std::vector<float>> out(4, std::vector<float>(4 * count, -1));
  std::vector<runtime::CollectiveArgs> args;
  for (std::size_t r = 0; r < 4; ++r) {
    for (std::size_t i = 0; i < count; ++i)
      out[r][r * count + i] = static_cast<float>(r * 1000 + i);
    args.push_back(
        {out[r].data() + r * count, out[r].data(), count, DataType::float32, ReduceOp::sum});
  }
  device::HostKernelGroup(a).run(args, std::chrono::milliseconds(60'000));
  for (std::size_t r = 0; r < 4; ++r)
    for (std::size_t b = 0; b < 4; ++b)
      for (std::size_t i = 0; i < count; ++i)
        ASSERT_EQ(out[r][b * count + i], static_cast<float>(b * 1000 + i))
            << "rank " << r << " block " << b << " [" << i << "]";
}

TEST(DeviceInterpreterErrors, ADeadlockTimesOutNamingTheWait) {
  runtime::RunOptions options = exactRun(64, DataType::float32);
  options.timeout = std::chrono::milliseconds(300);
  try {
    device::runKernelsOnHost(testing_support::deadlockingPlan(), options);
    FAIL() << "a deadlocked plan returned";
  } catch (const TimeoutError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("threadblock 0 step 0 (recv)"), std::string::npos) << what;
    EXPECT_NE(what.find("waited over 300 ms for a message from rank"), std::string::npos) << what;
  }
}

// Rank 0 sends two chunks where rank 1 receives one.
ir::Algorithm mismatchedPlan() {
  using ir::BufferKind;
  using ir::OpKind;
  using verify::testing::makeStep;
  using verify::testing::makeTb;
  ir::Algorithm a =
      verify::testing::makeAlgorithm("mismatch", ir::CollectiveKind::allreduce, 2, 2, true);
  for (int r = 0; r < 2; ++r)
    a.ranks[static_cast<std::size_t>(r)].inputChunks = 2;
  ir::Threadblock sender = makeTb(0, 1, -1);
  sender.steps.push_back(makeStep(OpKind::send, BufferKind::input, 0, BufferKind::input, 0, 2));
  a.ranks[0].threadblocks = {sender};
  ir::Threadblock receiver = makeTb(0, -1, 0);
  receiver.steps.push_back(makeStep(OpKind::recv, BufferKind::input, 0, BufferKind::input, 0, 1));
  a.ranks[1].threadblocks = {receiver};
  return a;
}

TEST(DeviceInterpreterErrors, AMessageOfTheWrongSizeIsNamed) {
  try {
    device::runKernelsOnHost(mismatchedPlan(), exactRun(64, DataType::float32));
    FAIL() << "a mismatched plan returned";
  } catch (const CommError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 1 threadblock 0 step 0 (recv)"), std::string::npos) << what;
    EXPECT_NE(what.find("received a message of 256 bytes from rank 0 where it expects 128"),
              std::string::npos)
        << what;
  }
}

TEST(DeviceInterpreterErrors, TwoBlocksOnOneConnectionAreRefused) {
  ir::Algorithm a = verify::testing::makeRingAllReduce(3);
  ir::Threadblock copy = a.ranks[0].threadblocks[0];
  copy.id = 1;
  a.ranks[0].threadblocks.push_back(copy);
  try {
    device::HostKernelGroup group(a);
    FAIL() << "two blocks on one connection were accepted";
  } catch (const PlanError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 threadblocks 0 and 1 both send to rank 1 on "
                                         "channel 0"),
              std::string::npos)
        << e.what();
  }
}

TEST(DeviceInterpreterErrors, ASendNoBlockReceivesIsRefused) {
  ir::Algorithm a = verify::testing::makeRingAllReduce(3);
  a.ranks[1].threadblocks[0].recvPeer = 2;  // rank 0 sends to 1, but 1 now listens to 2
  EXPECT_THROW(device::HostKernelGroup{a}, PlanError);
}

}  // namespace
}  // namespace chorus
