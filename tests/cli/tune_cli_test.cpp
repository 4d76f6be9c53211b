// `chorus tune` end to end on thread ranks (tiny sweep): it writes a tuning file that parses,
// keeps other tables of an existing file, and `chorus bench --algo auto` then runs the tuned
// choices; `--algo` takes settings (ring{channels=2}); LL/LL128 are tried up to --flagged-max.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_run.h"
#include "selection/tuning_table.h"

namespace {

using chorus::testing_support::CommandResult;
using chorus::testing_support::runCli;
using ::testing::HasSubstr;

class TuneCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("chorus-tune-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

constexpr const char* kTiny = "--transport thread -b 8 -e 4K -f 32 --budget 0.002 --batches 2";

TEST_F(TuneCliTest, WritesATableThatAutoSelectionUses) {
  const std::string file = path("tuning.json");
  const CommandResult tune =
      runCli(std::string("tune --ranks 2 --collectives allreduce,alltoall ") + kTiny + " -o " +
             file + " --report " + path("report.md"));
  ASSERT_EQ(tune.exitCode, 0) << tune.output;
  EXPECT_THAT(tune.output, HasSubstr("allreduce: "));
  EXPECT_THAT(tune.output, HasSubstr("auto/best"));
  const chorus::selection::TuningFile parsed = chorus::selection::readTuningFile(file);
  ASSERT_EQ(parsed.tables.size(), 2u);
  EXPECT_EQ(parsed.tables[0].ranks, 2);
  EXPECT_EQ(parsed.tables[0].transport, "thread");
  EXPECT_EQ(parsed.tables[0].measured.size(), 2u);  // 8 B and 256 B
  std::ifstream report(path("report.md"));
  std::string text((std::istreambuf_iterator<char>(report)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("| `allreduce.ring` |"));

  // A second run for another rank count keeps the first run's tables.
  const CommandResult more = runCli(std::string("tune --ranks 3 --collectives reduce ") + kTiny +
                                    " --verify-rounds 0 -o " + file);
  ASSERT_EQ(more.exitCode, 0) << more.output;
  EXPECT_EQ(chorus::selection::readTuningFile(file).tables.size(), 3u);

  // bench --algo auto runs what the table says for each size.
  const std::string chosen = parsed.tables[0].entryFor(8).choice.describe();
  const CommandResult bench = chorus::testing_support::runShell(
      "CHORUS_TUNING_FILE=" + file + " " + chorus::testing_support::cli() +
      " bench allreduce --ranks 2 -b 8 -e 8 --iters 2 --warmup 1");
  ASSERT_EQ(bench.exitCode, 0) << bench.output;
  EXPECT_THAT(bench.output, HasSubstr(chosen));
}

TEST_F(TuneCliTest, BadOptionsAreNamed) {
  EXPECT_THAT(runCli("tune --ranks 1").output, HasSubstr("--ranks must be at least 2"));
  EXPECT_THAT(runCli("tune --ranks 2 --collectives allredux").output,
              HasSubstr("unknown collective 'allredux'"));
  EXPECT_THAT(runCli("tune --ranks 2 --protocols fast").output, HasSubstr("'fast' is unknown"));
  const std::string notTuning = path("garbage.json");
  std::ofstream(notTuning) << "[1, 2]";
  const CommandResult result = runCli("tune --ranks 2 -o " + notTuning);
  EXPECT_EQ(result.exitCode, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("exists but is not a tuning file"));
}

// LL and LL128 candidates run only up to --flagged-max: with LL alone, only the sizes up to
// it get a winner, and that winner is an LL plan.
TEST_F(TuneCliTest, FlaggedProtocolsAreMeasuredUpToFlaggedMax) {
  const std::string file = path("ll.json");
  const CommandResult tune =
      runCli(std::string("tune --ranks 2 --collectives allreduce --protocols ll --flagged-max 8 "
                         "--no-params --verify-rounds 0 ") +
             kTiny + " -o " + file);
  ASSERT_EQ(tune.exitCode, 0) << tune.output;
  const chorus::selection::TuningFile parsed = chorus::selection::readTuningFile(file);
  ASSERT_EQ(parsed.tables.size(), 1u);
  ASSERT_EQ(parsed.tables[0].measured.size(), 1u) << tune.output;  // 8 B, not 256 B
  EXPECT_EQ(parsed.tables[0].measured[0].bytes, 8u);
  EXPECT_THAT(parsed.tables[0].measured[0].algorithm, HasSubstr("protocol=ll"));
  EXPECT_THAT(runCli("tune --ranks 2 --flagged-max lots").output,
              HasSubstr("--flagged-max: 'lots' is not a size"));
}

TEST_F(TuneCliTest, BenchAlgoTakesSettings) {
  const CommandResult result = runCli(
      "bench allreduce --ranks 3 -b 1K -e 1K --iters 2 --warmup 1 --algo 'ring{channels=2}'");
  ASSERT_EQ(result.exitCode, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("allreduce.ring{channels=2}"));
  const CommandResult bad = runCli("bench allreduce --ranks 3 --algo 'ring{chanels=2}'");
  EXPECT_EQ(bad.exitCode, 2) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("'chanels' is not a setting of allreduce.ring"));
}

}  // namespace
