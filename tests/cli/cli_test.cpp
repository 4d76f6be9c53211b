// End-to-end tests of the `chorus` CLI binary (path in CHORUS_CLI): exit codes, messages and
// the compile | verify pipeline of the CLI contract (docs/design.md "CLI contract").
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "cli_run.h"

namespace {

using chorus::testing_support::cli;
using chorus::testing_support::CommandResult;
using chorus::testing_support::runCli;
using chorus::testing_support::runShell;
using ::testing::HasSubstr;

std::string lowercase(std::string text) {
  for (char& c : text)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

TEST(CliTest, AlgorithmsJsonListsEveryAlgorithm) {
  const CommandResult result = runCli("algorithms --json");
  ASSERT_EQ(result.exitCode, 0) << result.output;
  for (const char* name :
       {"allreduce.ring", "allgather.ring", "reducescatter.ring", "allreduce.allpairs",
        "allreduce.hierarchical", "alltoall.two-step", "alltoall.direct", "alltonext"}) {
    EXPECT_THAT(result.output, HasSubstr(std::string("\"") + name + "\"")) << name;
  }
  EXPECT_THAT(result.output, HasSubstr("\"parameters\""));
}

TEST(CliTest, AlgorithmsTableShowsParameterDefaults) {
  const CommandResult result = runCli("algorithms");
  ASSERT_EQ(result.exitCode, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("channels=1"));
  EXPECT_THAT(result.output, HasSubstr("schedule=1"));
}

TEST(CliTest, CompileHierarchicalPipesIntoVerify) {
  const CommandResult result = runShell(
      cli() + " compile allreduce.hierarchical --nodes 2 --gpus-per-node 3 --format xml | " +
      cli() + " verify -");
  EXPECT_EQ(result.exitCode, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr(": ok"));
}

TEST(CliTest, CompileEveryFormat) {
  for (const char* format : {"xml", "json", "text", "dot"}) {
    const CommandResult result =
        runCli(std::string("compile allreduce.ring --ranks 4 --format ") + format);
    EXPECT_EQ(result.exitCode, 0) << format << ": " << result.output;
    EXPECT_FALSE(result.output.empty()) << format;
  }
}

TEST(CliTest, CompileWritesFileStatsAndDagPicture) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("chorus_cli_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string xml = (dir / "ring.xml").string();
  const std::string dag = (dir / "ring_dag.dot").string();
  const CommandResult result = runCli(
      "compile allreduce.ring --ranks 4 --set channels=2 "
      "--instances 2 --protocol LL --stats -o '" +
      xml + "' --dag-dot '" + dag + "'");
  EXPECT_EQ(result.exitCode, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("threadblocks"));
  EXPECT_TRUE(std::filesystem::exists(dag));
  const CommandResult verified = runCli("verify '" + xml + "'");
  EXPECT_EQ(verified.exitCode, 0) << verified.output;
  std::filesystem::remove_all(dir);
}

TEST(CliTest, UnknownAlgorithmIsUsageErrorNamingClosestMatch) {
  const CommandResult result = runCli("compile allreduce.rign --ranks 4");
  EXPECT_EQ(result.exitCode, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("chorus: error:"));
  EXPECT_THAT(result.output, HasSubstr("allreduce.ring"));
}

TEST(CliTest, BadSetKeyIsUsageError) {
  const CommandResult result = runCli("compile allreduce.ring --ranks 4 --set chanels=2");
  EXPECT_EQ(result.exitCode, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("chanels"));
  EXPECT_THAT(result.output, HasSubstr("channels"));
}

TEST(CliTest, RepeatedOptionsTakeOneValueEach) {
  const CommandResult result = runCli(
      "compile --set channels=2 --disable-pass prune-waits allreduce.ring --ranks 4 --format text");
  EXPECT_EQ(result.exitCode, 0) << result.output;
}

TEST(CliTest, MissingShapeIsUsageError) {
  const CommandResult result = runCli("compile allreduce.hierarchical --ranks 6");
  EXPECT_EQ(result.exitCode, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("--gpus-per-node"));
}

TEST(CliTest, BadOptionValuesAreUsageErrors) {
  EXPECT_EQ(runCli("compile allreduce.ring --ranks 4 --format pdf").exitCode, 2);
  EXPECT_EQ(runCli("compile allreduce.ring --ranks 4 --protocol fast").exitCode, 2);
  EXPECT_EQ(runCli("compile allreduce.ring --ranks 4 --disable-pass no-such-pass").exitCode, 2);
  EXPECT_EQ(runCli("compile allreduce.ring --ranks 1").exitCode, 2);
  EXPECT_EQ(runCli("frobnicate").exitCode, 2);
  EXPECT_EQ(runCli("").exitCode, 2);
}

TEST(CliTest, EverySubcommandHasHelp) {
  for (const char* command : {"", "algorithms ", "compile ", "verify "}) {
    const CommandResult result = runCli(std::string(command) + "--help");
    EXPECT_EQ(result.exitCode, 0) << command << result.output;
    EXPECT_THAT(lowercase(result.output), HasSubstr("usage")) << command;
  }
}

TEST(CliTest, VerifyAcceptsValidReferenceFile) {
  const CommandResult result =
      runCli(std::string("verify '") + CHORUS_SHARED_DIR +
             "/interop/msccl-xml/valid/allreduce_ring_4r_1ch_1inst_simple.xml'");
  EXPECT_EQ(result.exitCode, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("ok"));
}

TEST(CliTest, VerifyRejectsEachInvalidReferenceFileNamingRankAndChunk) {
  const std::filesystem::path dir =
      std::filesystem::path(CHORUS_SHARED_DIR) / "interop" / "msccl-xml" / "invalid";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".xml") continue;
    ++files;
    const CommandResult result = runCli("verify '" + entry.path().string() + "'");
    EXPECT_EQ(result.exitCode, 1) << entry.path() << "\n" << result.output;
    // A located finding: "rank R" and a chunk, as "chunk C" or "buffer[C]".
    const std::string text = lowercase(result.output);
    EXPECT_TRUE(std::regex_search(text, std::regex(R"(rank \d+)"))) << entry.path();
    EXPECT_TRUE(std::regex_search(text, std::regex(R"(chunk \d+|(input|output|scratch)\[\d+\])")))
        << entry.path();
  }
  EXPECT_GE(files, 3);
}

TEST(CliTest, VerifyMissingOrUnparsableFileIsUsageError) {
  const CommandResult missing = runCli("verify /nonexistent/chorus_missing.xml");
  EXPECT_EQ(missing.exitCode, 2) << missing.output;
  EXPECT_THAT(missing.output, HasSubstr("chorus_missing.xml"));
  const CommandResult garbage = runShell("echo '<algo name=' | " + cli() + " verify -");
  EXPECT_EQ(garbage.exitCode, 2) << garbage.output;
  EXPECT_THAT(garbage.output, HasSubstr("chorus: error:"));
}

TEST(CliRunTest, RunsALibraryAlgorithmAndChecksTheResult) {
  const CommandResult result =
      runCli("run allreduce.ring --ranks 3 --bytes 10000 --dtype int32 --op max");
  EXPECT_EQ(result.exitCode, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("on 3 ranks (thread transport)"));
  EXPECT_THAT(result.output, HasSubstr("int32 max: correct"));
}

TEST(CliRunTest, RunsAnMscclFileFromStandardInput) {
  const CommandResult result = runShell(
      "cat '" CHORUS_SHARED_DIR "/interop/msccl-xml/valid/allgather_ring_simple_4r.xml' | " +
      cli() + " run - --bytes 4K");
  EXPECT_EQ(result.exitCode, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("correct"));
}

TEST(CliRunTest, BadSizeAndUnknownTransportAreUsageErrors) {
  const CommandResult size = runCli("run allreduce.ring --ranks 2 --bytes 12Q");
  EXPECT_EQ(size.exitCode, 2) << size.output;
  EXPECT_THAT(size.output, HasSubstr("'12Q' is not a size"));
  const CommandResult transport = runCli("run allreduce.ring --ranks 2 --transport pigeon");
  EXPECT_EQ(transport.exitCode, 2) << transport.output;
  EXPECT_THAT(transport.output, HasSubstr("unknown --transport 'pigeon'; use thread"));
  EXPECT_THAT(transport.output, HasSubstr("shm, tcp or ucx"));
}

TEST(CliRunTest, RunsOnSharedMemoryProcesses) {
  const CommandResult r = runCli("run allreduce.ring --ranks 3 --transport shm --bytes 1M");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("correct"));
}

}  // namespace
