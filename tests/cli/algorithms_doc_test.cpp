// docs/algorithms.md's table is the registry's (`chorus algorithms --markdown`), so the
// document cannot drift from the library; and every entry documents its cost.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "algorithms/registry.h"

namespace {

std::string capture(const std::string& command) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return output;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    output.append(buffer.data(), n);
  pclose(pipe);
  return output;
}

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
  const std::string table = capture(std::string("'") + CHORUS_CLI + "' algorithms --markdown");
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
