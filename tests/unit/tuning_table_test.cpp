// Algorithm choices with settings ("ring{channels=2}"), tuning files (parse, checks, JSON round
// trip, lookup) and their place in plan selection: after CHORUS_ALGO and CHORUS_ALGO_DIR,
// before the built-in defaults; the shipped table parses and every entry compiles.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "selection/algorithm_choice.h"
#include "selection/plan_cache.h"
#include "selection/plan_selector.h"
#include "selection/tuning_table.h"
#include "support/error.h"

namespace chorus::selection {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string userErrorOf(const std::function<void()>& action) {
  try {
    action();
  } catch (const UserError& error) {
    return error.what();
  }
  return "(no error)";
}

// ---- algorithm choices ------------------------------------------------------------------------

TEST(AlgorithmChoiceTest, ParsesSettingsAndDescribesCanonically) {
  const AlgorithmChoice choice = parseAlgorithmChoice(
      "ring{ protocol=ll128, instances=2,channels=2 }", ir::CollectiveKind::allreduce, "test");
  EXPECT_EQ(choice.algorithm, "allreduce.ring");
  EXPECT_EQ(choice.params.at("channels"), 2);
  EXPECT_EQ(choice.instances, 2);
  EXPECT_EQ(choice.protocol, ir::Protocol::ll128);
  EXPECT_EQ(choice.describe(), "allreduce.ring{channels=2,instances=2,protocol=ll128}");
  // Defaults are left out of the description; a description parses back to the same choice.
  const AlgorithmChoice plain =
      parseAlgorithmChoice("allreduce.ring{channels=1}", ir::CollectiveKind::allreduce, "test");
  EXPECT_EQ(plain.describe(), "allreduce.ring");
  EXPECT_EQ(parseAlgorithmChoice(choice.describe(), ir::CollectiveKind::allreduce, "test"), choice);
}

TEST(AlgorithmChoiceTest, NodeShapedChoicesTakeNodes) {
  const AlgorithmChoice choice =
      parseAlgorithmChoice("two-step{nodes=2}", ir::CollectiveKind::alltoall, "test");
  const algorithms::BuildRequest request = choice.buildRequest(6, 0);
  EXPECT_EQ(request.nodes, 2);
  EXPECT_EQ(request.gpusPerNode, 3);
  EXPECT_THAT(userErrorOf([&] { choice.buildRequest(5, 0); }), HasSubstr("needs a multiple of 2"));
  // Without nodes: one node of all ranks, or the ranks per node.
  const AlgorithmChoice bare = parseAlgorithmChoice("two-step", ir::CollectiveKind::alltoall, "t");
  EXPECT_EQ(bare.buildRequest(6, 3).nodes, 2);
  EXPECT_EQ(bare.buildRequest(6, 0).nodes, 1);
}

TEST(AlgorithmChoiceTest, BadSettingsAreNamed) {
  const auto parse = [](const char* text) {
    return userErrorOf(
        [&] { parseAlgorithmChoice(text, ir::CollectiveKind::allreduce, "entry X"); });
  };
  EXPECT_THAT(parse("ring{chanels=2}"), HasSubstr("'chanels' is not a setting of allreduce.ring"));
  EXPECT_THAT(parse("ring{chanels=2}"), HasSubstr("channels, instances, protocol"));
  EXPECT_THAT(parse("ring{channels=two}"), HasSubstr("channels=two is not a whole number"));
  EXPECT_THAT(parse("ring{protocol=fast}"), HasSubstr("protocol=fast is unknown"));
  EXPECT_THAT(parse("ring{nodes=2}"), HasSubstr("sized by ranks alone"));
  EXPECT_THAT(parse("ring{channels}"), HasSubstr("needs the form key=value"));
  EXPECT_THAT(parse("ring{channels=2"), HasSubstr("must close with '}'"));
  EXPECT_THAT(parse("rign"), HasSubstr("unknown allreduce algorithm 'rign'"));
  EXPECT_THAT(parse("ring{channels=2}"), StartsWith("(no error)"));
  EXPECT_THAT(userErrorOf([] {
                parseAlgorithmChoice("binomial{root=1}", ir::CollectiveKind::broadcast, "e");
              }),
              HasSubstr("the root comes from each call"));
}

// ---- tuning files -----------------------------------------------------------------------------

std::string tableJson(const std::string& entries, const std::string& collective = "allreduce",
                      int ranks = 4, const std::string& transport = "shm") {
  return R"({"collective": ")" + collective + R"(", "ranks": )" + std::to_string(ranks) +
         R"(, "transport": ")" + transport + R"(", "entries": [)" + entries + "]}";
}

std::string fileJson(const std::string& tables) {
  return R"({"format": "chorus-tuning/1", "machine": "test", "command": "none", "tables": [)" +
         tables + "]}";
}

const std::string kTwoEntries =
    R"({"min_bytes": 0, "max_bytes": 4096, "algorithm": "allreduce.oneshot"},
       {"min_bytes": 4096, "max_bytes": null, "algorithm": "ring{channels=2}"})";

TEST(TuningFileTest, ParsesLooksUpAndRoundTrips) {
  const TuningFile file = parseTuningFile(
      fileJson(tableJson(kTwoEntries) + "," + tableJson(kTwoEntries, "allreduce", 4, "thread")),
      "t.json");
  ASSERT_EQ(file.tables.size(), 2u);
  const TuningTable* shm = file.find(ir::CollectiveKind::allreduce, 4, "shm");
  ASSERT_NE(shm, nullptr);
  EXPECT_EQ(shm->transport, "shm");
  EXPECT_EQ(shm->entryFor(0).choice.algorithm, "allreduce.oneshot");
  EXPECT_EQ(shm->entryFor(4095).choice.algorithm, "allreduce.oneshot");
  EXPECT_EQ(shm->entryFor(4096).choice.describe(), "allreduce.ring{channels=2}");
  EXPECT_EQ(shm->entryFor(UINT64_MAX - 1).choice.algorithm, "allreduce.ring");
  // Another transport's table serves when there is none for this one; other sizes get none.
  EXPECT_NE(file.find(ir::CollectiveKind::allreduce, 4, "tcp"), nullptr);
  EXPECT_EQ(file.find(ir::CollectiveKind::allreduce, 3, "shm"), nullptr);
  EXPECT_EQ(file.find(ir::CollectiveKind::allgather, 4, "shm"), nullptr);

  const TuningFile again = parseTuningFile(tuningFileToJson(file), "again.json");
  ASSERT_EQ(again.tables.size(), 2u);
  EXPECT_EQ(again.tables[0].entries.size(), 2u);
  EXPECT_EQ(again.tables[0].entries[1].choice, file.tables[0].entries[1].choice);
  EXPECT_EQ(tuningFileToJson(again), tuningFileToJson(file));
}

TEST(TuningFileTest, PutReplacesTheSameTable) {
  TuningFile file = parseTuningFile(fileJson(tableJson(kTwoEntries)), "t.json");
  TuningTable table = file.tables[0];
  table.entries.resize(1);
  table.entries[0].range = {0, kUnlimitedBytes};
  file.put(table);
  ASSERT_EQ(file.tables.size(), 1u);
  EXPECT_EQ(file.tables[0].entries.size(), 1u);
  table.ranks = 2;
  file.put(table);
  EXPECT_EQ(file.tables.size(), 2u);
}

TEST(TuningFileTest, MistakesAreNamedWithTheTableAndEntry) {
  const auto parse = [](const std::string& text) {
    return userErrorOf([&] { parseTuningFile(text, "bad.json"); });
  };
  EXPECT_THAT(parse("{"), HasSubstr("bad.json: not valid JSON"));
  EXPECT_THAT(parse(R"({"format": "other", "tables": []})"), HasSubstr("this chorus reads"));
  EXPECT_THAT(parse(fileJson(tableJson(kTwoEntries, "allredux"))),
              HasSubstr("unknown collective 'allredux'"));
  EXPECT_THAT(parse(fileJson(tableJson(kTwoEntries, "allreduce", 0))),
              HasSubstr("\"ranks\" must be a whole number in 1..256"));
  EXPECT_THAT(parse(fileJson(tableJson(R"({"min_bytes": 0, "max_bytes": null,
                                          "algorithm": "allgather.ring"})"))),
              HasSubstr("implements allgather, not allreduce"));
  const std::string gap = R"({"min_bytes": 0, "max_bytes": 100, "algorithm": "oneshot"},
                             {"min_bytes": 200, "max_bytes": null, "algorithm": "ring"})";
  EXPECT_THAT(parse(fileJson(tableJson(gap))), HasSubstr("starts at 200 B where 100 B"));
  const std::string bounded = R"({"min_bytes": 0, "max_bytes": 100, "algorithm": "ring"})";
  EXPECT_THAT(parse(fileJson(tableJson(bounded))), HasSubstr("\"max_bytes\": null"));
  EXPECT_THAT(parse(fileJson(tableJson(R"({"min_bytes": 0, "algorithm": "ring"})"))),
              HasSubstr("table 0 (allreduce 4 ranks shm) entry 0: missing \"max_bytes\""));
  EXPECT_THAT(parse(fileJson(tableJson(kTwoEntries) + "," + tableJson(kTwoEntries))),
              HasSubstr("a second table for allreduce at 4 ranks on shm"));
  EXPECT_THAT(userErrorOf([] { readTuningFile("/nonexistent/tuning.json"); }),
              HasSubstr("cannot read the tuning file '/nonexistent/tuning.json'"));
}

// ---- tuning tables in plan selection ----------------------------------------------------------

class TuningSelectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("chorus-tuning-" + std::to_string(::getpid()) + ".json");
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::string write(const std::string& text) {
    std::ofstream(path_) << text;
    return path_.string();
  }
  SelectionConfig config(const std::string& text, const std::string& algo = "") {
    SelectionConfig c;
    c.nranks = 4;
    c.transport = "shm";
    c.algo = algo;
    c.tuningFile = write(text);
    return c;
  }
  static runtime::PlanRequest request(ir::CollectiveKind kind, std::uint64_t bytes, int root = 0) {
    runtime::PlanRequest r;
    r.collective = kind;
    r.nranks = 4;
    r.bytes = bytes;
    r.root = root;
    return r;
  }
  std::filesystem::path path_;
};

TEST_F(TuningSelectionTest, TableEntriesChooseBySize) {
  PlanSelector selector(config(fileJson(tableJson(kTwoEntries))));
  const runtime::Plan small = selector.select(request(ir::CollectiveKind::allreduce, 1024));
  EXPECT_EQ(small.name, "allreduce.oneshot");
  EXPECT_THAT(small.source, HasSubstr("tuned for 0 B-4 KiB in " + path_.string()));
  const runtime::Plan large = selector.select(request(ir::CollectiveKind::allreduce, 1 << 20));
  EXPECT_EQ(large.name, "allreduce.ring{channels=2}");
  EXPECT_GE(ir::channelCount(*large.algorithm), 2);
  // A collective without a table in the file falls through to the shipped table (which has
  // 4-rank tables), then to the built-in default.
  const runtime::Plan gather = selector.select(request(ir::CollectiveKind::allgather, 1024));
  EXPECT_THAT(gather.source, HasSubstr("built-in tuning table"));
  SelectionConfig fiveRanks = config(fileJson(tableJson(kTwoEntries, "allreduce", 5)));
  fiveRanks.nranks = 5;
  PlanSelector five(fiveRanks);
  runtime::PlanRequest at5 = request(ir::CollectiveKind::allgather, 1024);
  at5.nranks = 5;
  EXPECT_THAT(five.select(at5).source, StartsWith("built-in default"));
}

TEST_F(TuningSelectionTest, OverridesComeFirstAndRootsComeFromTheCall) {
  PlanSelector selector(config(fileJson(tableJson(kTwoEntries) + "," +
                                        tableJson(R"({"min_bytes": 0, "max_bytes": null,
                                                      "algorithm": "binomial"})",
                                                  "broadcast")),
                               "allreduce=allpairs:0-2K"));
  EXPECT_EQ(selector.select(request(ir::CollectiveKind::allreduce, 1024)).name,
            "allreduce.allpairs");
  EXPECT_EQ(selector.select(request(ir::CollectiveKind::allreduce, 3000)).name,
            "allreduce.oneshot");
  const runtime::Plan rooted = selector.select(request(ir::CollectiveKind::broadcast, 64, 3));
  EXPECT_EQ(rooted.name, "broadcast.binomial");
  EXPECT_EQ(rooted.algorithm->root, 3);
}

TEST_F(TuningSelectionTest, AnEntryThatCannotRunFailsAtCreation) {
  const std::string nodes = R"({"min_bytes": 0, "max_bytes": null,
                                "algorithm": "alltoall.two-step{nodes=3}"})";
  EXPECT_THAT(userErrorOf([&] { PlanSelector{config(fileJson(tableJson(nodes, "alltoall")))}; }),
              HasSubstr("the alltoall entry alltoall.two-step{nodes=3} (0 B-max) cannot run"));
  const std::string range = R"({"min_bytes": 0, "max_bytes": null,
                                "algorithm": "ring{channels=99}"})";
  EXPECT_THAT(userErrorOf([&] { PlanSelector{config(fileJson(tableJson(range)))}; }),
              HasSubstr("channels=99 is out of range"));
  SelectionConfig off = config(fileJson(tableJson(kTwoEntries)));
  off.tuningFile = "off";
  EXPECT_THAT(PlanSelector(off).select(request(ir::CollectiveKind::allreduce, 1024)).source,
              StartsWith("built-in default"));
}

// The shipped table: it parses (builtinTuning() would throw), covers only built-in
// collectives, and every entry compiles for its rank count.
TEST(BuiltinTuningTest, EveryEntryCompiles) {
  const TuningFile& file = builtinTuning();
  for (const TuningTable& table : file.tables) {
    for (const TuningEntry& entry : table.entries) {
      EXPECT_NO_THROW(compiledPlan(entry.choice.probeRequest(table.ranks, 0)))
          << entry.choice.describe() << " " << table.ranks;
    }
  }
}

}  // namespace
}  // namespace chorus::selection
