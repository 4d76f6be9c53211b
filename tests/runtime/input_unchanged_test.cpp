// The runners' input check: an out-of-place collective must leave every rank's input as it was
// before the call (NCCL's `const void* sendbuff`); a changed input element counts as wrong and
// is named. The plan that writes its input is run unverified, as the verifier refuses it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "compile_for_test.h"
#include "ir/msccl_xml.h"
#include "runtime/process_runner.h"
#include "runtime/run_check.h"
#include "runtime/thread_runner.h"

namespace chorus {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// msccl-tools' out-of-place ReduceScatter ring: the right output, reduced inside the input.
ir::Algorithm reduceInsideInput() {
  const auto plans = ir::readMscclXmlFile(
      CHORUS_SHARED_DIR "/interop/msccl-xml/invalid/reducescatter_ring_outofplace_4r.xml");
  EXPECT_EQ(plans.size(), 1u);
  EXPECT_FALSE(plans.at(0).inPlace);
  return plans.at(0);
}

runtime::RunOptions smallRun() {
  runtime::RunOptions options;
  options.count = 1000;
  options.timeout = std::chrono::milliseconds(60'000);
  options.fifo.slotBytes = 4096;
  return options;
}

TEST(InputUnchanged, ChangedElementIsWrongAndNamed) {
  const ir::Algorithm a = reduceInsideInput();
  runtime::RunOptions options = smallRun();
  runtime::RankBuffers buffers(a, 1, options);
  buffers.reset();
  runtime::RunReport report;
  runtime::checkRankInput(a, 1, options, buffers.input(), &report);
  EXPECT_TRUE(report.ok()) << report.firstWrong;
  EXPECT_EQ(report.checkedElements, 4 * options.count);  // ReduceScatter input: n x count

  const float changed = 5;
  std::memcpy(const_cast<void*>(buffers.input()), &changed, sizeof changed);
  report = {};
  runtime::checkRankInput(a, 1, options, buffers.input(), &report);
  EXPECT_EQ(report.wrongElements, 1u);
  EXPECT_EQ(report.firstWrong,
            "rank 1 input[0]: changed from -2 to 5 (an out-of-place collective must leave its "
            "input unchanged)");
}

TEST(InputUnchanged, InPlaceInputIsTheOutputAndNotCompared) {
  ir::Algorithm inPlace = reduceInsideInput();
  inPlace.inPlace = true;
  runtime::RunOptions options = smallRun();
  runtime::RankBuffers buffers(inPlace, 0, options);
  buffers.reset();
  std::memset(const_cast<void*>(buffers.input()), 0x7f, 4);
  runtime::RunReport report;
  runtime::checkRankInput(inPlace, 0, options, buffers.input(), &report);
  EXPECT_EQ(report.checkedElements, 0u);
  EXPECT_TRUE(report.ok());
}

TEST(InputUnchanged, ThreadRunCountsChangedInputsAsWrong) {
  const ir::Algorithm a = reduceInsideInput();
  const runtime::RunReport report = runtime::runOnThreads(a, smallRun());
  EXPECT_FALSE(report.ok());
  EXPECT_GT(report.wrongElements, 0u);
  // The outputs are right: rank 0's output is checked first, then its input.
  EXPECT_THAT(report.firstWrong, StartsWith("rank 0 input["));
  EXPECT_THAT(report.firstWrong, HasSubstr("must leave its input unchanged"));
  // Outputs (n x count) and inputs (n x n x count) were all checked.
  EXPECT_EQ(report.checkedElements, 4 * 1000u + 16 * 1000u);
}

TEST(InputUnchanged, ProcessRunCountsChangedInputsAsWrong) {
  const ir::Algorithm a = reduceInsideInput();
  runtime::ProcessRunOptions options;
  static_cast<runtime::RunOptions&>(options) = smallRun();
  const runtime::RunReport report = runtime::runOnProcesses(a, options);
  EXPECT_FALSE(report.ok());
  EXPECT_GT(report.wrongElements, 0u);
  EXPECT_THAT(report.firstWrong, HasSubstr(" input["));
  EXPECT_THAT(report.firstWrong, HasSubstr("changed from"));
}

TEST(InputUnchanged, LibraryPlanLeavesItsInputAlone) {
  const ir::Algorithm a = testing_support::compileForTest("reducescatter.ring", 4, 0, 0);
  ASSERT_FALSE(a.inPlace);
  const runtime::RunReport report = runtime::runOnThreads(a, smallRun());
  EXPECT_TRUE(report.ok()) << report.firstWrong;
  EXPECT_EQ(report.checkedElements, 4 * 1000u + 16 * 1000u);
}

}  // namespace
}  // namespace chorus
