// Interop: every MSCCL XML file produced by msccl-tools verifies (valid/), the known-wrong ones
// are rejected with the rank and chunk named (invalid/), and the cross-index receive-reduce
// probe (ambiguous/) is reported as an out-of-range local operand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "ir/collective.h"
#include "ir/msccl_xml.h"
#include "verify/verify.h"

namespace chorus {
namespace {

using ::testing::HasSubstr;

const std::string kXmlDir = CHORUS_SHARED_DIR "/interop/msccl-xml";

std::vector<std::string> xmlFiles(const std::string& folder) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(kXmlDir + "/" + folder))
    if (entry.path().extension() == ".xml") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

std::string fileName(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

TEST(MscclVerify, ValidFilesVerify) {
  const std::vector<std::string> files = xmlFiles("valid");
  ASSERT_EQ(files.size(), 39u);
  for (const std::string& path : files) {
    SCOPED_TRACE(fileName(path));
    const std::vector<ir::Algorithm> algorithms = ir::readMscclXmlFile(path);
    ASSERT_FALSE(algorithms.empty());
    for (const ir::Algorithm& algorithm : algorithms) {
      const verify::VerifyReport report = verify::verifyAlgorithm(algorithm);
      EXPECT_TRUE(report.ok()) << fileName(path) << " (" << algorithm.name << "):\n"
                               << report.describe();
      // Built-in collectives have a postcondition; a custom one only when its exact name is
      // one chorus knows (alltonext-forward: AllToNext), never by a prefix of the name.
      const std::vector<std::string> customNames = ir::customCollectiveNames();
      const bool known =
          algorithm.collective != ir::CollectiveKind::custom ||
          std::find(customNames.begin(), customNames.end(), algorithm.name) != customNames.end();
      EXPECT_EQ(report.postconditionChecked, known) << fileName(path) << ": " << report.describe();
    }
  }
}

TEST(MscclVerify, AllToNextIsCheckedAgainstItsDefinition) {
  const auto algorithms = ir::readMscclXmlFile(kXmlDir + "/valid/alltonext_forward_2nodes.xml");
  ASSERT_EQ(algorithms.size(), 1u);
  const verify::VerifyReport report = verify::verifyAlgorithm(algorithms[0]);
  EXPECT_TRUE(report.ok()) << report.describe();
  EXPECT_TRUE(report.postconditionChecked);
  EXPECT_THAT(report.describe(), HasSubstr("ok: postcondition, deadlock freedom"));
}

TEST(MscclVerify, InvalidFilesNameRankAndChunk) {
  const std::vector<std::string> files = xmlFiles("invalid");
  ASSERT_EQ(files.size(), 4u);
  for (const std::string& path : files) {
    SCOPED_TRACE(fileName(path));
    const auto algorithms = ir::readMscclXmlFile(path);
    ASSERT_EQ(algorithms.size(), 1u);
    const verify::VerifyReport report = verify::verifyAlgorithm(algorithms[0]);
    ASSERT_FALSE(report.ok());
    ASSERT_TRUE(report.postconditionChecked);
    const verify::Finding& first = report.findings[0];
    if (fileName(path) == "reducescatter_ring_outofplace_4r.xml") {
      // The output is right, but msccl-tools reduces inside the caller's send buffer.
      EXPECT_EQ(first.kind, verify::FindingKind::writesInput) << report.describe();
      EXPECT_EQ(first.tb, 0);
      EXPECT_EQ(first.step, 0);
      EXPECT_THAT(first.message, HasSubstr("rank 0 tb 0 step 0 (recvReduceCopy from rank 3 with "
                                           "input[0] into input[0]) writes input[0] of rank 0"));
      continue;
    }
    EXPECT_EQ(first.kind, verify::FindingKind::postcondition) << report.describe();
    EXPECT_GE(first.rank, 0);
    EXPECT_THAT(first.message, HasSubstr("rank "));
    EXPECT_TRUE(first.message.find("output[") != std::string::npos ||
                first.message.find("input[") != std::string::npos)
        << first.message;
  }
}

TEST(MscclVerify, DoubleCountingInPcieHierarchicalIsNamed) {
  const auto algorithms =
      ir::readMscclXmlFile(kXmlDir + "/invalid/allreduce_pcie_hier_8r_1inst.xml");
  ASSERT_EQ(algorithms.size(), 1u);
  const verify::VerifyReport report = verify::verifyAlgorithm(algorithms[0]);
  EXPECT_THAT(report.describe(), HasSubstr("is reduced twice")) << report.describe();
}

// msccl-tools writes the PEER's offset in srcoff of receive-reduce steps; the runtime (and
// chorus) read it as the local operand. In the probe, rank 1 has i_chunks=1 and its rrc reads
// input[1]: chorus reports it as malformed (out of the declared extent) and says why.
TEST(MscclVerify, CrossIndexReceiveReduceProbeIsMalformed) {
  const auto algorithms = ir::readMscclXmlFile(kXmlDir + "/ambiguous/probe_rrc_cross_index_2r.xml");
  ASSERT_EQ(algorithms.size(), 1u);
  const verify::VerifyReport report = verify::verifyAlgorithm(algorithms[0]);
  ASSERT_EQ(report.findings.size(), 1u) << report.describe();
  const verify::Finding& f = report.findings[0];
  EXPECT_EQ(f.kind, verify::FindingKind::malformed);
  EXPECT_EQ(f.rank, 1);
  EXPECT_EQ(f.tb, 0);
  EXPECT_EQ(f.step, 0);
  EXPECT_THAT(f.message, HasSubstr("reads input[1], beyond rank 1's declared inputChunks "
                                   "(i_chunks)=1"));
  EXPECT_THAT(f.message, HasSubstr("msccl-tools writes the peer's offset in srcoff of "
                                   "receive-reduce steps"));
}

}  // namespace
}  // namespace chorus
