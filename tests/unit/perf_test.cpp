// The benchmark layer (src/perf): nccl-tests size conventions and busbw factors, size sweeps,
// the test-data pattern against reference collectives, the sweep driver's checks, JSON round
// trips, tables, comparisons and SVG well-formedness. Never asserts a time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "perf/bench_driver.h"
#include "perf/collective.h"
#include "perf/compare.h"
#include "perf/pattern.h"
#include "perf/record.h"
#include "perf/record_json.h"
#include "perf/svg_plot.h"
#include "perf/sweep.h"
#include "perf/table.h"
#include "perf/timing.h"
#include "support/error.h"

namespace chorus::perf {
namespace {

using Codec = ArithmeticCodec<float>;

TEST(PerfCollective, BusBandwidthFactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::allreduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::allreduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::allgather, 4), 0.75);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::reducescatter, 8), 0.875);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::alltoall, 2), 0.5);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::reduce, 8), 1.0);
}

TEST(PerfCollective, ShapesUseNcclTestsSizeConventions) {
  // allreduce: size = buffer.
  CollectiveShape s = shapeFor(Collective::allreduce, 1024, 4, 4);
  EXPECT_EQ(s.count, 256u);
  EXPECT_EQ(s.bytes, 1024u);
  // allgather: size = gathered output; 8 B over 4 ranks rounds up to one element each.
  s = shapeFor(Collective::allgather, 8, 4, 4);
  EXPECT_EQ(s.count, 1u);
  EXPECT_EQ(s.recvCount, 4u);
  EXPECT_EQ(s.bytes, 16u);
  // reducescatter: size = input; count = each rank's output.
  s = shapeFor(Collective::reducescatter, 1000, 4, 3);
  EXPECT_EQ(s.count, 83u);
  EXPECT_EQ(s.sendCount, 249u);
  EXPECT_EQ(s.recvCount, 83u);
  EXPECT_EQ(s.bytes, 996u);
  // alltoall: size = send buffer; count = per-peer block.
  s = shapeFor(Collective::alltoall, 4096, 4, 4);
  EXPECT_EQ(s.count, 256u);
  EXPECT_EQ(s.sendCount, 1024u);
  EXPECT_EQ(s.elements, 1024u);
}

TEST(PerfCollective, ParsesNamesAndSpellings) {
  for (Collective c : allCollectives())
    EXPECT_EQ(parseCollective(collectiveName(c)), c);
  EXPECT_EQ(parseCollective("reduce_scatter"), Collective::reducescatter);
  EXPECT_EQ(parseCollective("bcast"), Collective::broadcast);
  EXPECT_FALSE(parseCollective("gather"));
  EXPECT_EQ(parseReduceOp("product"), ReduceOp::prod);
  EXPECT_FALSE(parseReduceOp("xor"));
}

TEST(PerfSweep, MultipliesFromMinToMax) {
  EXPECT_EQ(sizeSweep(8, 1 << 20, 16), (std::vector<std::uint64_t>{8, 128, 2048, 32768, 524288}));
  EXPECT_EQ(sizeSweep(8, 64, 2), (std::vector<std::uint64_t>{8, 16, 32, 64}));
  EXPECT_EQ(sizeSweep(1024, 1024, 1), (std::vector<std::uint64_t>{1024}));
}

TEST(PerfSweep, RejectsSweepsThatNeverEnd) {
  try {
    sizeSweep(8, 1024, 1);
    FAIL();
  } catch (const OptionError& e) {
    EXPECT_NE(std::string(e.what()).find("-f 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(sizeSweep(0, 8, 2), OptionError);
  EXPECT_THROW(sizeSweep(64, 8, 2), OptionError);
}

TEST(PerfRecord, BandwidthsComeFromTheMedianTime) {
  BenchRecord record;
  record.bytes = 1'000'000;
  record.timeUs = 1000;
  setBandwidths(record, 1.5);
  EXPECT_DOUBLE_EQ(record.algbwGbps, 1.0);
  EXPECT_DOUBLE_EQ(record.busbwGbps, 1.5);
}

TEST(PerfTiming, SplitsFixedIterationsIntoBatches) {
  std::int64_t ran = 0;
  int exchanges = 0;
  TimingOptions options;
  options.warmupIterations = 3;
  options.iterations = 20;
  options.maxBatches = 5;
  options.stopAfterSeconds = 1e9;
  const TimingResult result = measure(
      options, [&](std::int64_t k) { ran += k; }, [&](std::span<double>) { ++exchanges; });
  EXPECT_EQ(result.batches, 5);
  EXPECT_EQ(result.iterations, 20);
  EXPECT_EQ(ran, 23);               // warm-up + timed
  EXPECT_EQ(exchanges, 1 + 1 + 5);  // initial sync, warm-up, one per batch
  EXPECT_LE(result.minUs, result.medianUs);
}

TEST(PerfTiming, CalibrationDoublesAndEarlyStopIsCollective) {
  std::vector<std::int64_t> batches;
  TimingOptions options;
  options.maxIterations = 64;  // the calibration stops doubling here
  options.iterations = 100;
  options.maxBatches = 10;
  // The "other rank" votes to stop after the second timed batch.
  int timedExchanges = 0;
  const TimingResult result = measure(
      options, [&](std::int64_t k) { batches.push_back(k); },
      [&](std::span<double> values) {
        if (values.size() == 2 && ++timedExchanges == 2) values[1] = 1;
      });
  EXPECT_EQ((std::vector<std::int64_t>(batches.begin(), batches.begin() + 7)),
            (std::vector<std::int64_t>{1, 2, 4, 8, 16, 32, 64}));
  EXPECT_EQ(result.batches, 2);
  EXPECT_EQ(result.iterations, 20);
}

TEST(PerfTiming, MedianOfEvenAndOddCounts) {
  const std::vector<double> odd = {3, 1, 2};
  const std::vector<double> even = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(medianOf(odd), 2);
  EXPECT_DOUBLE_EQ(medianOf(even), 2.5);
}

// Reference collectives on per-rank vectors, written from the definitions (not from
// expectedValue): the pattern's expectations must agree with them.
std::vector<std::vector<float>> referenceOutputs(const DataCase& d,
                                                 const std::vector<std::vector<float>>& in) {
  const std::size_t n = in.size(), count = d.shape.count;
  auto reduce = [&](std::size_t index) {
    float acc = in[0][index];
    for (std::size_t q = 1; q < n; ++q) {
      const float v = in[q][index];
      acc = d.op == ReduceOp::prod  ? acc * v
            : d.op == ReduceOp::min ? std::min(acc, v)
            : d.op == ReduceOp::max ? std::max(acc, v)
                                    : acc + v;
    }
    return d.op == ReduceOp::avg ? acc / static_cast<float>(n) : acc;
  };
  std::vector<std::vector<float>> out(n, std::vector<float>(d.shape.recvCount, 0));
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t j = 0; j < d.shape.recvCount; ++j) {
      switch (d.collective) {
        case Collective::allreduce:
          out[r][j] = reduce(j);
          break;
        case Collective::allgather:
          out[r][j] = in[j / count][j % count];
          break;
        case Collective::reducescatter:
          out[r][j] = reduce(r * count + j);
          break;
        case Collective::alltoall:
          out[r][j] = in[j / count][r * count + j % count];
          break;
        case Collective::broadcast:
          out[r][j] = in[static_cast<std::size_t>(d.root)][j];
          break;
        case Collective::reduce:
          out[r][j] = static_cast<int>(r) == d.root ? reduce(j) : 0.0f;
          break;
      }
    }
  return out;
}

TEST(PerfPattern, ExpectationsMatchReferenceCollectives) {
  for (Collective collective : allCollectives())
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max})
      for (int n : {1, 3, 4}) {
        DataCase d;
        d.collective = collective;
        d.shape = shapeFor(collective, 4 * 37 * 4, 4, n);
        d.nranks = n;
        d.root = n - 1;
        d.op = op;
        std::vector<std::vector<float>> in(n, std::vector<float>(d.shape.sendCount));
        for (int r = 0; r < n; ++r)
          fillInput<Codec>(std::span<float>(in[r]), op, n, r, 7);
        const auto out = referenceOutputs(d, in);
        for (int r = 0; r < n; ++r) {
          SCOPED_TRACE(::testing::Message() << collectiveName(collective) << " " << reduceOpName(op)
                                            << " n=" << n << " r=" << r);
          EXPECT_EQ(countWrong<Codec>(std::span<const float>(out[r]), d, r, 7), 0);
          // One element at the sentinel (never a correct value) is one wrong element.
          std::vector<float> corrupted = out[r];
          if (collective == Collective::reduce && r != d.root) continue;
          corrupted[0] = 0;
          EXPECT_EQ(countWrong<Codec>(std::span<const float>(corrupted), d, r, 7), 1);
        }
      }
}

TEST(PerfPattern, IntegerAverageTruncates) {
  DataCase d;
  d.collective = Collective::allreduce;
  d.shape = shapeFor(Collective::allreduce, 64, 4, 3);
  d.nranks = 3;
  d.op = ReduceOp::avg;
  for (std::size_t i = 0; i < d.shape.count; ++i) {
    const double expected = *expectedValue(d, 0, i, 1);
    const std::int32_t stored = ArithmeticCodec<std::int32_t>::store(expected);
    EXPECT_EQ(stored, static_cast<std::int32_t>(expected));
  }
}

TEST(PerfPattern, ChangedInputElementsAreCounted) {
  for (Collective collective : allCollectives()) {
    SCOPED_TRACE(collectiveName(collective));
    DataCase d;
    d.collective = collective;
    d.shape = shapeFor(collective, 4 * 37 * 4, 4, 3);
    d.nranks = 3;
    std::vector<float> input(d.shape.sendCount);
    fillInput<Codec>(std::span<float>(input), d.op, 3, 1, 7);
    EXPECT_EQ(countChangedInput<Codec>(std::span<const float>(input), d, 1, 7), 0);
    input[5] += 1;
    EXPECT_EQ(countChangedInput<Codec>(std::span<const float>(input), d, 1, 7), 1);
    // The values of another rank differ almost everywhere.
    EXPECT_GT(countChangedInput<Codec>(std::span<const float>(input), d, 2, 7),
              static_cast<std::int64_t>(input.size() / 2));
  }
}

// One rank (so every collective copies input to output), optionally broken.
class SingleRankRunner final : public RankRunner {
 public:
  bool skipOutput = false;    // leaves the sentinel: every element wrong
  bool failInPlace = false;   // the in-place call throws
  bool clobberInput = false;  // out of place, the right output but the input left at 0
  int rank() const override { return 0; }
  int nranks() const override { return 1; }
  void prepare(const BenchCase& c, int seed) override {
    send_.assign(c.data.shape.sendCount, 0);
    recv_.assign(c.data.shape.recvCount, 0);
    auto& input = c.inplace ? recv_ : send_;
    fillInput<Codec>(std::span<float>(input.data(), c.data.shape.sendCount), c.data.op, 1, 0, seed);
  }
  void run(const BenchCase& c, std::int64_t) override {
    if (c.inplace && failInPlace) throw OptionError("in place is not supported here");
    if (!c.inplace && !skipOutput) recv_ = send_;
    if (!c.inplace && clobberInput) std::fill(send_.begin(), send_.end(), 0.0f);
  }
  // As the real runners do: wrong outputs, plus changed inputs out of place.
  std::int64_t countWrong(const BenchCase& c, int seed) override {
    const std::int64_t wrong =
        perf::countWrong<Codec>(std::span<const float>(recv_), c.data, 0, seed);
    if (c.inplace) return wrong;
    return wrong + countChangedInput<Codec>(std::span<const float>(send_), c.data, 0, seed);
  }
  void allReduceMax(std::span<double>) override {}
  void allReduceSum(std::span<double>) override {}
  std::string algorithmName(const BenchCase&) override { return "copy"; }

 private:
  std::vector<float> send_, recv_;
};

SweepOptions quickSweep(Collective collective) {
  SweepOptions options;
  options.collective = collective;
  options.sizes = sizeSweep(8, 512, 8);
  options.timing.warmupIterations = 1;
  options.timing.iterations = 4;
  options.library = "fake";
  options.transport = "none";
  options.progress = false;
  return options;
}

TEST(PerfDriver, CorrectRunnerHasNoWrongElements) {
  for (Collective collective : allCollectives()) {
    SingleRankRunner runner;
    int rows = 0;
    const auto records =
        runSweep(runner, quickSweep(collective), [&](const BenchRecord& a, const BenchRecord& b) {
          ++rows;
          EXPECT_FALSE(a.inplace);
          EXPECT_TRUE(b.inplace);
        });
    EXPECT_EQ(rows, 3);
    ASSERT_EQ(records.size(), 6u);
    for (const BenchRecord& record : records) {
      EXPECT_TRUE(record.supported);
      EXPECT_EQ(record.wrong, 0) << collectiveName(collective) << " " << record.bytes;
      EXPECT_EQ(record.algorithm, "copy");
      EXPECT_EQ(record.iterations, 4);
    }
  }
}

TEST(PerfDriver, CountsWrongElementsAndMarksFailedVariants) {
  SingleRankRunner runner;
  runner.skipOutput = true;
  runner.failInPlace = true;
  const auto records = runSweep(runner, quickSweep(Collective::allreduce), nullptr);
  ASSERT_EQ(records.size(), 6u);
  EXPECT_EQ(records[0].wrong, 2);  // 8 B = 2 floats, all left at the sentinel
  EXPECT_FALSE(records[1].supported);
  EXPECT_NE(records[1].note.find("not supported here"), std::string::npos);
  EXPECT_EQ(totalWrong(records), 2 + 16 + 128);
  EXPECT_NE(tableFooter(records).find("FAILED"), std::string::npos);
}

TEST(PerfDriver, ChangedInputsCountAsWrongOutOfPlace) {
  SingleRankRunner runner;
  runner.clobberInput = true;
  const auto records = runSweep(runner, quickSweep(Collective::allreduce), nullptr);
  ASSERT_EQ(records.size(), 6u);
  EXPECT_EQ(records[0].wrong, 2);  // 8 B: both input floats overwritten, the output right
  EXPECT_EQ(records[1].wrong, 0);  // in place: the input is the output
  EXPECT_EQ(totalWrong(records), 2 + 16 + 128);
}

TEST(PerfDriver, NoCheckLeavesWrongUnknown) {
  SingleRankRunner runner;
  SweepOptions options = quickSweep(Collective::broadcast);
  options.check = false;
  for (const BenchRecord& record : runSweep(runner, options, nullptr))
    EXPECT_EQ(record.wrong, -1);
}

BenchRecord sampleRecord(std::string library, std::uint64_t bytes, bool inplace, double busbw) {
  BenchRecord r;
  r.library = std::move(library);
  r.collective = "allreduce";
  r.algorithm = "ring <\"x\">";
  r.ranks = 2;
  r.transport = "shm";
  r.bytes = bytes;
  r.count = bytes / 4;
  r.inplace = inplace;
  r.timeUs = 12.5;
  r.minUs = 11;
  r.busbwGbps = busbw;
  r.algbwGbps = busbw;
  r.wrong = inplace ? -1 : 0;
  r.iterations = 100;
  r.batches = 10;
  return r;
}

TEST(PerfJson, RoundTripsEveryField) {
  std::vector<BenchRecord> records = {sampleRecord("chorus", 8, false, 0.5),
                                      sampleRecord("chorus", 8, true, 0.25)};
  records[1].supported = false;
  records[1].note = "why";
  records[1].root = 1;
  const auto back = recordsFromJson(recordsToJson(records), "test");
  ASSERT_EQ(back.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back[i].library, records[i].library);
    EXPECT_EQ(back[i].algorithm, records[i].algorithm);
    EXPECT_EQ(back[i].bytes, records[i].bytes);
    EXPECT_EQ(back[i].count, records[i].count);
    EXPECT_EQ(back[i].inplace, records[i].inplace);
    EXPECT_EQ(back[i].supported, records[i].supported);
    EXPECT_EQ(back[i].note, records[i].note);
    EXPECT_EQ(back[i].root, records[i].root);
    EXPECT_DOUBLE_EQ(back[i].timeUs, records[i].timeUs);
    EXPECT_DOUBLE_EQ(back[i].busbwGbps, records[i].busbwGbps);
    EXPECT_EQ(back[i].wrong, records[i].wrong);
    EXPECT_EQ(back[i].iterations, records[i].iterations);
  }
  EXPECT_NE(recordsToJson(records).find("\"wrong\": null"), std::string::npos);
}

TEST(PerfJson, NamesTheMissingKey) {
  try {
    recordsFromJson(R"([{"library": "x", "collective": "allreduce", "ranks": 2}])", "a.json");
    FAIL();
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("a.json: record 0: missing \"bytes\""), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(recordsFromJson("{}", "b.json"), ParseError);
  EXPECT_THROW(recordsFromJson("[1,", "c.json"), ParseError);
}

TEST(PerfTable, RowsHaveBothVariantsAndTheAlgorithm) {
  BenchRecord oop = sampleRecord("chorus", 1024, false, 1.25);
  BenchRecord ip = sampleRecord("chorus", 1024, true, 1.0);
  ip.supported = false;
  const std::string row = tableRow(oop, ip);
  EXPECT_NE(row.find("1024"), std::string::npos);
  EXPECT_NE(row.find("1.25"), std::string::npos);
  EXPECT_NE(row.find("n/a"), std::string::npos);
  EXPECT_NE(row.find("ring"), std::string::npos);
  const std::string header = tableHeader("title");
  for (const char* column : {"size", "count", "type", "redop", "root", "time", "algbw", "busbw",
                             "#wrong", "out-of-place", "in-place"})
    EXPECT_NE(header.find(column), std::string::npos) << column;
}

TEST(PerfCompare, PrintsRatiosAgainstChorus) {
  std::vector<RecordSet> sets(2);
  sets[0].label = "openmpi";
  sets[0].rounds = {
      {sampleRecord("openmpi", 1024, false, 1.0), sampleRecord("openmpi", 1024, true, 2.0)}};
  sets[1].label = "chorus";
  sets[1].rounds = {{sampleRecord("chorus", 1024, false, 2.0)}};
  const std::string table = comparisonTables(sets);
  EXPECT_NE(table.find("chorus/openmpi oop"), std::string::npos) << table;
  EXPECT_NE(table.find("2.00x"), std::string::npos) << table;
  EXPECT_NE(table.find("geometric mean chorus/openmpi oop: 2.00x"), std::string::npos) << table;
}

// Every tag opened is closed in order; self-closing tags and the XML declaration stand alone.
bool tagsBalanced(const std::string& svg) {
  std::vector<std::string> open;
  for (std::size_t pos = svg.find('<'); pos != std::string::npos; pos = svg.find('<', pos + 1)) {
    const std::size_t end = svg.find('>', pos);
    if (end == std::string::npos) return false;
    const std::string tag = svg.substr(pos + 1, end - pos - 1);
    if (tag.empty() || tag[0] == '?' || tag.back() == '/') continue;
    const std::string name = tag.substr(tag[0] == '/' ? 1 : 0, tag.find(' ') - (tag[0] == '/'));
    if (tag[0] != '/') {
      open.push_back(name);
    } else {
      if (open.empty() || open.back() != name) return false;
      open.pop_back();
    }
  }
  return open.empty();
}

TEST(PerfSvg, IsWellFormedWithOneLinePerSeries) {
  std::vector<BenchRecord> records;
  for (std::uint64_t bytes : {8u, 1024u, 1u << 20}) {
    records.push_back(sampleRecord("chorus", bytes, false, 1.0));
    records.push_back(sampleRecord("chorus", bytes, true, 2.0));
    records.push_back(sampleRecord("gloo", bytes, false, 0.5));
  }
  PlotOptions options;
  options.title = "a <b> & \"c\"";
  const std::string svg = busbwPlotSvg(records, options);
  EXPECT_TRUE(tagsBalanced(svg)) << svg;
  EXPECT_EQ(svg.rfind("<svg", 0), std::string::npos);  // starts with the XML declaration
  EXPECT_NE(svg.find("a &lt;b&gt; &amp; &quot;c&quot;"), std::string::npos);
  std::size_t lines = 0;
  for (std::size_t p = svg.find("<polyline"); p != std::string::npos;
       p = svg.find("<polyline", p + 1))
    ++lines;
  EXPECT_EQ(lines, 3u);
  EXPECT_NE(svg.find("1 MiB"), std::string::npos);
  EXPECT_NE(svg.find("gloo out-of-place"), std::string::npos);
}

}  // namespace
}  // namespace chorus::perf
