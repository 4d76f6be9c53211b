// Verifier: large programs verify quickly (no timing asserted; a slow verifier shows up as a
// slow test).
#include <gtest/gtest.h>

#include "ir_builders.h"
#include "verify/verify.h"

namespace chorus::verify {
namespace {

TEST(VerifyScale, RingAllReduceOn128Ranks) {
  const ir::Algorithm a = testing::makeRingAllReduce(128);
  const VerifyReport report = verifyAlgorithm(a);
  EXPECT_TRUE(report.ok()) << report.describe();
  EXPECT_TRUE(report.postconditionChecked);
}

TEST(VerifyScale, BrokenRingOn128RanksIsCaughtAndCapped) {
  ir::Algorithm a = testing::makeRingAllReduce(128);
  auto& steps = a.ranks[64].threadblocks[0].steps;
  std::swap(steps[3], steps[4]);
  const VerifyReport report = verifyAlgorithm(a);
  EXPECT_FALSE(report.ok());
  EXPECT_LE(report.findings.size(), VerifyOptions{}.maxFindings);
}

}  // namespace
}  // namespace chorus::verify
