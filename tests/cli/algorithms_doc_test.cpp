// docs/algorithms.md's table is the registry's (`chorus algorithms --markdown`), so the
// document cannot drift from the library; and every entry documents its cost.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "algorithms/registry.h"
#include "cli_run.h"

namespace {

std::string generatedSection(const std::string& doc) {
  const std::string begin = "<!-- BEGIN chorus algorithms --markdown -->\n";
  const std::string end = "<!-- END chorus algorithms --markdown -->";
  const std::size_t from = doc.find(begin);
  const std::size_t to = doc.find(end);
  if (from == std::string::npos || to == std::string::npos || to < from) return "(no markers)";
  return doc.substr(from + begin.size(), to - from - begin.size());
}

TEST(AlgorithmsDocTest, TableMatchesTheRegistry) {
  std::ifstream in(std::string(CHORUS_SOURCE_DIR) + "/docs/algorithms.md");
  ASSERT_TRUE(in) << "docs/algorithms.md is missing";
  std::stringstream doc;
  doc << in.rdbuf();
  const chorus::testing_support::CommandResult result =
      chorus::testing_support::runCli("algorithms --markdown");
  ASSERT_EQ(result.exitCode, 0) << result.output;
  const std::string& table = result.output;
  ASSERT_FALSE(table.empty());
  EXPECT_EQ(generatedSection(doc.str()), table)
      << "docs/algorithms.md is out of date; run scripts/update_algorithms_doc.sh";
}

TEST(AlgorithmsDocTest, EveryAlgorithmDocumentsItsCost) {
  for (const chorus::algorithms::AlgorithmInfo& info : chorus::algorithms::listAlgorithms()) {
    EXPECT_FALSE(info.steps.empty()) << info.name;
    EXPECT_FALSE(info.bytesSent.empty()) << info.name;
    EXPECT_THAT(info.cost, ::testing::HasSubstr("α")) << info.name;
    EXPECT_FALSE(info.winsWhen.empty()) << info.name;
  }
}

}  // namespace
