// Every MSCCL XML vector in shared/interop/msccl-xml parses, and survives XML, JSON and text
// round trips unchanged; files from the 2025 msccl-tools tree are reproduced byte for byte.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "ir/algorithm.h"
#include "ir/formats.h"
#include "ir/json_format.h"
#include "ir/msccl_xml.h"
#include "ir/text_format.h"

namespace chorus::ir {
namespace {

namespace fs = std::filesystem;

const fs::path kXmlDir = fs::path(CHORUS_SHARED_DIR) / "interop" / "msccl-xml";

std::vector<std::string> listVectors() {
  std::vector<std::string> files;
  for (const char* folder : {"valid", "invalid", "ambiguous"}) {
    const fs::path dir = kXmlDir / folder;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.is_regular_file() && entry.path().extension() == ".xml") {
        files.push_back(fs::relative(entry.path(), kXmlDir).generic_string());
      }
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

std::size_t xmlStepCount(const std::string& text, const std::string& type = "") {
  const std::string needle = type.empty() ? "<step " : "type=\"" + type + "\"";
  std::size_t count = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

class MscclVectorTest : public ::testing::TestWithParam<std::string> {
 protected:
  fs::path path() const { return kXmlDir / GetParam(); }
};

TEST(MscclVectors, DirectoryIsPresent) {
  EXPECT_GE(listVectors().size(), 44u) << "looked in " << kXmlDir;
}

TEST_P(MscclVectorTest, ParsesAndRoundTripsThroughXml) {
  const std::vector<Algorithm> algorithms = readMscclXmlFile(path().string());
  ASSERT_FALSE(algorithms.empty());
  // Default options: the reference files fit the executor's limits.
  const MscclWriteOptions options;
  const std::string written = writeMscclXml(algorithms, options);
  EXPECT_EQ(readMscclXml(written, "rewritten.xml"), algorithms);
  EXPECT_EQ(writeMscclXml(readMscclXml(written, "rewritten.xml"), options), written);
  EXPECT_EQ(readAlgorithmsFile(path().string()), algorithms);
}

TEST_P(MscclVectorTest, RoundTripsThroughJsonAndText) {
  for (const Algorithm& algorithm : readMscclXmlFile(path().string())) {
    EXPECT_EQ(readJson(writeJson(algorithm), "a.json"), algorithm);
    EXPECT_EQ(parseText(printText(algorithm), "a.txt"), algorithm);
    for (Format format : {Format::json, Format::text}) {
      EXPECT_EQ(readAlgorithms(writeAlgorithm(algorithm, format), "a"),
                std::vector<Algorithm>{algorithm});
    }
  }
}

TEST_P(MscclVectorTest, IrIsCanonical) {
  for (const Algorithm& algorithm : readMscclXmlFile(path().string())) {
    ASSERT_EQ(static_cast<int>(algorithm.ranks.size()), algorithm.nranks);
    for (const RankProgram& program : algorithm.ranks) {
      for (const Threadblock& tb : program.threadblocks) {
        for (const Step& step : tb.steps) {
          EXPECT_NE(step.op, OpKind::nop);
          EXPECT_TRUE(std::is_sorted(step.deps.begin(), step.deps.end()));
          for (const StepRef& dep : step.deps) {
            EXPECT_NE(dep.tb, tb.id);
            EXPECT_TRUE(program.threadblocks.at(dep.tb).steps.at(dep.step).hasDependents);
          }
        }
      }
    }
  }
}

std::string withoutDependencies(const std::string& xml) {
  static const std::regex kDeps(R"( depid="-?[0-9]+" deps="-?[0-9]+")");
  return std::regex_replace(xml, kDeps, "");
}

// Every file is reproduced byte for byte, up to three differences: msccl-tools orders a step's
// dependencies arbitrarily between its nops and the step, while chorus writes them sorted (the
// first on the step); 2023 files lack outofplace/minBytes/maxBytes, which chorus always writes;
// the broadcast vector lacks the chorus `root` extension.
TEST_P(MscclVectorTest, RewritesReferenceBytes) {
  const std::string original = slurp(path());
  std::string written = writeMscclXml(readMscclXml(original, GetParam()));
  if (original.find("outofplace=") == std::string::npos) {
    written = std::regex_replace(written,
                                 std::regex(R"( outofplace="[01]" minBytes="0" maxBytes="0")"), "");
  }
  if (original.find("root=") == std::string::npos) {
    written = std::regex_replace(written, std::regex(R"( root="0")"), "");
  }
  if (xmlStepCount(original, "nop") == 0) {
    EXPECT_EQ(written, original);
  } else {
    EXPECT_EQ(withoutDependencies(written), withoutDependencies(original));
  }
}

std::string testName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  name = name.substr(0, name.size() - 4);
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(MscclXml, MscclVectorTest, ::testing::ValuesIn(listVectors()), testName);

// ---------------------------------------------------------------------------------------------
// Specific facts about individual vectors

std::vector<Algorithm> readVector(const std::string& relative) {
  return readMscclXmlFile((kXmlDir / relative).string());
}

TEST(MscclVectorFacts, AllPairsAllReduceFoldsItsNops) {
  const std::string relative = "valid/allreduce_allpairs_8r_1inst_LL.xml";
  const std::string text = slurp(kXmlDir / relative);
  EXPECT_EQ(xmlStepCount(text), 1336u);
  EXPECT_EQ(xmlStepCount(text, "nop"), 664u);
  const std::vector<Algorithm> algorithms = readVector(relative);
  ASSERT_EQ(algorithms.size(), 1u);
  const Algorithm& a = algorithms[0];
  EXPECT_EQ(a.name, "allreduce_pairs");
  EXPECT_EQ(a.nranks, 8);
  EXPECT_EQ(a.protocol, Protocol::ll);
  EXPECT_EQ(a.collective, CollectiveKind::allreduce);
  EXPECT_TRUE(a.inPlace);
  EXPECT_EQ(a.chunksPerLoop, 64);
  EXPECT_EQ(threadblockCount(a), 64u);
  EXPECT_EQ(stepCount(a), 672u);
  EXPECT_EQ(channelCount(a), 1);
  // rank 0 tb 0: six nops then the first re, which therefore waits on tbs 1..7.
  const Step& firstReduce = a.ranks[0].threadblocks[0].steps[0];
  EXPECT_EQ(firstReduce.op, OpKind::reduce);
  ASSERT_EQ(firstReduce.deps.size(), 7u);
  for (int i = 0; i < 7; ++i)
    EXPECT_EQ(firstReduce.deps[i].tb, i + 1);
  EXPECT_EQ(a.ranks[0].inputChunks, 64);
  EXPECT_EQ(a.ranks[0].outputChunks, 0);
  EXPECT_EQ(a.ranks[0].scratchChunks, 56);
  // Writing inserts the same number of nops back.
  const std::string written = writeMscclXml(a);
  EXPECT_EQ(xmlStepCount(written), 1336u);
  EXPECT_EQ(xmlStepCount(written, "nop"), 664u);
}

TEST(MscclVectorFacts, ReduceScatterUsesTheExecutorSpelling) {
  for (const char* file :
       {"valid/reducescatter_allpairs_4r_simple.xml", "valid/reducescatter_allpairs_8r_LL.xml",
        "invalid/reducescatter_ring_outofplace_4r.xml"}) {
    EXPECT_THAT(slurp(kXmlDir / file), ::testing::HasSubstr("coll=\"reducescatter\""));
    const Algorithm a = readVector(file).at(0);
    EXPECT_EQ(a.collective, CollectiveKind::reducescatter) << file;
    EXPECT_THAT(writeMscclXml(a, {.legacyNames = true}),
                ::testing::HasSubstr("coll=\"reduce_scatter\""));
  }
  EXPECT_FALSE(readVector("invalid/reducescatter_ring_outofplace_4r.xml").at(0).inPlace);
}

TEST(MscclVectorFacts, Ms2023FilesLackTheNewerAttributes) {
  for (const char* file : {"valid/ms2023_allreduce_hier_2nodes_x_4gpus_auto.xml",
                           "valid/ms2023_allreduce_ring_4r_1ch_1inst_simple.xml",
                           "valid/ms2023_alltoall_two_step_2nodes_x_4gpus.xml"}) {
    const std::string text = slurp(kXmlDir / file);
    EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("outofplace=")));
    EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("minBytes=")));
    EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("maxBytes=")));
    const Algorithm a = readVector(file).at(0);
    EXPECT_EQ(a.minBytes, 0u);
    EXPECT_EQ(a.maxBytes, 0u);
    const std::string written = writeMscclXml(a);
    EXPECT_THAT(written, ::testing::HasSubstr(" minBytes=\"0\" maxBytes=\"0\">"));
  }
  const Algorithm alltoall = readVector("valid/ms2023_alltoall_two_step_2nodes_x_4gpus.xml").at(0);
  EXPECT_EQ(alltoall.collective, CollectiveKind::alltoall);
  EXPECT_FALSE(alltoall.inPlace);
  // The 2023 and 2025 trees produce the same program for this example.
  const Algorithm newer = readVector("valid/allreduce_ring_4r_1ch_1inst_simple.xml").at(0);
  EXPECT_EQ(readVector("valid/ms2023_allreduce_ring_4r_1ch_1inst_simple.xml").at(0), newer);
}

TEST(MscclVectorFacts, CustomCollectiveFileHoldsTwoPrograms) {
  const std::vector<Algorithm> algorithms =
      readVector("valid/custom_collective_3r_two_programs.xml");
  ASSERT_EQ(algorithms.size(), 2u);
  for (const Algorithm& a : algorithms) {
    EXPECT_EQ(a.collective, CollectiveKind::custom);
    EXPECT_EQ(a.customName, "");
    EXPECT_EQ(a.nranks, 3);
    EXPECT_EQ(channelCount(a), 2);
  }
  EXPECT_EQ(algorithms[0].ranks[0].threadblocks.size(), 2u);
  // The second program forwards through rank 1: tb 1 waits on tb 0's receive.
  const auto& rank1 = algorithms[1].ranks[1].threadblocks;
  EXPECT_EQ(rank1[1].steps[0].deps, (std::vector<StepRef>{{0, 0}}));
  EXPECT_TRUE(rank1[0].steps[0].hasDependents);
}

TEST(MscclVectorFacts, AllToNextIsCustom) {
  const Algorithm a = readVector("valid/alltonext_forward_2nodes.xml").at(0);
  EXPECT_EQ(a.name, "alltonext-forward");
  EXPECT_EQ(a.collective, CollectiveKind::custom);
  EXPECT_EQ(a.nranks, 16);
  EXPECT_TRUE(a.inPlace);
}

TEST(MscclVectorFacts, BroadcastDefaultsToRootZero) {
  const Algorithm a = readVector("valid/broadcast_chain_4r_2chunks.xml").at(0);
  EXPECT_EQ(a.collective, CollectiveKind::broadcast);
  EXPECT_EQ(a.root, 0);
  EXPECT_THAT(writeMscclXml(a), ::testing::HasSubstr("maxBytes=\"0\" root=\"0\">"));
}

TEST(MscclVectorFacts, AmbiguousProbeKeepsTheLocalOperand) {
  // docs/ir.md, docs/sources.md "MSCCL XML and runtime": the runtime reads rrc's srcoff as the
  // local operand; chorus reads it the same way, so rank 1's rrc reduces into input[0] with its
  // (out-of-range) input[1].
  const Algorithm a = readVector("ambiguous/probe_rrc_cross_index_2r.xml").at(0);
  const Step& rrc = a.ranks[1].threadblocks[0].steps[0];
  EXPECT_EQ(rrc.op, OpKind::recvReduceCopy);
  EXPECT_EQ(rrc.srcBuffer, BufferKind::input);
  EXPECT_EQ(rrc.srcIndex, 1);
  EXPECT_EQ(rrc.dstIndex, 0);
  EXPECT_EQ(a.ranks[1].inputChunks, 1);
}

}  // namespace
}  // namespace chorus::ir
