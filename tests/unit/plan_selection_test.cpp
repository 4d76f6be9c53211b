// Plan selection: CHORUS_ALGO parsing and validation, precedence (CHORUS_ALGO > CHORUS_ALGO_DIR >
// built-in default), size ranges, in-place matching, plan files, the process-wide cache, the
// log line, and that every built-in default exists and runs with exact results on threads.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/registry.h"
#include "ir/formats.h"
#include "runtime/interpreter.h"
#include "runtime/thread_runner.h"
#include "selection/algo_overrides.h"
#include "selection/builtin_defaults.h"
#include "selection/plan_selection.h"
#include "selection/plan_selector.h"
#include "support/error.h"
#include "temp_dir.h"
#include "transport/thread/thread_group.h"

namespace chorus::selection {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr ir::CollectiveKind kCollectives[] = {
    ir::CollectiveKind::allreduce, ir::CollectiveKind::allgather, ir::CollectiveKind::reducescatter,
    ir::CollectiveKind::alltoall,  ir::CollectiveKind::broadcast, ir::CollectiveKind::reduce,
};

const std::string kValidXml = std::string(CHORUS_SHARED_DIR) + "/interop/msccl-xml/valid/";

// A fresh directory under the build's temp dir, removed at the end of the test.
using chorus::testing_support::TempDir;

runtime::PlanRequest request(ir::CollectiveKind collective, int nranks, std::size_t bytes,
                             bool inPlace = false, int root = 0) {
  runtime::PlanRequest r;
  r.collective = collective;
  r.nranks = nranks;
  r.bytes = bytes;
  r.inPlace = inPlace;
  r.root = root;
  return r;
}

// Tuning tables off: these tests pin the precedence of overrides, files and built-in defaults
// (tuning_table_test.cpp covers the tables).
SelectionConfig config(int nranks, std::string algo = "", std::string algoDir = "") {
  SelectionConfig c;
  c.nranks = nranks;
  c.algo = std::move(algo);
  c.algoDir = std::move(algoDir);
  c.tuningFile = "off";
  return c;
}

std::string errorOf(const std::function<void()>& action) {
  try {
    action();
  } catch (const OptionError& error) {
    return error.what();
  }
  return "(no OptionError)";
}

std::string parseError(const std::string& text) {
  return errorOf([&] { parseAlgoOverrides(text); });
}

std::string constructError(const SelectionConfig& c) {
  return errorOf([&] { PlanSelector selector(c); });
}

ir::Algorithm compiled(const std::string& name, int ranks) {
  algorithms::BuildRequest build;
  build.algorithm = name;
  build.ranks = ranks;
  return algorithms::compileAlgorithm(build).algorithm;
}

// ---- CHORUS_ALGO parsing ---------------------------------------------------------------------

TEST(AlgoOverridesTest, ParsesGroupsEntriesAndRanges) {
  const AlgoOverrides overrides =
      parseAlgoOverrides("allreduce=ring:64K-max, allpairs:0-64K ; alltoall=two-step");
  ASSERT_EQ(overrides.size(), 2u);
  const auto& allreduce = overrides.at(ir::CollectiveKind::allreduce);
  ASSERT_EQ(allreduce.size(), 2u);
  EXPECT_EQ(allreduce[0].choice.algorithm, "allreduce.allpairs");  // sorted by range start
  EXPECT_EQ(allreduce[0].range.min, 0u);
  EXPECT_EQ(allreduce[0].range.max, 64u * 1024);
  EXPECT_EQ(allreduce[1].choice.algorithm, "allreduce.ring");
  EXPECT_EQ(allreduce[1].range.min, 64u * 1024);
  EXPECT_EQ(allreduce[1].range.max, kUnlimitedBytes);
  EXPECT_TRUE(allreduce[1].range.contains(1ull << 40));
  EXPECT_FALSE(allreduce[0].range.contains(64u * 1024));
  const auto& alltoall = overrides.at(ir::CollectiveKind::alltoall);
  ASSERT_EQ(alltoall.size(), 1u);
  EXPECT_EQ(alltoall[0].choice.algorithm, "alltoall.two-step");
  EXPECT_EQ(alltoall[0].range.min, 0u);
  EXPECT_EQ(alltoall[0].range.max, kUnlimitedBytes);
}

TEST(AlgoOverridesTest, AcceptsFullNamesFilesAndEmptyGroups) {
  const AlgoOverrides overrides = parseAlgoOverrides(
      ";reduce_scatter=reducescatter.ring;;broadcast=/plans/b.xml:0-1M,binomial:1M-max;");
  EXPECT_EQ(overrides.at(ir::CollectiveKind::reducescatter)[0].choice.algorithm,
            "reducescatter.ring");
  const auto& broadcast = overrides.at(ir::CollectiveKind::broadcast);
  EXPECT_EQ(broadcast[0].file, "/plans/b.xml");
  EXPECT_TRUE(broadcast[0].choice.algorithm.empty());
  EXPECT_EQ(broadcast[1].choice.algorithm, "broadcast.binomial");
  EXPECT_TRUE(parseAlgoOverrides("").empty());
  EXPECT_EQ(parseAlgoOverrides("allgather=plan.json").at(ir::CollectiveKind::allgather)[0].file,
            "plan.json");
}

TEST(AlgoOverridesTest, RejectsBadSyntaxNamingTheEntry) {
  EXPECT_THAT(parseError("allreduce:ring:0-64K"),
              HasSubstr("group 'allreduce:ring:0-64K' has no '='"));
  EXPECT_THAT(parseError("allreduce:ring:0-64K"), HasSubstr("allreduce=allpairs:0-64K"));
  EXPECT_THAT(parseError("allreduce="), HasSubstr("lists no algorithm"));
  EXPECT_THAT(parseError("allreduce=:0-64K"), HasSubstr("names no algorithm"));
}

TEST(AlgoOverridesTest, RejectsUnknownCollectiveListingTheChoices) {
  const std::string message = parseError("allredux=ring");
  EXPECT_THAT(message, HasSubstr("unknown collective 'allredux'"));
  EXPECT_THAT(message,
              HasSubstr("allreduce, allgather, reducescatter, alltoall, broadcast, reduce"));
  EXPECT_THAT(parseError("custom=ring"), HasSubstr("unknown collective 'custom'"));
}

TEST(AlgoOverridesTest, RejectsUnknownAlgorithmListingTheChoices) {
  const std::string message = parseError("allreduce=rign");
  EXPECT_THAT(message, HasSubstr("unknown allreduce algorithm 'rign'"));
  EXPECT_THAT(message, HasSubstr("allpairs"));
  EXPECT_THAT(message, HasSubstr("ring"));
  EXPECT_THAT(parseError("allreduce=allgather.ring"),
              HasSubstr("allgather.ring implements allgather, not allreduce"));
  EXPECT_THAT(parseError("broadcast=ring"), HasSubstr("choose one of binomial"));
}

TEST(AlgoOverridesTest, RejectsBadRanges) {
  EXPECT_THAT(parseError("allreduce=ring:64K"), HasSubstr("needs the form MIN-MAX"));
  EXPECT_THAT(parseError("allreduce=ring:64K-1K"), HasSubstr("is empty"));
  EXPECT_THAT(parseError("allreduce=ring:1K-1K"), HasSubstr("is empty"));
  EXPECT_THAT(parseError("allreduce=ring:max-max"), HasSubstr("is empty"));
  EXPECT_THAT(parseError("allreduce=ring:abc-max"), HasSubstr("'abc' is not a size"));
  EXPECT_THAT(parseError("allreduce=ring:0-12Q"), HasSubstr("'12Q' is not a size"));
}

TEST(AlgoOverridesTest, RejectsOverlappingRanges) {
  const std::string message = parseError("allreduce=allpairs:0-64K,ring:32K-max");
  EXPECT_THAT(message, HasSubstr("'allpairs:0-64K' (0 B-64 KiB) and 'ring:32K-max' (32 KiB-max)"));
  EXPECT_THAT(message, HasSubstr("overlap"));
  // A whole-axis entry overlaps anything; groups of one collective are merged first.
  EXPECT_THAT(parseError("allreduce=ring,allpairs:0-1K"), HasSubstr("overlap"));
  EXPECT_THAT(parseError("allreduce=ring:0-1K;allreduce=allpairs:512-2K"), HasSubstr("overlap"));
  EXPECT_NO_THROW(parseAlgoOverrides("allreduce=ring:0-1K;allreduce=allpairs:1K-2K"));
}

// ---- construction-time validation -------------------------------------------------------------

TEST(PlanSelectorTest, OverrideThatCannotRunOnTheRankCountFailsAtConstruction) {
  const std::string message = constructError(config(1, "allreduce=ring"));
  EXPECT_THAT(message, HasSubstr("CHORUS_ALGO entry 'ring'"));
  EXPECT_THAT(message, HasSubstr("cannot run on this communicator (1 rank)"));
  EXPECT_THAT(message, HasSubstr("needs at least 2 ranks"));
  EXPECT_THAT(errorOf([] { PlanSelector selector(config(6, "alltoall=two-step"), 4); }),
              HasSubstr("6 ranks are not a multiple of 4 ranks per node"));
}

TEST(PlanSelectorTest, OverrideFilesAreCheckedAtConstruction) {
  EXPECT_THAT(constructError(config(4, "allreduce=/nonexistent/plan.xml")),
              HasSubstr("'/nonexistent/plan.xml' does not exist"));
  const std::string allgather = kValidXml + "allgather_ring_simple_4r.xml";
  const std::string wrongCollective = constructError(config(4, "allreduce=" + allgather));
  EXPECT_THAT(wrongCollective, HasSubstr("a plan for allgather, not allreduce"));
  EXPECT_THAT(wrongCollective, HasSubstr("list it under 'allgather='"));
  const std::string wrongRanks = constructError(config(8, "allgather=" + allgather));
  EXPECT_THAT(wrongRanks, HasSubstr("has plans for 4 ranks only, but this communicator has 8"));
  TempDir dir;
  const std::string garbage = dir.write("bad.xml", "<algo name='x' nchunksperloop='oops'");
  EXPECT_THAT(constructError(config(4, "allreduce=" + garbage)), HasSubstr(garbage));
}

TEST(PlanSelectorTest, DirectoryProblemsNameTheFile) {
  EXPECT_THAT(constructError(config(4, "", "/nonexistent/plans")),
              HasSubstr("CHORUS_ALGO_DIR '/nonexistent/plans' is not a directory"));
  TempDir dir;
  dir.copy(kValidXml + "allreduce_ring_4r_1ch_1inst_simple.xml");
  const std::string bad = dir.write("zz_broken.json", "{\"name\": ");
  dir.write("notes.md", "ignored: not a plan extension");
  const std::string message = constructError(config(4, "", dir.path()));
  EXPECT_THAT(message, HasSubstr("CHORUS_ALGO_DIR"));
  EXPECT_THAT(message, HasSubstr(bad));
}

TEST(PlanSelectorTest, DirectoryPlansThatFailVerificationAreRejected) {
  TempDir dir;
  const std::string invalid =
      dir.copy(std::string(CHORUS_SHARED_DIR) +
               "/interop/msccl-xml/invalid/allreduce_pcie_hier_8r_1inst.xml");
  const std::string message = constructError(config(8, "", dir.path()));
  EXPECT_THAT(message, HasSubstr(invalid));
  EXPECT_THAT(message, HasSubstr("is not a valid allreduce plan"));
}

// msccl-tools' out-of-place ReduceScatter ring computes the right output inside the caller's
// send buffer: refused from CHORUS_ALGO_DIR and from CHORUS_ALGO, naming the step and chunk.
TEST(PlanSelectorTest, PlansThatWriteTheirInputAreRejected) {
  TempDir dir;
  const std::string writesInput =
      dir.copy(std::string(CHORUS_SHARED_DIR) +
               "/interop/msccl-xml/invalid/reducescatter_ring_outofplace_4r.xml");
  for (const SelectionConfig& c :
       {config(4, "", dir.path()), config(4, "reducescatter=" + writesInput)}) {
    const std::string message = constructError(c);
    EXPECT_THAT(message, HasSubstr(writesInput + " [reducescatter_ring_outofplace] is not a valid "
                                                 "reducescatter plan"));
    EXPECT_THAT(message, HasSubstr("writes-input: rank 0 tb 0 step 0 (recvReduceCopy from rank 3 "
                                   "with input[0] into input[0]) writes input[0] of rank 0"));
    EXPECT_THAT(message, HasSubstr("must leave its input unchanged"));
  }
}

// ---- precedence and ranges ----------------------------------------------------------------------

TEST(PlanSelectorTest, DefaultsFollowTheProvisionalThreshold) {
  PlanSelector selector(config(4));
  const Selection tiny = selector.choose(request(ir::CollectiveKind::allreduce, 4, 1024));
  EXPECT_EQ(tiny.plan.name, "allreduce.oneshot");
  EXPECT_EQ(tiny.plan.source, "built-in default: <= 16 KiB");
  const Selection small =
      selector.choose(request(ir::CollectiveKind::allreduce, 4, kAllReduceOneShotBytes + 4));
  EXPECT_EQ(small.plan.name, "allreduce.allpairs");
  EXPECT_EQ(small.plan.source, "built-in default: < 256 KiB");
  PlanSelector nine(config(9));  // more ranks than one-shot serves
  EXPECT_EQ(nine.choose(request(ir::CollectiveKind::allreduce, 9, 1024)).plan.name,
            "allreduce.allpairs");
  const Selection large =
      selector.choose(request(ir::CollectiveKind::allreduce, 4, kAllReduceRingBytes));
  EXPECT_EQ(large.plan.name, "allreduce.ring");
  EXPECT_EQ(large.plan.source, "built-in default: >= 256 KiB");
  EXPECT_EQ(large.plan.algorithm->name, "allreduce.ring");
  PlanSelector many(config(kAllPairsMaxRanks + 1));
  EXPECT_EQ(many.select(request(ir::CollectiveKind::allreduce, kAllPairsMaxRanks + 1, 8)).name,
            "allreduce.ring");
}

TEST(PlanSelectorTest, OverridesWinInsideTheirRangesAndFallThroughOutside) {
  TempDir dir;
  ir::Algorithm fromDir = compiled("allreduce.allpairs", 4);
  fromDir.name = "dir_allpairs";
  dir.write("a.json", ir::writeAlgorithm(fromDir, ir::Format::json));
  PlanSelector selector(config(4, "allreduce=ring:0-64K", dir.path()));

  const Selection overridden = selector.choose(request(ir::CollectiveKind::allreduce, 4, 1024));
  EXPECT_EQ(overridden.plan.name, "allreduce.ring");
  EXPECT_EQ(overridden.plan.source, "CHORUS_ALGO ring:0-64K");

  // 64 KiB is outside [0, 64K): the directory's plan (in-place, like the request) is next.
  const Selection fromDirectory =
      selector.choose(request(ir::CollectiveKind::allreduce, 4, 64 * 1024, true));
  EXPECT_EQ(fromDirectory.plan.name, "a.json [dir_allpairs]");
  EXPECT_EQ(fromDirectory.plan.source, "CHORUS_ALGO_DIR");
  EXPECT_THAT(fromDirectory.skipped,
              ::testing::ElementsAre("CHORUS_ALGO allreduce: no entry covers 64 KiB"));

  // Other collectives are untouched by both.
  EXPECT_EQ(selector.select(request(ir::CollectiveKind::allgather, 4, 4096)).source,
            "built-in default: every size");
}

TEST(PlanSelectorTest, DirectoryPlansMatchRanksSizeAndRoot) {
  TempDir dir;
  ir::Algorithm big = compiled("allreduce.ring", 4);
  big.name = "ring_from_1M";
  big.minBytes = 1 << 20;
  dir.write("b_big.json", ir::writeAlgorithm(big, ir::Format::json));
  dir.copy(kValidXml + "allreduce_ring_8r_1ch_1inst_simple.xml");
  dir.copy(kValidXml + "broadcast_chain_4r_2chunks.xml");
  PlanSelector selector(config(4, "", dir.path()));

  const Selection large = selector.choose(request(ir::CollectiveKind::allreduce, 4, 4 << 20, true));
  EXPECT_EQ(large.plan.name, "b_big.json [ring_from_1M]");
  ASSERT_EQ(large.skipped.size(), 1u);
  EXPECT_THAT(large.skipped[0],
              StartsWith("CHORUS_ALGO_DIR/allreduce_ring_8r_1ch_1inst_simple.xml"));
  EXPECT_THAT(large.skipped[0], ::testing::EndsWith(": 8 ranks"));

  const Selection small = selector.choose(request(ir::CollectiveKind::allreduce, 4, 4096, true));
  EXPECT_EQ(small.plan.name, "allreduce.oneshot");
  EXPECT_THAT(small.skipped, ::testing::Contains(HasSubstr("[ring_from_1M]: sizes 1 MiB-max")));

  const auto chain = ir::readAlgorithmsFile(kValidXml + "broadcast_chain_4r_2chunks.xml").at(0);
  const Selection sameRoot =
      selector.choose(request(ir::CollectiveKind::broadcast, 4, 4096, chain.inPlace, chain.root));
  EXPECT_EQ(sameRoot.plan.source, "CHORUS_ALGO_DIR");
  const int otherRoot = (chain.root + 1) % 4;
  const Selection differentRoot =
      selector.choose(request(ir::CollectiveKind::broadcast, 4, 4096, chain.inPlace, otherRoot));
  EXPECT_EQ(differentRoot.plan.name, "broadcast.binomial");
  EXPECT_EQ(differentRoot.plan.algorithm->root, otherRoot);
  EXPECT_THAT(differentRoot.skipped,
              ::testing::ElementsAre(::testing::EndsWith(fmt::format(": root {}", chain.root))));
}

TEST(PlanSelectorTest, ExactInPlaceMatchIsPreferredThenEitherServes) {
  TempDir both;
  both.copy(kValidXml + "allgather_ring_4r_2ch_2inst.xml");  // in place, sorts first
  both.copy(kValidXml + "allgather_ring_simple_4r.xml");     // out of place
  PlanSelector selector(config(4, "", both.path()));
  EXPECT_THAT(selector.select(request(ir::CollectiveKind::allgather, 4, 4096, true)).name,
              StartsWith("allgather_ring_4r_2ch_2inst.xml"));
  EXPECT_THAT(selector.select(request(ir::CollectiveKind::allgather, 4, 4096, false)).name,
              StartsWith("allgather_ring_simple_4r.xml"));

  TempDir inPlaceOnly;
  inPlaceOnly.copy(kValidXml + "allgather_ring_4r_2ch_2inst.xml");
  PlanSelector staged(config(4, "", inPlaceOnly.path()));
  const runtime::Plan plan = staged.select(request(ir::CollectiveKind::allgather, 4, 4096, false));
  EXPECT_THAT(plan.name, StartsWith("allgather_ring_4r_2ch_2inst.xml"));
  EXPECT_EQ(plan.source, "CHORUS_ALGO_DIR, in-place plan with buffers staged");
}

// The in-place allreduce.ring serving an out-of-place call: distinct user buffers, the
// interpreter stages them, the input is left as it was and the output holds the sums.
TEST(PlanSelectorTest, InPlacePlanServesOutOfPlaceCallsOnDistinctBuffers) {
  constexpr int kRanks = 3;
  constexpr std::size_t kCount = 1000;
  PlanSelector selector(config(kRanks));
  const runtime::Plan plan =
      selector.select(request(ir::CollectiveKind::allreduce, kRanks, kAllReduceRingBytes));
  ASSERT_TRUE(plan.algorithm->inPlace);
  transport::ThreadGroup group(kRanks);
  std::vector<std::vector<float>> inputs(kRanks), outputs(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    for (std::size_t i = 0; i < kCount; ++i)
      inputs[r].push_back(static_cast<float>((r + 1) * 1000 + i % 97));
    outputs[r].assign(kCount, -1.0f);
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      runtime::CollectiveArgs args{inputs[r].data(), outputs[r].data(), kCount};
      runtime::executeRank(*plan.algorithm, r, args, group.rank(r));
    });
  }
  for (auto& thread : threads)
    thread.join();
  for (int r = 0; r < kRanks; ++r) {
    for (std::size_t i = 0; i < kCount; ++i) {
      ASSERT_EQ(outputs[r][i], static_cast<float>(6000 + 3 * (i % 97))) << r << " " << i;
      ASSERT_EQ(inputs[r][i], static_cast<float>((r + 1) * 1000 + i % 97)) << r << " " << i;
    }
  }
}

TEST(PlanSelectorTest, OverrideFileEntriesServeTheirRange) {
  const std::string file = kValidXml + "allreduce_ring_4r_1ch_1inst_simple.xml";
  PlanSelector selector(config(4, "allreduce=" + file + ":1M-max"));
  const runtime::Plan large =
      selector.select(request(ir::CollectiveKind::allreduce, 4, 2 << 20, true));
  EXPECT_EQ(large.name, "allreduce_ring_4r_1ch_1inst_simple.xml [" +
                            ir::readAlgorithmsFile(file).at(0).name + "]");
  EXPECT_EQ(large.source, "CHORUS_ALGO " + file + ":1M-max");
  EXPECT_EQ(selector.select(request(ir::CollectiveKind::allreduce, 4, 1024, true)).name,
            "allreduce.oneshot");
}

TEST(PlanSelectorTest, RootedOverridesFollowTheRequestRoot) {
  PlanSelector selector(config(5, "broadcast=binomial;reduce=reduce.binomial:0-max"));
  for (int root = 0; root < 5; ++root) {
    const runtime::Plan b =
        selector.select(request(ir::CollectiveKind::broadcast, 5, 64, false, root));
    EXPECT_EQ(b.algorithm->root, root);
    EXPECT_EQ(b.source, "CHORUS_ALGO binomial");
    const runtime::Plan r = selector.select(request(ir::CollectiveKind::reduce, 5, 64, true, root));
    EXPECT_EQ(r.algorithm->root, root);
    EXPECT_EQ(r.source, "CHORUS_ALGO reduce.binomial:0-max");
  }
}

TEST(PlanSelectorTest, NodeShapedOverridesUseRanksPerNode) {
  PlanSelector selector(config(6, "alltoall=two-step"), 3);
  const runtime::Plan plan = selector.select(request(ir::CollectiveKind::alltoall, 6, 6 * 64));
  EXPECT_EQ(plan.name, "alltoall.two-step");
  EXPECT_GT(plan.algorithm->ranks.at(0).scratchChunks, 0) << "two nodes relay through scratch";
  runtime::ThreadRunOptions options;
  options.count = 16;
  EXPECT_TRUE(runtime::runOnThreads(*plan.algorithm, options).ok());
}

TEST(PlanSelectorTest, RejectsRequestsThatDoNotFit) {
  PlanSelector selector(config(4));
  EXPECT_THAT(errorOf([&] { selector.select(request(ir::CollectiveKind::allreduce, 5, 8)); }),
              HasSubstr("made for 4 ranks but the request has 5"));
  EXPECT_THAT(
      errorOf([&] { selector.select(request(ir::CollectiveKind::broadcast, 4, 8, false, 4)); }),
      HasSubstr("broadcast root 4 is not a rank of 0..3"));
  EXPECT_THAT(errorOf([&] { selector.select(request(ir::CollectiveKind::custom, 4, 8)); }),
              HasSubstr("built-in collectives only"));
  EXPECT_THAT(constructError(config(0)), HasSubstr("0 ranks is out of range"));
}

// ---- cache and logging
// ----------------------------------------------------------------------------

TEST(PlanSelectorTest, CompiledPlansAreSharedAcrossProvidersAndThreads) {
  const auto r = request(ir::CollectiveKind::reduce, 7, 1 << 20, false, 3);
  std::vector<std::shared_ptr<const ir::Algorithm>> seen(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] { seen[t] = makePlanProvider(config(7))->select(r).algorithm; });
  }
  for (auto& thread : threads)
    thread.join();
  for (const auto& plan : seen)
    EXPECT_EQ(plan.get(), seen[0].get());
  EXPECT_EQ(seen[0]->root, 3);
}

TEST(PlanSelectorTest, DescribesTheChoiceAndTheSkippedCandidates) {
  TempDir dir;
  dir.copy(kValidXml + "allreduce_ring_8r_1ch_1inst_simple.xml");
  PlanSelector selector(config(4, "", dir.path()));
  const auto r = request(ir::CollectiveKind::allreduce, 4, 1 << 20);
  const std::string line = describeSelection(r, selector.choose(r));
  EXPECT_THAT(line, StartsWith("allreduce 4 ranks 1 MiB out-of-place: allreduce.ring "
                               "(built-in default: >= 256 KiB); skipped "
                               "CHORUS_ALGO_DIR/allreduce_ring_8r_1ch_1inst_simple.xml ["));
  EXPECT_THAT(line, ::testing::EndsWith("]: 8 ranks"));
  const auto b = request(ir::CollectiveKind::broadcast, 1, 3, true);
  EXPECT_EQ(describeSelection(b, PlanSelector(config(1)).choose(b)),
            "broadcast 1 rank root 0 3 B in-place: broadcast.self (built-in default: 1 rank)");
}

// Re-run by LogsEachDistinctChoiceOnce with CHORUS_DEBUG=INFO (disabled otherwise).
TEST(PlanSelectorLogTest, DISABLED_SelectsRepeatedly) {
  PlanSelector selector(config(4));
  for (int i = 0; i < 3; ++i) {
    selector.select(request(ir::CollectiveKind::allreduce, 4, 1 << 20));
    selector.select(request(ir::CollectiveKind::allreduce, 4, 1 << 21));  // same plan and reason
    selector.select(request(ir::CollectiveKind::allreduce, 4, 64));
  }
}

TEST(PlanSelectorTest, LogsEachDistinctChoiceOnce) {
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  const std::string command = fmt::format(
      "CHORUS_DEBUG=INFO '{}' --gtest_also_run_disabled_tests "
      "--gtest_filter=PlanSelectorLogTest.DISABLED_SelectsRepeatedly 2>&1",
      self);
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0)
    output.append(buffer, n);
  ASSERT_EQ(pclose(pipe), 0) << output;
  const auto occurrences = [&](const std::string& text) {
    std::size_t count = 0;
    for (std::size_t at = output.find(text); at != std::string::npos;
         at = output.find(text, at + 1))
      ++count;
    return count;
  };
  EXPECT_EQ(occurrences("chorus INFO"), 2u) << output;
  EXPECT_EQ(occurrences("allreduce 4 ranks 1 MiB out-of-place: allreduce.ring (built-in default: "
                        ">= 256 KiB)"),
            1u)
      << output;
  EXPECT_EQ(occurrences("allreduce 4 ranks 64 B out-of-place: allreduce.oneshot (built-in "
                        "default: <= 16 KiB)"),
            1u)
      << output;
}

// ---- the built-in defaults ---------------------------------------------------------------------

// Bytes of a request whose CollectiveArgs count is `count` float32 elements.
std::size_t requestBytes(ir::CollectiveKind kind, int nranks, std::size_t count) {
  const bool perRank = kind == ir::CollectiveKind::allgather ||
                       kind == ir::CollectiveKind::reducescatter ||
                       kind == ir::CollectiveKind::alltoall;
  return count * 4 * (perRank ? static_cast<std::size_t>(nranks) : 1);
}

TEST(BuiltinDefaultsTest, ExistForEveryCollectiveRankCountRootAndSize) {
  for (int nranks = 1; nranks <= 9; ++nranks) {
    PlanSelector selector(config(nranks));
    for (ir::CollectiveKind kind : kCollectives) {
      const bool rooted =
          kind == ir::CollectiveKind::broadcast || kind == ir::CollectiveKind::reduce;
      for (int root = 0; root < (rooted ? nranks : 1); ++root) {
        for (std::size_t bytes : {0ul, 1ul, 4096ul, kAllReduceRingBytes - 1, kAllReduceRingBytes,
                                  std::size_t{1} << 30}) {
          for (bool inPlace : {false, true}) {
            const auto r = request(kind, nranks, bytes, inPlace, root);
            const runtime::Plan plan = selector.select(r);
            ASSERT_NE(plan.algorithm, nullptr);
            EXPECT_EQ(plan.algorithm->collective, kind) << plan.name;
            EXPECT_EQ(plan.algorithm->nranks, nranks) << plan.name;
            EXPECT_EQ(plan.algorithm->root, rooted ? root : 0) << plan.name;
            EXPECT_THAT(plan.source, StartsWith("built-in default: ")) << plan.name;
            if (nranks == 1) {
              EXPECT_EQ(plan.algorithm->inPlace, inPlace) << plan.name;
            }
          }
        }
      }
    }
  }
}

TEST(BuiltinDefaultsTest, EveryDefaultRunsWithExactResultsOnThreads) {
  for (int nranks : {1, 2, 3, 4, 5, 8, 9}) {
    PlanSelector selector(config(nranks));
    for (ir::CollectiveKind kind : kCollectives) {
      const bool rooted =
          kind == ir::CollectiveKind::broadcast || kind == ir::CollectiveKind::reduce;
      for (std::size_t count : {1ul, 13ul, 1000ul}) {
        for (bool inPlace : {false, true}) {
          const int root = rooted ? nranks - 1 : 0;
          const auto r = request(kind, nranks, requestBytes(kind, nranks, count), inPlace, root);
          const runtime::Plan plan = selector.select(r);
          runtime::ThreadRunOptions options;
          options.count = count;
          options.timeout = std::chrono::seconds(20);
          const runtime::ThreadRunReport report = runtime::runOnThreads(*plan.algorithm, options);
          EXPECT_TRUE(report.ok()) << plan.name << " " << nranks << " ranks, count " << count
                                   << ": " << report.firstWrong;
          EXPECT_GT(report.checkedElements, 0u) << plan.name;
        }
      }
    }
  }
}

TEST(BuiltinDefaultsTest, LargeAllReduceUsesTheRingAndRunsExactly) {
  const std::size_t count = kAllReduceRingBytes / 4 + 7;
  PlanSelector selector(config(3));
  const runtime::Plan plan =
      selector.select(request(ir::CollectiveKind::allreduce, 3, count * 4, true));
  ASSERT_EQ(plan.name, "allreduce.ring");
  runtime::ThreadRunOptions options;
  options.count = count;
  options.type = runtime::DataType::int32;
  const runtime::ThreadRunReport report = runtime::runOnThreads(*plan.algorithm, options);
  EXPECT_TRUE(report.ok()) << report.firstWrong;
  EXPECT_EQ(report.checkedElements, 3 * count);
}

TEST(BuiltinDefaultsTest, SingleRankPlansCopyOrDoNothing) {
  for (ir::CollectiveKind kind : kCollectives) {
    const runtime::Plan outOfPlace = defaultPlan(request(kind, 1, 64, false));
    EXPECT_EQ(outOfPlace.name, std::string(ir::collectiveName(kind)) + ".self");
    EXPECT_EQ(ir::stepCount(*outOfPlace.algorithm), 1u) << outOfPlace.name;
    const runtime::Plan inPlace = defaultPlan(request(kind, 1, 64, true));
    EXPECT_EQ(ir::stepCount(*inPlace.algorithm), 0u) << inPlace.name;
  }
}

}  // namespace
}  // namespace chorus::selection
