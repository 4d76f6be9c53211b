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

// One probe point per working set: 1 KiB (in cache) and 1 MiB (beyond it).
MemoryProfile twoPointProfile() {
  MemoryProfile profile;
  profile.points.push_back(MemoryRates{40.0, 16.0, 1024});
  profile.points.push_back(MemoryRates{20.0, 8.0, 1 << 20});
  return profile;
}

TEST(PerfCompareCeiling, ChorusColumnsShowTheFractionOfTheCeilingAtTheirWorkingSet) {
  // allreduce of 1024 B on 2 ranks, out of place: working set 4 KiB, beyond the 1 KiB probe, so
  // the 1 MiB probe's rates hold: ceiling = a+=b traffic / 5 = 4 GB/s; chorus at 3 GB/s is 75%.
  const std::vector<RecordSet> sets = {oneCellRounds("chorus", {3.0}),
                                       oneCellRounds("gloo", {1.5})};
  const std::string table = comparisonTables(sets, twoPointProfile());
  const std::vector<std::string> row = rowOf(table, 1024);
  // size, chorus oop, % ceil, chorus ip, % ceil, gloo oop, gloo ip, ratio oop, ratio ip, plan
  ASSERT_EQ(row.size(), 10u) << table;
  EXPECT_EQ(row[1], "3.00") << table;
  EXPECT_EQ(row[2], "75%") << table;
  EXPECT_EQ(row[4], "-") << table;  // no in-place record
  EXPECT_NE(table.find("memory ceiling of allreduce at its working set"), std::string::npos)
      << table;
  EXPECT_NE(table.find("1 KiB 40.0/16.0, 1 MiB 20.0/8.00"), std::string::npos) << table;
  EXPECT_EQ(comparisonTables(sets).find("% ceil"), std::string::npos);
}

TEST(PerfCompareCeiling, ModelPerCollective) {
  const MemoryRates rates{30.0, 10.0};
  EXPECT_DOUBLE_EQ(*ceilingBusbw("allreduce", 2, false, rates), 6.0);
  EXPECT_DOUBLE_EQ(*ceilingBusbw("allreduce", 2, true, rates), 6.0);
  EXPECT_DOUBLE_EQ(*ceilingBusbw("reducescatter", 2, false, rates), 5.0);
  // The received half at the copy rate; out of place also the own block.
  EXPECT_DOUBLE_EQ(*ceilingBusbw("allgather", 2, true, rates), 5.0);
  EXPECT_DOUBLE_EQ(*ceilingBusbw("allgather", 2, false, rates), 2.5);
  EXPECT_DOUBLE_EQ(*ceilingBusbw("alltoall", 2, true, rates), 5.0);
  EXPECT_DOUBLE_EQ(*ceilingBusbw("alltoall", 2, false, rates), 2.5);
  EXPECT_FALSE(ceilingBusbw("allreduce", 4, false, rates));
  EXPECT_FALSE(ceilingBusbw("broadcast", 2, false, rates));
}

TEST(PerfCompareCeiling, WorkingSetPicksTheSmallestProbeThatHoldsIt) {
  EXPECT_EQ(*ceilingWorkingSetBytes("allreduce", 2, 100, false), 400u);
  EXPECT_EQ(*ceilingWorkingSetBytes("allreduce", 2, 100, true), 200u);
  EXPECT_EQ(*ceilingWorkingSetBytes("reducescatter", 2, 100, false), 300u);
  EXPECT_EQ(*ceilingWorkingSetBytes("allgather", 2, 100, false), 300u);
  EXPECT_EQ(*ceilingWorkingSetBytes("alltoall", 2, 100, false), 400u);
  EXPECT_EQ(*ceilingWorkingSetBytes("alltoall", 2, 100, true), 200u);
  EXPECT_FALSE(ceilingWorkingSetBytes("reduce", 2, 100, false));
  const MemoryProfile profile = twoPointProfile();
  EXPECT_EQ(ratesForWorkingSet(profile, 1).workingSetBytes, 1024u);
  EXPECT_EQ(ratesForWorkingSet(profile, 1024).workingSetBytes, 1024u);
  EXPECT_EQ(ratesForWorkingSet(profile, 1025).workingSetBytes, 1u << 20);
  EXPECT_EQ(ratesForWorkingSet(profile, 1u << 30).workingSetBytes, 1u << 20);  // the largest
  // allgather of 256 B in place: working set 512 B, the cache's copy rate 16 / 2.
  EXPECT_DOUBLE_EQ(*ceilingBusbw("allgather", 2, 256, true, profile), 8.0);
  EXPECT_DOUBLE_EQ(*ceilingBusbw("allgather", 2, 4096, true, profile), 4.0);
}

TEST(PerfCompareCeiling, ProfileFileRoundTripsAndBadFilesAreNamed) {
  const std::string path = ::testing::TempDir() + "membw_test.json";
  {
    std::ofstream out(path);
    out << memoryProfileJson(twoPointProfile());
  }
  const MemoryProfile read = readMemoryProfileFile(path);
  ASSERT_EQ(read.points.size(), 2u);
  EXPECT_DOUBLE_EQ(read.points[0].addTrafficGbps, 40.0);
  EXPECT_DOUBLE_EQ(read.points[1].copyGbps, 8.0);
  EXPECT_EQ(read.points[1].workingSetBytes, 1u << 20);
  {
    std::ofstream out(path);  // a file from before the probe took sizes: one point
    out << "{\"add_traffic_gbps\": 27.5, \"copy_gbps\": 9.25}";
  }
  const MemoryProfile old = readMemoryProfileFile(path);
  ASSERT_EQ(old.points.size(), 1u);
  EXPECT_DOUBLE_EQ(old.points[0].copyGbps, 9.25);
  EXPECT_DOUBLE_EQ(*ceilingBusbw("allreduce", 2, 1 << 30, false, old), 5.5);
  const auto expectNamed = [&](const std::string& text, const std::string& named) {
    {
      std::ofstream out(path);
      out << text;
    }
    try {
      readMemoryProfileFile(path);
      FAIL() << "expected ParseError for " << text;
    } catch (const ParseError& e) {
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  };
  expectNamed("{\"add_traffic_gbps\": 3}", "copy_gbps");
  expectNamed("{\"by_working_set\": []}", "non-empty array");
  expectNamed("{\"by_working_set\": [{\"add_traffic_gbps\": 1, \"copy_gbps\": 1}]}",
              "by_working_set[0] needs a whole number \"working_set_bytes\"");
  expectNamed(
      "{\"by_working_set\": [{\"working_set_bytes\": 8, \"add_traffic_gbps\": 1, "
      "\"copy_gbps\": 1}, {\"working_set_bytes\": 4, \"add_traffic_gbps\": 1, "
      "\"copy_gbps\": 1}]}",
      "ascend");
  EXPECT_THROW(readMemoryProfileFile(path + ".missing"), ParseError);
}

TEST(PerfCompareCeiling, MedianProfileTakesEachPointsMedianAndRefusesMixedSizes) {
  MemoryProfile slow = twoPointProfile(), fast = twoPointProfile(), mid = twoPointProfile();
  slow.points[1].copyGbps = 4.0;
  fast.points[1].copyGbps = 12.0;
  const std::vector<MemoryProfile> rounds{slow, fast, mid};
  const MemoryProfile median = medianProfile(rounds);
  EXPECT_DOUBLE_EQ(median.points[1].copyGbps, 8.0);
  EXPECT_DOUBLE_EQ(median.points[0].addTrafficGbps, 40.0);
  MemoryProfile other = twoPointProfile();
  other.points.pop_back();
  const std::vector<MemoryProfile> mixed{slow, other};
  EXPECT_THROW(medianProfile(mixed), ParseError);
}

TEST(PerfCompareCeiling, ProbeMeasuresPositiveRatesAtEachSize) {
  const std::vector<std::size_t> sizes{std::size_t{1} << 20, 64 << 10};  // small: a smoke test
  const MemoryProfile profile = probeMemoryProfile(sizes, 1);
  ASSERT_EQ(profile.points.size(), 2u);
  EXPECT_EQ(profile.points[0].workingSetBytes, std::uint64_t{256} << 10);  // sorted: 4 x 64 KiB
  EXPECT_EQ(profile.points[1].workingSetBytes, std::uint64_t{4} << 20);
  for (const MemoryRates& point : profile.points) {
    EXPECT_GT(point.addTrafficGbps, 0);
    EXPECT_GT(point.copyGbps, 0);
  }
}

}  // namespace
}  // namespace chorus::perf
