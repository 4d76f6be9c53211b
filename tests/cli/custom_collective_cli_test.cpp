// `chorus verify|run|bench` on custom collectives: only an exact collective name selects a
// postcondition, --collective NAME names it for a file that does not, an unknown custom
// collective is reported as not checked (exit 0; 1 with --strict), and --collective mistakes are
// usage errors (exit 2).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli_run.h"

namespace {

using chorus::testing_support::CommandResult;
using chorus::testing_support::runCli;
using ::testing::HasSubstr;
using ::testing::Not;

std::string readText(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void writeText(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

// Replaces the one occurrence of `from` in `text` (a test failure if there is none).
std::string replaceOnce(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "'" << from << "' not found";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

class CustomCollectiveCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("chorus_custom_collective_cli_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The library's backward AllToNext on 2 x 2 ranks as msccl-tools writes it: program name
  // "alltonext-backwards", coll="custom", no custom= attribute. `programName` renames it.
  std::string referenceBackwardFile(const std::string& programName = "alltonext-backwards") {
    const std::string generated = (dir_ / "generated.xml").string();
    const CommandResult compiled = runCli(
        "compile alltonext --nodes 2 --gpus-per-node 2 --set direction=backward --format xml -o '" +
        generated + "'");
    EXPECT_EQ(compiled.exitCode, 0) << compiled.output;
    std::string xml = readText(generated);
    EXPECT_THAT(xml, HasSubstr("coll=\"custom\""));
    xml = replaceOnce(xml, "<algo name=\"alltonext\"", "<algo name=\"" + programName + "\"");
    xml = replaceOnce(xml, " custom=\"alltonext-backward\"", "");
    const std::filesystem::path path = dir_ / (programName + ".xml");
    writeText(path, xml);
    return fmt::format("'{}'", path.string());
  }

  std::string compiledFile(const std::string& arguments, const std::string& name) {
    const std::string path = (dir_ / name).string();
    const CommandResult compiled =
        runCli("compile " + arguments + " --format xml -o '" + path + "'");
    EXPECT_EQ(compiled.exitCode, 0) << compiled.output;
    return fmt::format("'{}'", path);
  }

  std::filesystem::path dir_;
};

TEST_F(CustomCollectiveCli, ReferenceBackwardFileIsCheckedAgainstItsOwnDefinition) {
  const std::string file = referenceBackwardFile();
  const CommandResult verified = runCli("verify " + file);
  EXPECT_EQ(verified.exitCode, 0) << verified.output;
  EXPECT_THAT(verified.output, HasSubstr("[alltonext-backwards]: ok: postcondition, deadlock"));
  EXPECT_THAT(verified.output, Not(HasSubstr("not checked")));

  const CommandResult ran = runCli("run " + file + " --bytes 64K");
  EXPECT_EQ(ran.exitCode, 0) << ran.output;
  EXPECT_THAT(ran.output, HasSubstr("'alltonext-backwards' on 4 ranks"));
  EXPECT_THAT(ran.output, HasSubstr("correct ("));
}

TEST_F(CustomCollectiveCli, CollectiveFlagSelectsTheDefinition) {
  // Judged as the forward AllToNext, the backward program is wrong: the flag is what decides.
  const std::string file = referenceBackwardFile();
  const CommandResult verified = runCli("verify " + file + " --collective alltonext");
  EXPECT_EQ(verified.exitCode, 1) << verified.output;
  EXPECT_THAT(verified.output, HasSubstr("finding(s)"));
  EXPECT_THAT(verified.output, HasSubstr("postcondition: rank "));

  const CommandResult ran = runCli("run " + file + " --bytes 4K --collective alltonext");
  EXPECT_EQ(ran.exitCode, 1) << ran.output;
  EXPECT_THAT(ran.output, HasSubstr("WRONG"));

  // An alias of the file's collective agrees with it.
  const CommandResult alias = runCli("verify " + file + " --collective alltonext-backward");
  EXPECT_EQ(alias.exitCode, 0) << alias.output;
  EXPECT_THAT(alias.output, HasSubstr("ok: postcondition"));
}

TEST_F(CustomCollectiveCli, UnknownCustomCollectiveIsNotCheckedAndStrictFails) {
  const std::string file = referenceBackwardFile("mystery-shift");
  const CommandResult verified = runCli("verify " + file);
  EXPECT_EQ(verified.exitCode, 0) << verified.output;
  EXPECT_THAT(verified.output,
              HasSubstr("postcondition not checked: custom collective 'mystery-shift' is "
                        "unknown to chorus; name the collective it implements with "
                        "--collective NAME (known: alltonext, alltonext-backward"));

  const CommandResult strict = runCli("verify --strict " + file);
  EXPECT_EQ(strict.exitCode, 1) << strict.output;
  EXPECT_THAT(strict.output, HasSubstr("postcondition not checked"));
  EXPECT_THAT(strict.output, HasSubstr("--strict"));

  const CommandResult ran = runCli("run " + file + " --bytes 4K");
  EXPECT_EQ(ran.exitCode, 0) << ran.output;
  EXPECT_THAT(ran.output, HasSubstr("ran, NOT checked: chorus does not know what custom "
                                    "collective 'mystery-shift' computes; name it with "
                                    "--collective NAME (known: alltonext"));
  const CommandResult ranStrict = runCli("run " + file + " --bytes 4K --strict");
  EXPECT_EQ(ranStrict.exitCode, 1) << ranStrict.output;
  EXPECT_THAT(ranStrict.output, HasSubstr("NOT checked"));

  // Named, the same file is checked.
  const CommandResult named =
      runCli("verify --strict " + file + " --collective alltonext-backward");
  EXPECT_EQ(named.exitCode, 0) << named.output;
  EXPECT_THAT(named.output, HasSubstr("ok: postcondition"));
  const CommandResult namedRun =
      runCli("run " + file + " --bytes 4K --strict --collective alltonext-backwards");
  EXPECT_EQ(namedRun.exitCode, 0) << namedRun.output;
  EXPECT_THAT(namedRun.output, HasSubstr("correct ("));
}

TEST_F(CustomCollectiveCli, PrefixOfTheProgramNameDoesNotSelectAPostcondition) {
  // "alltonext_foo" starts like AllToNext but is not its name.
  const std::string file = referenceBackwardFile("alltonext_foo");
  const CommandResult verified = runCli("verify " + file);
  EXPECT_EQ(verified.exitCode, 0) << verified.output;
  EXPECT_THAT(verified.output,
              HasSubstr("postcondition not checked: custom collective 'alltonext_foo'"));
}

TEST_F(CustomCollectiveCli, UnknownCollectiveNameIsAUsageError) {
  const std::string file = referenceBackwardFile();
  for (const std::string& command : {"verify " + file, "run " + file + " --bytes 4K"}) {
    const CommandResult result = runCli(command + " --collective alltonext_foo");
    EXPECT_EQ(result.exitCode, 2) << command << ": " << result.output;
    EXPECT_THAT(result.output, HasSubstr("--collective 'alltonext_foo' is not a collective "
                                         "chorus knows; custom collectives: alltonext, "
                                         "alltonext-backward, alltonext-backwards, "
                                         "alltonext-forward, and group reductions such as "
                                         "group-reduction:0,1;2,3"))
        << command;
  }
  const CommandResult bench = runCli("bench allreduce --ranks 2 -b 8 -e 8 --collective nosuch");
  EXPECT_EQ(bench.exitCode, 2) << bench.output;
  EXPECT_THAT(bench.output, HasSubstr("--collective 'nosuch' is not a collective"));
}

TEST_F(CustomCollectiveCli, ContradictingCollectiveIsAUsageError) {
  const std::string ring = compiledFile("allreduce.ring --ranks 4", "ring.xml");
  for (const std::string& command : {"verify " + ring, "run " + ring + " --bytes 4K"}) {
    const CommandResult result = runCli(command + " --collective alltonext");
    EXPECT_EQ(result.exitCode, 2) << command << ": " << result.output;
    EXPECT_THAT(result.output, HasSubstr("--collective alltonext contradicts"));
    EXPECT_THAT(result.output, HasSubstr("the plan says it implements allreduce")) << command;
  }
  // Naming the file's own built-in collective is fine.
  const CommandResult same = runCli("verify " + ring + " --collective allreduce");
  EXPECT_EQ(same.exitCode, 0) << same.output;

  // A file that names its custom collective (custom="alltonext-backward") keeps it.
  const std::string backward =
      compiledFile("alltonext --nodes 2 --gpus-per-node 2 --set direction=backward", "b.xml");
  const CommandResult named = runCli("verify " + backward + " --collective alltonext");
  EXPECT_EQ(named.exitCode, 2) << named.output;
  EXPECT_THAT(named.output, HasSubstr("the plan says it implements the custom collective "
                                      "'alltonext-backward'"));
  // A custom file is not made a built-in collective by the flag.
  const CommandResult builtin = runCli("verify " + backward + " --collective allgather");
  EXPECT_EQ(builtin.exitCode, 2) << builtin.output;
  EXPECT_THAT(builtin.output, HasSubstr("--collective allgather contradicts"));

  // chorus bench measures COLL: --collective must agree with it and with an --algo file.
  const CommandResult bench = runCli("bench allreduce --ranks 2 -b 8 -e 8 --collective alltonext");
  EXPECT_EQ(bench.exitCode, 2) << bench.output;
  EXPECT_THAT(bench.output,
              HasSubstr("--collective alltonext contradicts the benchmarked collective allreduce"));
  const CommandResult benchFile =
      runCli("bench allgather --ranks 4 -b 8 -e 8 --algo " + ring + " --collective allgather");
  EXPECT_EQ(benchFile.exitCode, 2) << benchFile.output;
  EXPECT_THAT(benchFile.output, HasSubstr("the plan says it implements allreduce"));
}

TEST_F(CustomCollectiveCli, LibraryBackwardAllToNextRuns) {
  const CommandResult ran = runCli(
      "run alltonext --nodes 2 --gpus-per-node 3 --set direction=backward --bytes 64K --strict");
  EXPECT_EQ(ran.exitCode, 0) << ran.output;
  EXPECT_THAT(ran.output, HasSubstr("correct ("));
  const CommandResult bad =
      runCli("compile alltonext --nodes 2 --gpus-per-node 2 --set direction=up");
  EXPECT_EQ(bad.exitCode, 2) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("use forward|backward"));
}

}  // namespace
