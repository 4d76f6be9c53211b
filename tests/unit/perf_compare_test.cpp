// bench_compare's rounds (perf layer): file names NAME.rN.json group into rounds of a library,
// table cells are medians over rounds, ratios the median of the per-round ratios, the plan
// column marks plans that changed between rounds. Never asserts a time.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "perf/compare.h"
#include "perf/memory_ceiling.h"
#include "perf/record.h"
#include "support/error.h"

namespace chorus::perf {
namespace {

BenchRecord record(const std::string& library, std::uint64_t bytes, bool inplace, double busbw,
                   const std::string& algorithm = "") {
  BenchRecord r;
  r.library = library;
  r.collective = "allreduce";
  r.algorithm = algorithm.empty() ? library + "-algorithm" : algorithm;
  r.ranks = 2;
  r.bytes = bytes;
  r.count = bytes / 4;
  r.inplace = inplace;
  r.timeUs = static_cast<double>(bytes) / (busbw * 1e3);
  r.minUs = r.timeUs;
  r.busbwGbps = busbw;
  r.algbwGbps = busbw;
  return r;
}

// A set with one out-of-place 1024 B record per round, busbw as given.
RecordSet oneCellRounds(const std::string& library, const std::vector<double>& busbws,
                        const std::vector<std::string>& plans = {}) {
  RecordSet set;
  set.label = library;
  for (std::size_t i = 0; i < busbws.size(); ++i)
    set.rounds.push_back(
        {record(library, 1024, false, busbws[i], i < plans.size() ? plans[i] : "")});
  return set;
}

// The whitespace-separated cells of the table row for `bytes` (the size is cell 0).
std::vector<std::string> rowOf(const std::string& table, std::uint64_t bytes) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<std::string> cells;
    for (std::string word; words >> word;)
      cells.push_back(word);
    if (!cells.empty() && cells[0] == std::to_string(bytes)) return cells;
  }
  return {};
}

TEST(PerfCompareRounds, RoundComesFromTheFileName) {
  EXPECT_EQ(roundOfFile("out/chorus.r2.json"), 2);
  EXPECT_EQ(roundOfFile("/tmp/x.y/openmpi.r12.json"), 12);
  EXPECT_EQ(roundOfFile("chorus.json"), 0);
  EXPECT_EQ(roundOfFile("chorus.r.json"), 0);
  EXPECT_EQ(roundOfFile("chorus.run.json"), 0);
  EXPECT_EQ(roundOfFile("chorus.r0.json"), 0);
  EXPECT_EQ(roundOfFile("chorus.r2x.json"), 0);
  EXPECT_EQ(roundOfFile("chorus.r99999.json"), 0);
}

TEST(PerfCompareRounds, FilesWithRoundsGroupPerLibraryInRoundOrder) {
  const std::vector<RecordFile> files = {
      {"d/chorus.r2.json", {record("chorus", 1024, false, 2.0)}},
      {"d/openmpi.r2.json", {record("openmpi", 1024, false, 20.0)}},
      {"d/chorus.r1.json", {record("chorus", 1024, false, 1.0)}},
      {"d/empty.r1.json", {}},
      {"d/chorus.r4.json", {record("chorus", 1024, false, 4.0)}},
  };
  const std::vector<RecordSet> sets = groupRecordFiles(files);
  ASSERT_EQ(sets.size(), 2u);
  EXPECT_EQ(sets[0].label, "chorus");
  ASSERT_EQ(sets[0].rounds.size(), 4u);
  ASSERT_EQ(sets[0].rounds[0].size(), 1u);
  EXPECT_DOUBLE_EQ(sets[0].rounds[0][0].busbwGbps, 1.0);
  EXPECT_DOUBLE_EQ(sets[0].rounds[1][0].busbwGbps, 2.0);
  EXPECT_TRUE(sets[0].rounds[2].empty());  // round 3 missing: nothing to pair with
  EXPECT_DOUBLE_EQ(sets[0].rounds[3][0].busbwGbps, 4.0);
  EXPECT_EQ(sets[1].label, "openmpi");
  ASSERT_EQ(sets[1].rounds.size(), 2u);
  EXPECT_TRUE(sets[1].rounds[0].empty());
  EXPECT_DOUBLE_EQ(sets[1].rounds[1][0].busbwGbps, 20.0);
}

TEST(PerfCompareRounds, FilesWithoutRoundsStaySeparateSetsWithUniqueLabels) {
  const std::vector<RecordFile> files = {
      {"a/openmpi.json", {record("openmpi", 1024, false, 1.0)}},
      {"a/mpi2.json", {record("openmpi", 1024, false, 2.0)}},
      {"a/chorus.json", {record("chorus", 1024, false, 3.0)}},
      {"a/chorus.r1.json", {record("chorus", 1024, false, 4.0)}},
  };
  const std::vector<RecordSet> sets = groupRecordFiles(files);
  ASSERT_EQ(sets.size(), 4u);
  EXPECT_EQ(sets[0].label, "openmpi");
  EXPECT_EQ(sets[1].label, "openmpi:mpi2");
  EXPECT_EQ(sets[2].label, "chorus:chorus");  // the set of rounds keeps the plain label
  EXPECT_EQ(sets[3].label, "chorus");
  for (const RecordSet& set : sets)
    EXPECT_EQ(set.rounds.size(), 1u) << set.label;
}

TEST(PerfCompareRounds, ARoundGivenTwiceIsAUserError) {
  const std::vector<RecordFile> files = {
      {"x/chorus.r1.json", {record("chorus", 1024, false, 1.0)}},
      {"y/chorus.r1.json", {record("chorus", 1024, false, 2.0)}},
  };
  try {
    groupRecordFiles(files);
    FAIL() << "no error";
  } catch (const UserError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("x/chorus.r1.json"), std::string::npos) << message;
    EXPECT_NE(message.find("y/chorus.r1.json"), std::string::npos) << message;
    EXPECT_NE(message.find("round 1 of chorus"), std::string::npos) << message;
  }
}

TEST(PerfCompareRounds, CellsAreMediansAndTheChorusColumnShowsItsSpread) {
  const std::vector<RecordSet> sets = {oneCellRounds("chorus", {1.0, 2.0, 10.0}),
                                       oneCellRounds("openmpi", {1.0, 1.0, 1.0})};
  const std::string table = comparisonTables(sets);
  // size, chorus oop, min-max, chorus ip, min-max, openmpi oop, openmpi ip, ratio oop, ratio ip,
  // plan
  const std::vector<std::string> row = rowOf(table, 1024);
  ASSERT_EQ(row.size(), 10u) << table;
  EXPECT_EQ(row[1], "2.00") << table;
  EXPECT_EQ(row[2], "1.00-10.0") << table;
  EXPECT_EQ(row[3], "-") << table;
  EXPECT_EQ(row[5], "1.00") << table;
  EXPECT_EQ(row[7], "2.00x") << table;
  EXPECT_EQ(row[8], "-") << table;
  EXPECT_EQ(row[9], "chorus-algorithm") << table;
  EXPECT_NE(table.find("# rounds: chorus 3, openmpi 3;"), std::string::npos) << table;
  EXPECT_NE(table.find("geometric mean chorus/openmpi oop: 2.00x over 1 sizes"), std::string::npos)
      << table;
}

TEST(PerfCompareRounds, RatioIsTheMedianOfPerRoundRatiosNotTheRatioOfMedians) {
  // Per round: 2/1, 4/4, 9/3 -> ratios 2, 1, 3, median 2. Medians 4 and 3 would give 1.33.
  const std::vector<RecordSet> sets = {oneCellRounds("openmpi", {1.0, 4.0, 3.0}),
                                       oneCellRounds("chorus", {2.0, 4.0, 9.0})};
  const std::string table = comparisonTables(sets);
  const std::vector<std::string> row = rowOf(table, 1024);
  // size, openmpi oop, openmpi ip, chorus oop, min-max, chorus ip, min-max, ratio oop, ratio ip,
  // plan
  ASSERT_EQ(row.size(), 10u) << table;
  EXPECT_EQ(row[1], "3.00") << table;
  EXPECT_EQ(row[3], "4.00") << table;
  EXPECT_EQ(row[4], "2.00-9.00") << table;
  EXPECT_EQ(row[7], "2.00x") << table;
  EXPECT_EQ(table.find("1.33x"), std::string::npos) << table;
  EXPECT_NE(table.find("geometric mean chorus/openmpi oop: 2.00x"), std::string::npos) << table;
}

TEST(PerfCompareRounds, RatiosPairOnlyRoundsBothLibrariesRan) {
  // Round 2 of openmpi is missing: only rounds 1 (1/1) and 3 (8/2) pair; median of 1 and 4.
  RecordSet chorus = oneCellRounds("chorus", {1.0, 100.0, 8.0});
  RecordSet openmpi = oneCellRounds("openmpi", {1.0, 1.0, 2.0});
  openmpi.rounds[1].clear();
  const std::vector<RecordSet> sets = {chorus, openmpi};
  const std::string table = comparisonTables(sets);
  const std::vector<std::string> row = rowOf(table, 1024);
  ASSERT_EQ(row.size(), 10u) << table;
  EXPECT_EQ(row[1], "8.00") << table;   // chorus: median of 1, 8, 100
  EXPECT_EQ(row[5], "1.50") << table;   // openmpi: median of 1 and 2
  EXPECT_EQ(row[7], "2.50x") << table;  // median of 1 and 4
  EXPECT_NE(table.find("# rounds: chorus 3, openmpi 2;"), std::string::npos) << table;
}

TEST(PerfCompareRounds, PlanIsRoundOnesAndMarkedWhenARoundRanAnother) {
  RecordSet chorus = oneCellRounds("chorus", {1.0, 2.0}, {"allreduce.oneshot", "allreduce.ring"});
  for (std::vector<BenchRecord>& round : chorus.rounds) {
    round.push_back(record("chorus", 4096, false, 3.0, "allreduce.ring"));
    round.push_back(record("chorus", 4096, true, 3.0, "allreduce.allpairs"));
  }
  const std::vector<RecordSet> sets = {chorus};
  const std::string table = comparisonTables(sets);
  const std::vector<std::string> changed = rowOf(table, 1024);
  ASSERT_GE(changed.size(), 2u) << table;
  EXPECT_EQ(changed[changed.size() - 2], "allreduce.oneshot") << table;
  EXPECT_EQ(changed.back(), "*") << table;
  const std::vector<std::string> steady = rowOf(table, 4096);
  ASSERT_GE(steady.size(), 3u) << table;
  EXPECT_EQ(steady[steady.size() - 3], "allreduce.ring") << table;
  EXPECT_EQ(steady[steady.size() - 2], "(ip") << table;
  EXPECT_EQ(steady.back(), "allreduce.allpairs)") << table;
  EXPECT_NE(table.find("# plan: what chorus ran in round 1"), std::string::npos) << table;
}

TEST(PerfCompareRounds, OneRoundHasNoSpreadColumns) {
  const std::vector<RecordSet> sets = {oneCellRounds("chorus", {3.0}),
                                       oneCellRounds("gloo", {1.5})};
  const std::string table = comparisonTables(sets);
  EXPECT_EQ(table.find("min-max"), std::string::npos) << table;
  const std::vector<std::string> row = rowOf(table, 1024);
  // size, chorus oop, chorus ip, gloo oop, gloo ip, ratio oop, ratio ip, plan
  ASSERT_EQ(row.size(), 8u) << table;
  EXPECT_EQ(row[1], "3.00") << table;
  EXPECT_EQ(row[5], "2.00x") << table;
  EXPECT_NE(table.find("# rounds: chorus 1, gloo 1\n"), std::string::npos) << table;
}

TEST(PerfCompareRounds, MedianRecordsForTheChart) {
  RecordSet set = oneCellRounds("chorus", {1.0, 2.0, 10.0, 3.0});
  set.rounds[2][0].minUs = 0.1;  // the others are 0.1024 and more
  const std::vector<BenchRecord> merged = medianRecords(set);
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_DOUBLE_EQ(merged[0].busbwGbps, 2.5);  // even count: mean of the middle two
  EXPECT_DOUBLE_EQ(merged[0].algbwGbps, 2.5);
  EXPECT_DOUBLE_EQ(merged[0].timeUs, (1024 / 2e3 + 1024 / 3e3) / 2);
  EXPECT_DOUBLE_EQ(merged[0].minUs, 0.1);
  EXPECT_EQ(merged[0].bytes, 1024u);
}

TEST(PerfCompareCeiling, ChorusColumnsShowTheFractionOfTheMemoryCeiling) {
  // allreduce on 2 ranks: ceiling = a+=b traffic / 5 = 4 GB/s; chorus at 3 GB/s is 75%.
  const std::vector<RecordSet> sets = {oneCellRounds("chorus", {3.0}),
                                       oneCellRounds("gloo", {1.5})};
  const std::string table = comparisonTables(sets, MemoryRates{20.0, 8.0});
  const std::vector<std::string> row = rowOf(table, 1024);
  // size, chorus oop, % ceil, chorus ip, % ceil, gloo oop, gloo ip, ratio oop, ratio ip, plan
  ASSERT_EQ(row.size(), 10u) << table;
  EXPECT_EQ(row[1], "3.00") << table;
  EXPECT_EQ(row[2], "75%") << table;
  EXPECT_EQ(row[4], "-") << table;  // no in-place record
  EXPECT_NE(table.find("memory ceiling of 4.00 GB/s busbw for allreduce"), std::string::npos)
      << table;
  EXPECT_EQ(comparisonTables(sets).find("% ceil"), std::string::npos);
}

TEST(PerfCompareCeiling, ModelPerCollective) {
  const MemoryRates rates{30.0, 10.0};
  EXPECT_DOUBLE_EQ(*ceilingBusbw("allreduce", 2, rates), 6.0);
  EXPECT_DOUBLE_EQ(*ceilingBusbw("reducescatter", 2, rates), 5.0);
  EXPECT_DOUBLE_EQ(*ceilingBusbw("allgather", 2, rates), 5.0);
  EXPECT_DOUBLE_EQ(*ceilingBusbw("alltoall", 2, rates), 5.0);
  EXPECT_FALSE(ceilingBusbw("allreduce", 4, rates));
  EXPECT_FALSE(ceilingBusbw("broadcast", 2, rates));
}

TEST(PerfCompareCeiling, RatesFileRoundTripsAndBadFilesAreNamed) {
  const std::string path = ::testing::TempDir() + "membw_test.json";
  {
    std::ofstream out(path);
    out << memoryRatesJson(MemoryRates{27.5, 9.25});
  }
  const MemoryRates read = readMemoryRatesFile(path);
  EXPECT_DOUBLE_EQ(read.addTrafficGbps, 27.5);
  EXPECT_DOUBLE_EQ(read.copyGbps, 9.25);
  {
    std::ofstream out(path);
    out << "{\"add_traffic_gbps\": 3}";
  }
  try {
    readMemoryRatesFile(path);
    FAIL() << "expected ParseError";
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("copy_gbps"), std::string::npos) << e.what();
  }
  EXPECT_THROW(readMemoryRatesFile(path + ".missing"), ParseError);
}

TEST(PerfCompareCeiling, ProbeMeasuresPositiveRates) {
  const MemoryRates rates = probeMemoryRates(std::size_t{1} << 20, 1);  // small: a smoke test
  EXPECT_GT(rates.addTrafficGbps, 0);
  EXPECT_GT(rates.copyGbps, 0);
}

}  // namespace
}  // namespace chorus::perf
