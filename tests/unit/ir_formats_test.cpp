// Round trips, determinism, error messages and MSCCL limit checks for the IR file formats
// (src/ir/{msccl_xml,json_format,text_format,dot_format,formats}).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ir/algorithm.h"
#include "ir/dag.h"
#include "ir/dot_format.h"
#include "ir/formats.h"
#include "ir/json_format.h"
#include "ir/msccl_xml.h"
#include "ir/text_format.h"
#include "support/error.h"

namespace chorus::ir {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Step makeStep(OpKind op, BufferKind srcBuffer, int srcIndex, BufferKind dstBuffer, int dstIndex,
              int count = 1, std::vector<StepRef> deps = {}, bool hasDependents = false) {
  Step step;
  step.op = op;
  step.srcBuffer = srcBuffer;
  step.srcIndex = srcIndex;
  step.dstBuffer = dstBuffer;
  step.dstIndex = dstIndex;
  step.count = count;
  step.deps = std::move(deps);
  step.hasDependents = hasDependents;
  return step;
}

Threadblock makeTb(int id, int send, int recv, int channel, std::vector<Step> steps) {
  Threadblock tb;
  tb.id = id;
  tb.sendPeer = send;
  tb.recvPeer = recv;
  tb.channel = channel;
  tb.steps = std::move(steps);
  return tb;
}

constexpr auto kIn = BufferKind::input;
constexpr auto kOut = BufferKind::output;
constexpr auto kSc = BufferKind::scratch;

// Three ranks using every op kind and buffer, a step with several deps, a trailing nop, and
// canonical hasDependents flags (not a meaningful collective; formats do not care).
Algorithm makeSample() {
  Algorithm a;
  a.name = "sample \"all ops\" <&>";
  a.collective = CollectiveKind::allreduce;
  a.protocol = Protocol::ll128;
  a.inPlace = false;
  a.nranks = 3;
  a.chunksPerLoop = 6;
  a.minBytes = 1024;
  a.maxBytes = 1ull << 40;
  a.ranks.resize(3);

  RankProgram& r0 = a.ranks[0];
  r0.rank = 0;
  r0.inputChunks = 6;
  r0.outputChunks = 6;
  r0.scratchChunks = 2;
  r0.threadblocks.push_back(
      makeTb(0, 1, 2, 0,
             {makeStep(OpKind::send, kIn, 0, kOut, 0, 2, {}, true),
              makeStep(OpKind::recv, kIn, 1, kSc, 1, 1, {}, true),
              makeStep(OpKind::recvReduceCopy, kIn, 3, kOut, 3, 1, {}, true)}));
  r0.threadblocks.push_back(
      makeTb(1, -1, -1, 0,
             {makeStep(OpKind::copy, kIn, 0, kOut, 0, 1, {{0, 0}}, true),
              makeStep(OpKind::reduce, kSc, 1, kOut, 1, 1, {{0, 1}, {2, 0}, {3, 1}}),
              makeStep(OpKind::reduce, kSc, 0, kOut, 1),
              makeStep(OpKind::nop, kIn, 0, kIn, 0, 1, {{0, 2}, {2, 1}})}));
  r0.threadblocks.push_back(
      makeTb(2, 2, 1, 1,
             {makeStep(OpKind::recvCopySend, kIn, 2, kSc, 0, 1, {}, true),
              makeStep(OpKind::recvReduceSend, kIn, 4, kIn, 4, 1, {}, true)}));
  r0.threadblocks.push_back(makeTb(3, 1, -1, 1,
                                   {makeStep(OpKind::recvReduceCopySend, kIn, 5, kOut, 5),
                                    makeStep(OpKind::send, kOut, 5, kOut, 5, 1, {{1, 0}}, true)}));
  // tb 3 receives nothing but has an rrcs; fine for format tests.
  r0.threadblocks[3].recvPeer = 2;

  RankProgram& r1 = a.ranks[1];
  r1.rank = 1;
  r1.inputChunks = 6;
  r1.outputChunks = 6;
  r1.threadblocks.push_back(
      makeTb(0, 0, 0, 0,
             {makeStep(OpKind::recv, kIn, 0, kOut, 0, 2), makeStep(OpKind::send, kIn, 1, kIn, 1)}));
  r1.threadblocks.push_back(makeTb(1, 0, 2, 1, {}));

  RankProgram& r2 = a.ranks[2];
  r2.rank = 2;
  r2.inputChunks = 6;
  r2.threadblocks.push_back(
      makeTb(0, 0, 0, 1, {makeStep(OpKind::send, kIn, 2, kSc, 0, 1, {}, false)}));
  return a;
}

// A ring-like 2-rank program with `steps` steps in rank 0 tb 0.
Algorithm makeLinear(int steps) {
  Algorithm a;
  a.name = "linear";
  a.nranks = 2;
  a.chunksPerLoop = 1;
  a.inPlace = true;
  a.ranks.resize(2);
  a.ranks[1].rank = 1;
  a.ranks[0].inputChunks = a.ranks[1].inputChunks = 1;
  std::vector<Step> sends;
  std::vector<Step> recvs;
  for (int i = 0; i < steps; ++i) {
    sends.push_back(makeStep(OpKind::send, kIn, 0, kIn, 0));
    recvs.push_back(makeStep(OpKind::recv, kIn, 0, kIn, 0));
  }
  a.ranks[0].threadblocks.push_back(makeTb(0, 1, -1, 0, sends));
  a.ranks[1].threadblocks.push_back(makeTb(0, -1, 0, 0, recvs));
  return a;
}

std::string parseErrorOf(auto&& function) {
  try {
    function();
  } catch (const ParseError& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected a ParseError";
  return {};
}

// errorFor(from, to): the ParseError message of `read` on `good` with the first `from`
// replaced by `to`.
auto errorsOfEdits(std::string good, auto read) {
  return [good = std::move(good), read](const std::string& from, const std::string& to) {
    std::string edited = good;
    const auto at = edited.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) edited.replace(at, from.size(), to);
    return parseErrorOf([&] { read(edited); });
  };
}

std::string limitErrorOf(const Algorithm& algorithm, MscclWriteOptions options = {}) {
  try {
    writeMscclXml(algorithm, options);
  } catch (const FormatLimitError& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected a FormatLimitError";
  return {};
}

// ---------------------------------------------------------------------------------------------
// Round trips

TEST(MscclXmlFormat, RoundTripsEveryOpKindBufferAndDependency) {
  const Algorithm a = makeSample();
  const std::string xml = writeMscclXml(a);
  const std::vector<Algorithm> back = readMscclXml(xml, "sample.xml");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0], a);
  EXPECT_EQ(writeMscclXml(back[0]), xml);
}

TEST(MscclXmlFormat, ExtraDependenciesBecomePrecedingNops) {
  const std::string xml = writeMscclXml(makeSample());
  // rank 0 tb 1 step 1 has deps (0,1),(2,0),(3,1): two nops carry (2,0) and (3,1), the reduce
  // carries (0,1). XML positions count the nops.
  EXPECT_THAT(xml, HasSubstr(R"(<step s="1" type="nop" srcbuf="i" srcoff="-1" dstbuf="o" )"
                             R"(dstoff="-1" cnt="0" depid="2" deps="0" hasdep="0"/>)"));
  EXPECT_THAT(xml, HasSubstr(R"(<step s="2" type="nop" srcbuf="i" srcoff="-1" dstbuf="o" )"
                             R"(dstoff="-1" cnt="0" depid="3" deps="1" hasdep="0"/>)"));
  EXPECT_THAT(xml, HasSubstr(R"(<step s="3" type="re" srcbuf="s" srcoff="1" dstbuf="o" )"
                             R"(dstoff="1" cnt="1" depid="0" deps="1" hasdep="0"/>)"));
  EXPECT_THAT(xml, HasSubstr(R"(<step s="0" type="rrcs" srcbuf="i" srcoff="5")"));
}

TEST(MscclXmlFormat, WritesHeaderInReferenceOrder) {
  const std::string xml = writeMscclXml(makeSample());
  EXPECT_THAT(xml, ::testing::StartsWith(
                       "<algo name=\"sample &quot;all ops&quot; &lt;&amp;&gt;\" proto=\"LL128\" "
                       "nchannels=\"2\" nchunksperloop=\"6\" ngpus=\"3\" coll=\"allreduce\" "
                       "inplace=\"0\" outofplace=\"1\" minBytes=\"1024\" "
                       "maxBytes=\"1099511627776\">\n  <gpu id=\"0\" i_chunks=\"6\" "
                       "o_chunks=\"6\" s_chunks=\"2\">\n    <tb id=\"0\" send=\"1\" recv=\"2\" "
                       "chan=\"0\">\n      <step s=\"0\" type=\"s\""));
  EXPECT_THAT(xml, Not(HasSubstr("root=")));
}

TEST(MscclXmlFormat, BroadcastRootRoundTrips) {
  Algorithm a = makeLinear(2);
  a.collective = CollectiveKind::broadcast;
  a.root = 1;
  const std::string xml = writeMscclXml(a);
  EXPECT_THAT(xml, HasSubstr(R"(maxBytes="0" root="1">)"));
  EXPECT_EQ(readMscclXml(xml, "b.xml").at(0), a);
}

TEST(MscclXmlFormat, CustomCollectiveIsWrittenAsCustom) {
  Algorithm a = makeLinear(1);
  a.collective = CollectiveKind::custom;
  a.customName = "alltonext";
  for (bool legacy : {false, true}) {
    const std::string xml = writeMscclXml(a, {.legacyNames = legacy});
    EXPECT_THAT(xml, HasSubstr(R"(coll="custom")"));
    // chorus's extension attribute keeps the custom collective's name.
    EXPECT_THAT(xml, HasSubstr(R"(custom="alltonext")"));
    const Algorithm back = readMscclXml(xml, "c.xml").at(0);
    EXPECT_EQ(back.collective, CollectiveKind::custom);
    EXPECT_EQ(back, a);
  }
}

TEST(MscclXmlFormat, CustomNameEqualToTheAlgoNameIsNotRepeated) {
  Algorithm a = makeLinear(1);
  a.collective = CollectiveKind::custom;
  a.customName = a.name;
  const std::string xml = writeMscclXml(a);
  EXPECT_THAT(xml, Not(HasSubstr("custom=")));
  EXPECT_EQ(readMscclXml(xml, "c.xml").at(0).customName, "");
}

TEST(MscclXmlFormat, ReduceScatterSpellings) {
  Algorithm a = makeLinear(1);
  a.collective = CollectiveKind::reducescatter;
  EXPECT_THAT(writeMscclXml(a), HasSubstr(R"(coll="reducescatter")"));
  const std::string legacy = writeMscclXml(a, {.legacyNames = true});
  EXPECT_THAT(legacy, HasSubstr(R"(coll="reduce_scatter")"));
  EXPECT_EQ(readMscclXml(legacy, "rs.xml").at(0), a);
}

TEST(MscclXmlFormat, SeveralAlgorithmsInOneFile) {
  Algorithm b = makeLinear(3);
  b.name = "second";
  const std::vector<Algorithm> both = {makeSample(), b};
  const std::string xml = writeMscclXml(both);
  EXPECT_EQ(readMscclXml(xml, "two.xml"), both);
  EXPECT_EQ(readAlgorithms(xml, "two.xml"), both);
}

TEST(MscclXmlFormat, FoldsNopsIntoTheNextStep) {
  const std::string xml = R"(<?xml version="1.0"?>
<!-- hand-written -->
<algo name="nops" proto="simple" nchannels="1" nchunksperloop="2" ngpus="1" coll="allreduce" inplace="1" nthreads="256">
  <gpu id="0" i_chunks="2" o_chunks="0" s_chunks="2">
    <tb id="0" send="-1" recv="-1" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="s" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="cpy" srcbuf="i" srcoff="1" dstbuf="s" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="1"/>
    </tb>
    <tb id="1" send="-1" recv="-1" chan="0">
      <step s="0" type="nop" srcbuf="i" srcoff="-1" dstbuf="o" dstoff="-1" cnt="0" depid="0" deps="1" hasdep="0"/>
      <step s="1" type="nop" srcbuf="i" srcoff="-1" dstbuf="o" dstoff="-1" cnt="0" depid="0" deps="0" hasdep="0"/>
      <step s="2" type="re" srcbuf="s" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="0" deps="1" hasdep="0"/>
      <step s="3" type="re" srcbuf="s" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="4" type="nop" srcbuf="i" srcoff="-1" dstbuf="o" dstoff="-1" cnt="0" depid="0" deps="0" hasdep="0"/>
    </tb>
    <tb id="2" send="-1" recv="-1" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="1" deps="4" hasdep="0"/>
      <step s="1" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="1" deps="1" hasdep="0"/>
    </tb>
  </gpu>
</algo>
)";
  const Algorithm a = readMscclXml(xml, "nops.xml").at(0);
  EXPECT_EQ(a.protocol, Protocol::simple);
  const auto& tbs = a.ranks[0].threadblocks;
  ASSERT_EQ(tbs[1].steps.size(), 3u);  // re, re, trailing nop
  EXPECT_EQ(tbs[1].steps[0].deps, (std::vector<StepRef>{{0, 0}, {0, 1}}));
  EXPECT_EQ(tbs[1].steps[0].op, OpKind::reduce);
  EXPECT_TRUE(tbs[1].steps[1].deps.empty());
  EXPECT_EQ(tbs[1].steps[2].op, OpKind::nop);
  EXPECT_EQ(tbs[1].steps[2].deps, (std::vector<StepRef>{{0, 0}}));
  // A wait on a nop: the tb's last real step before it, plus the nop chain's own waits.
  EXPECT_EQ(tbs[2].steps[0].deps, (std::vector<StepRef>{{0, 0}, {1, 1}}));
  // Nop at s=1 of tb 1 precedes every real step: only its chain's waits remain.
  EXPECT_EQ(tbs[2].steps[1].deps, (std::vector<StepRef>{{0, 0}, {0, 1}}));
  // hasdep: kept from the file and set on every dependee.
  EXPECT_TRUE(tbs[0].steps[0].hasDependents);
  EXPECT_TRUE(tbs[0].steps[1].hasDependents);
  EXPECT_TRUE(tbs[1].steps[1].hasDependents);
  EXPECT_FALSE(tbs[1].steps[0].hasDependents);
  // Missing outofplace/minBytes/maxBytes default; re-read of the written form is equal.
  EXPECT_EQ(a.minBytes, 0u);
  EXPECT_EQ(a.maxBytes, 0u);
  EXPECT_EQ(readMscclXml(writeMscclXml(a), "again.xml").at(0), a);
}

TEST(MscclXmlFormat, ReceiveReduceSrcIsReadAsTheLocalOperand) {
  const std::string xml =
      R"(<algo name="p" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="custom" inplace="0">
  <gpu id="0" i_chunks="2" o_chunks="0" s_chunks="0">
    <tb id="0" send="1" recv="-1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="1" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="1" o_chunks="0" s_chunks="0">
    <tb id="0" send="-1" recv="0" chan="0">
      <step s="0" type="rrc" srcbuf="i" srcoff="1" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>)";
  const Algorithm a = readMscclXml(xml, "probe.xml").at(0);
  const Step& rrc = a.ranks[1].threadblocks[0].steps[0];
  EXPECT_EQ(rrc.op, OpKind::recvReduceCopy);
  EXPECT_EQ(rrc.srcIndex, 1);
  EXPECT_EQ(rrc.dstIndex, 0);
  EXPECT_FALSE(a.inPlace);
}

TEST(JsonFormat, RoundTrips) {
  Algorithm a = makeSample();
  a.collective = CollectiveKind::custom;
  a.customName = "alltonext";
  a.root = 2;
  const std::string json = writeJson(a);
  EXPECT_EQ(readJson(json, "s.json"), a);
  EXPECT_EQ(readAlgorithms(json, "s.json"), std::vector<Algorithm>{a});
  EXPECT_THAT(json, ::testing::StartsWith("{\n  \"format\": \"chorus-ir\",\n  \"version\": 1,\n"));
  EXPECT_THAT(json, HasSubstr(R"({"op": "recvReduceCopySend", "src": ["input", 5], )"
                              R"("dst": ["output", 5], "count": 1, "deps": [], )"
                              R"("hasDependents": false})"));
  EXPECT_THAT(json, HasSubstr(R"("deps": [[0, 1], [2, 0], [3, 1]])"));
}

TEST(TextFormat, RoundTrips) {
  Algorithm a = makeSample();
  a.collective = CollectiveKind::broadcast;
  a.root = 1;
  a.customName = "odd \"name\"\n";
  const std::string text = printText(a);
  EXPECT_EQ(parseText(text, "s.txt"), a);
  EXPECT_EQ(readAlgorithms(text, "s.txt"), std::vector<Algorithm>{a});
}

TEST(TextFormat, KeyLines) {
  const std::string text = printText(makeSample());
  EXPECT_THAT(text, ::testing::StartsWith(
                        "algorithm \"sample \\\"all ops\\\" <&>\" collective=allreduce "
                        "protocol=LL128 inplace=0 ranks=3 chunks=6 minBytes=1024 "
                        "maxBytes=1099511627776 root=0 custom=\"\"\nrank 0 input=6 output=6 "
                        "scratch=2\n  tb 0 send=1 recv=2 channel=0\n    0: send input[0] -> "
                        "output[0] count=2 hasdep\n"));
  EXPECT_THAT(text, HasSubstr("\n    1: reduce scratch[1] -> output[1] count=1 "
                              "deps=(0,1),(2,0),(3,1)\n"));
  EXPECT_THAT(text, HasSubstr("\n    3: nop input[0] -> input[0] count=1 deps=(0,2),(2,1)\n"));
  EXPECT_THAT(text, HasSubstr("\n  tb 1 send=0 recv=2 channel=1\nrank 2 "));
}

TEST(TextFormat, AcceptsCommentsAndBlankLines) {
  const std::string text =
      "# a comment\n\nalgorithm \"x\" collective=allgather protocol=LL inplace=1 ranks=1 "
      "chunks=1\n  # another\nrank 0 input=1 output=0 scratch=0\n  tb 0 send=-1 recv=-1 "
      "channel=0\n    0: copy input[0] -> output[0] count=1\n";
  const Algorithm a = parseText(text, "c.txt");
  EXPECT_EQ(a.collective, CollectiveKind::allgather);
  EXPECT_EQ(a.ranks.at(0).threadblocks.at(0).steps.at(0).op, OpKind::copy);
}

TEST(FormatsTest, WritersAreDeterministic) {
  const Algorithm a = makeSample();
  for (Format format : {Format::xml, Format::json, Format::text, Format::dot}) {
    const std::string first = writeAlgorithm(a, format);
    EXPECT_EQ(writeAlgorithm(makeSample(), format), first);
  }
}

TEST(FormatsTest, ParsesFormatNames) {
  EXPECT_EQ(parseFormatName("xml"), Format::xml);
  EXPECT_EQ(parseFormatName("JSON"), Format::json);
  EXPECT_EQ(parseFormatName("text"), Format::text);
  EXPECT_EQ(parseFormatName("txt"), Format::text);
  EXPECT_EQ(parseFormatName("dot"), Format::dot);
  EXPECT_EQ(parseFormatName("yaml"), std::nullopt);
}

TEST(FormatsTest, SniffsAndRejectsUnknownContent) {
  const Algorithm a = makeSample();
  EXPECT_EQ(readAlgorithms("\n  " + writeMscclXml(a), "x"), std::vector<Algorithm>{a});
  const std::string message = parseErrorOf([] { readAlgorithms("digraph x {}", "g.dot"); });
  EXPECT_THAT(message, HasSubstr("g.dot: unrecognized format"));
  EXPECT_THAT(message, HasSubstr("MSCCL XML"));
  EXPECT_THAT(message, HasSubstr("chorus JSON"));
  EXPECT_THAT(message, HasSubstr("text IR"));
  EXPECT_THAT(parseErrorOf([] { readAlgorithms("  \n", "empty.txt"); }),
              HasSubstr("empty.txt: the input is empty"));
  EXPECT_THAT(parseErrorOf([] { readAlgorithmsFile("/nonexistent/plan.xml"); }),
              HasSubstr("/nonexistent/plan.xml: cannot open file"));
  EXPECT_THAT(parseErrorOf([] { readMscclXmlFile("/nonexistent/plan.xml"); }),
              HasSubstr("/nonexistent/plan.xml"));
}

TEST(DotFormat, DrawsClustersMessagesAndDependencies) {
  const std::string dot = writeDot(makeSample());
  EXPECT_THAT(dot, ::testing::StartsWith("digraph \"sample \\\"all ops\\\" <&>\" {\n"));
  EXPECT_THAT(dot, HasSubstr("subgraph cluster_r0 {"));
  EXPECT_THAT(dot, HasSubstr("subgraph cluster_r0_t1 {"));
  EXPECT_THAT(dot, HasSubstr("r0_t0_s0 [label=\"0: send in[0] -> out[0] x2\", peripheries=2];"));
  // rank 0 tb 0 sends to 1 on channel 0; rank 1 tb 0 receives from 0 on channel 0.
  EXPECT_THAT(dot, HasSubstr("r0_t0_s0 -> r1_t0_s0 [color=blue"));
  // rank 1 tb 0 sends to 0 on channel 0; rank 0 tb 0 receives from 2, so no edge.
  EXPECT_THAT(dot, Not(HasSubstr("r1_t0_s1 -> r0_")));
  EXPECT_THAT(dot, HasSubstr("r0_t2_s0 -> r0_t1_s1 [style=dashed];"));
  EXPECT_THAT(dot, HasSubstr("r0_t0_s0 -> r0_t0_s1 [color=gray];"));
}

TEST(DotFormat, DrawsTheChunkDag) {
  Dag dag;
  dag.name = "tiny";
  DagOp copy;
  copy.id = 0;
  copy.src = {0, BufferKind::input, 2};
  copy.dst = {1, BufferKind::scratch, 0};
  DagOp reduce;
  reduce.id = 1;
  reduce.kind = DagOpKind::reduce;
  reduce.src = {1, BufferKind::scratch, 0};
  reduce.dst = {1, BufferKind::output, 1};
  reduce.count = 2;
  reduce.trueDeps = {0};
  reduce.falseDeps = {0};
  dag.ops = {copy, reduce};
  const std::string dot = writeDagDot(dag);
  EXPECT_THAT(dot, HasSubstr("op0 [label=\"copy r0.in[2] -> r1.sc[0] x1\"];"));
  EXPECT_THAT(dot, HasSubstr("op1 [label=\"reduce r1.sc[0] -> r1.out[1] x2\"];"));
  EXPECT_THAT(dot, HasSubstr("op0 -> op1;\n"));
  EXPECT_THAT(dot, HasSubstr("op0 -> op1 [style=dashed];\n"));
}

// ---------------------------------------------------------------------------------------------
// XML errors

std::string xmlWithStep(const std::string& step) {
  return R"(<algo name="e" proto="Simple" nchannels="1" nchunksperloop="1" ngpus="4" coll="allreduce" inplace="1">
  <gpu id="0" i_chunks="1" o_chunks="0" s_chunks="0"><tb id="0" send="-1" recv="-1" chan="0"/></gpu>
  <gpu id="1" i_chunks="1" o_chunks="0" s_chunks="0"><tb id="0" send="-1" recv="-1" chan="0"/></gpu>
  <gpu id="2" i_chunks="1" o_chunks="0" s_chunks="0"><tb id="0" send="-1" recv="-1" chan="0"/></gpu>
  <gpu id="3" i_chunks="1" o_chunks="0" s_chunks="0">
    <tb id="0" send="-1" recv="-1" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
    <tb id="1" send="-1" recv="-1" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="3" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      )" +
         step + R"(
    </tb>
  </gpu>
</algo>
)";
}

std::string xmlStepError(const std::string& step) {
  return parseErrorOf([&] { readMscclXml(xmlWithStep(step), "foo.xml"); });
}

TEST(MscclXmlErrors, ValidBaseParses) {
  EXPECT_NO_THROW(readMscclXml(
      xmlWithStep(
          R"(<step s="4" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="0" deps="0" hasdep="0"/>)"),
      "foo.xml"));
}

TEST(MscclXmlErrors, UnknownStepType) {
  EXPECT_THAT(
      xmlStepError(
          R"(<step s="4" type="rx" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>)"),
      HasSubstr("foo.xml: <gpu id=3> <tb id=1> <step s=4>: attribute 'type' has unknown value "
                "'rx' (expected one of s, r, rcs, rrc, rrs, rrcs, cpy, re, nop)"));
}

TEST(MscclXmlErrors, MissingAndMalformedStepAttributes) {
  EXPECT_THAT(
      xmlStepError(
          R"(<step s="4" type="cpy" srcbuf="i" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>)"),
      HasSubstr("foo.xml: <gpu id=3> <tb id=1> <step s=4>: attribute 'srcoff' is missing"));
  EXPECT_THAT(
      xmlStepError(
          R"(<step s="4" type="cpy" srcbuf="i" srcoff="x1" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>)"),
      HasSubstr("<step s=4>: attribute 'srcoff' has value 'x1' (expected an integer)"));
  EXPECT_THAT(
      xmlStepError(
          R"(<step s="4" type="cpy" srcbuf="q" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>)"),
      HasSubstr("attribute 'srcbuf' has unknown value 'q' (expected one of i, o, s)"));
  EXPECT_THAT(
      xmlStepError(
          R"(<step s="4" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="0" depid="-1" deps="-1" hasdep="0"/>)"),
      HasSubstr("attribute 'cnt' has value '0' (expected a count >= 1)"));
  EXPECT_THAT(
      xmlStepError(
          R"(<step s="4" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="2"/>)"),
      HasSubstr("attribute 'hasdep' has value '2' (expected 0 or 1)"));
  EXPECT_THAT(
      xmlStepError(
          R"(<step s="7" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>)"),
      HasSubstr("<step s=7>: attribute 's' is 7 but the step is at position 4"));
  EXPECT_THAT(
      xmlStepError(R"(<step type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1"/>)"),
      HasSubstr("<gpu id=3> <tb id=1> <step #4>: attribute 's' is missing"));
}

TEST(MscclXmlErrors, BadDependencies) {
  EXPECT_THAT(
      xmlStepError(
          R"(<step s="4" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="5" deps="0" hasdep="0"/>)"),
      HasSubstr("<step s=4>: attribute 'depid' has value '5' (expected -1 or a threadblock id "
                "of this gpu, 0..1)"));
  EXPECT_THAT(
      xmlStepError(
          R"(<step s="4" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="0" deps="3" hasdep="0"/>)"),
      HasSubstr("<step s=4>: attribute 'deps' has value '3' but <tb id=0> has only 1 steps"));
  EXPECT_THAT(
      xmlStepError(
          R"(<step s="4" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="0" hasdep="0"/>)"),
      HasSubstr("<step s=4>: attribute 'deps' is missing"));
}

TEST(MscclXmlErrors, StructureErrors) {
  const std::string good = xmlWithStep("");
  const auto errorFor =
      errorsOfEdits(good, [](const std::string& edited) { readMscclXml(edited, "foo.xml"); });
  EXPECT_THAT(errorFor(R"(ngpus="4")", R"(ngpus="5")"),
              HasSubstr("foo.xml: <algo name=e>: attribute 'ngpus' is 5 but the algo has 4 "
                        "<gpu> elements"));
  EXPECT_THAT(errorFor(R"(ngpus="4")", ""),
              HasSubstr("foo.xml: <algo name=e>: attribute 'ngpus' is missing"));
  EXPECT_THAT(errorFor(R"(coll="allreduce")", R"(coll="allscatter")"),
              HasSubstr("attribute 'coll' has unknown value 'allscatter'"));
  EXPECT_THAT(errorFor(R"(proto="Simple")", R"(proto="LL64")"),
              HasSubstr("attribute 'proto' has unknown value 'LL64'"));
  EXPECT_THAT(errorFor(R"(inplace="1")", R"(inplace="yes")"),
              HasSubstr("attribute 'inplace' has value 'yes' (expected an integer)"));
  EXPECT_THAT(errorFor(R"(<gpu id="2")", R"(<gpu id="4")"),
              HasSubstr("foo.xml: <gpu id=4>: attribute 'id' has value '4' (expected a rank in "
                        "0..3 (ngpus=4))"));
  EXPECT_THAT(errorFor(R"(<gpu id="2")", R"(<gpu id="1")"),
              HasSubstr("foo.xml: <gpu id=1>: duplicate <gpu id=1>"));
  EXPECT_THAT(errorFor(R"(<tb id="1")", R"(<tb id="2")"),
              HasSubstr("foo.xml: <gpu id=3> <tb id=2>: attribute 'id' has value '2' (expected "
                        "an id in 0..1: tb ids must be contiguous from 0)"));
  EXPECT_THAT(errorFor(R"(<tb id="1" send="-1")", R"(<tb id="1" send="4")"),
              HasSubstr("<tb id=1>: attribute 'send' has value '4' (expected -1 or a rank in "
                        "0..3)"));
  EXPECT_THAT(errorFor(R"(<tb id="1" send="-1" recv="-1" chan="0")",
                       R"(<tb id="1" send="-1" recv="-1" chan="1")"),
              HasSubstr("<tb id=1>: attribute 'chan' has value '1' (expected a channel in 0..0 "
                        "(nchannels=1))"));
  EXPECT_THAT(errorFor(R"(<gpu id="3" i_chunks="1")", R"(<gpu id="3" i_chunks="-1")"),
              HasSubstr("<gpu id=3>: attribute 'i_chunks' has value '-1'"));
  EXPECT_THAT(errorFor("</algo>", "</algo><gpu/>"),
              HasSubstr("unexpected element <gpu> (expected <algo>)"));
  EXPECT_THAT(errorFor("<tb id=\"1\"", "<tc/><tb id=\"1\""),
              HasSubstr("<gpu id=3>: unexpected element <tc> (expected <tb>)"));
  EXPECT_THAT(errorFor("</tb>\n  </gpu>\n</algo>", "</tb>\n  </gpu>\n"), HasSubstr("foo.xml:"));
  EXPECT_THAT(parseErrorOf([] { readMscclXml("", "empty.xml"); }),
              HasSubstr("empty.xml: no <algo> element found"));
  EXPECT_THAT(parseErrorOf([] { readMscclXml("<algo name=\"x\"", "bad.xml"); }),
              HasSubstr("bad.xml:1: malformed XML"));
}

TEST(MscclXmlErrors, MessagesCarryTheLine) {
  const std::string message = xmlStepError(
      R"(<step s="4" type="rx" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>)");
  EXPECT_THAT(message, HasSubstr("(line 14)"));
}

// ---------------------------------------------------------------------------------------------
// JSON and text errors

TEST(JsonErrors, NameTheJsonPath) {
  const std::string good = writeJson(makeSample());
  const auto errorFor =
      errorsOfEdits(good, [](const std::string& edited) { readJson(edited, "p.json"); });
  EXPECT_THAT(errorFor(R"("op": "recvReduceSend")", R"("op": "recvReduceSnd")"),
              HasSubstr("p.json: ranks[0].threadblocks[2].steps[1].op: unknown op "
                        "'recvReduceSnd' (expected one of send, recv"));
  EXPECT_THAT(errorFor(R"("src": ["input", 4])", R"("src": ["inbox", 4])"),
              HasSubstr("p.json: ranks[0].threadblocks[2].steps[1].src[0]: unknown buffer"));
  EXPECT_THAT(errorFor(R"("count": 2)", R"("count": "2")"),
              HasSubstr("ranks[0].threadblocks[0].steps[0].count: is a string (expected an "
                        "integer)"));
  EXPECT_THAT(errorFor(R"("deps": [[0, 1], [2, 0], [3, 1]])", R"("deps": [[0, 1], [9, 0]])"),
              HasSubstr("ranks[0].threadblocks[1].steps[1].deps: names threadblock 9 but rank 0 "
                        "has 4 threadblocks"));
  EXPECT_THAT(errorFor(R"("deps": [[0, 1], [2, 0], [3, 1]])", R"("deps": [[1, 0]])"),
              HasSubstr("ranks[0].threadblocks[1].steps[1].deps: names its own threadblock 1"));
  EXPECT_THAT(errorFor(R"("send": 1,)", R"("send": 7,)"),
              HasSubstr("ranks[0].threadblocks[0].send: is 7 (expected an integer in -1..2)"));
  EXPECT_THAT(errorFor(R"("nranks": 3)", R"("nranks": 4)"),
              HasSubstr("p.json: ranks: has 3 entries but nranks is 4"));
  EXPECT_THAT(errorFor(R"("protocol": "LL128",)", ""), HasSubstr("p.json: protocol: is missing"));
  EXPECT_THAT(errorFor(R"("format": "chorus-ir")", R"("format": "msccl")"),
              HasSubstr("p.json: format: is 'msccl' (expected \"chorus-ir\")"));
  EXPECT_THAT(errorFor(R"("version": 1)", R"("version": 2)"),
              HasSubstr("p.json: version: is 2 (this chorus reads version 1)"));
  EXPECT_THAT(errorFor(R"("hasDependents": true)", R"("hasDependents": true, "extra": 1)"),
              HasSubstr("ranks[0].threadblocks[0].steps[0].extra: unknown field"));
  EXPECT_THAT(errorFor(R"("id": 1,)", R"("id": 2,)"),
              HasSubstr("ranks[0].threadblocks[1].id: is 2 but the entry is threadblocks[1]"));
  EXPECT_THAT(parseErrorOf([] { readJson("{\"format\": ", "trunc.json"); }),
              HasSubstr("trunc.json: malformed JSON"));
  EXPECT_THAT(parseErrorOf([] { readJson("[1]", "arr.json"); }),
              HasSubstr("arr.json: top level: is a array (expected an object)"));
}

TEST(TextErrors, NameTheLine) {
  const std::string good = printText(makeSample());
  const auto errorFor =
      errorsOfEdits(good, [](const std::string& edited) { parseText(edited, "t.txt"); });
  EXPECT_THAT(errorFor("0: send input[0] -> output[0]", "0: sendd input[0] -> output[0]"),
              HasSubstr("t.txt:4: unknown op 'sendd'"));
  EXPECT_THAT(errorFor("collective=allreduce", "collective=allscatter"),
              HasSubstr("t.txt:1: collective has unknown value 'allscatter'"));
  EXPECT_THAT(errorFor("collective=allreduce ", ""),
              HasSubstr("t.txt:1: the 'algorithm' line lacks 'collective='"));
  EXPECT_THAT(errorFor(" count=2 hasdep", " hasdep"), HasSubstr("t.txt:4: the step line lacks "
                                                                "'count='"));
  EXPECT_THAT(errorFor("1: recv input[1]", "2: recv input[1]"),
              HasSubstr("t.txt:5: step 2 found where step 1 was expected"));
  EXPECT_THAT(errorFor("deps=(0,1),(2,0),(3,1)", "deps=(0,1),(2,0),(3,9)"),
              HasSubstr("t.txt:9: rank 0 tb 1 step 1: depends on step 9 of tb 3, which has 2 "
                        "steps"));
  EXPECT_THAT(errorFor("deps=(0,1),(2,0),(3,1)", "deps=(0,1)(2,0)"),
              HasSubstr("t.txt:9: deps '(0,1)(2,0)' is not of the form"));
  EXPECT_THAT(errorFor("input[0] -> output[0] count=2", "input[0] => output[0] count=2"),
              HasSubstr("t.txt:4: a step line must read"));
  EXPECT_THAT(errorFor("scratch[1] -> output[1]", "scratch[x] -> output[1]"),
              HasSubstr("t.txt:9: the source has value 'x' (expected an integer)"));
  EXPECT_THAT(errorFor("tb 1 send=-1", "tb 2 send=-1"),
              HasSubstr("t.txt:7: tb 2 found where tb 1 was expected"));
  EXPECT_THAT(errorFor("rank 2 ", "rank 3 "), HasSubstr("rank 3 found where rank 2 was expected"));
  EXPECT_THAT(errorFor("channel=0\n", "channel=0 color=red\n"),
              HasSubstr("t.txt:3: unknown key 'color' in a 'tb' line"));
  EXPECT_THAT(errorFor("algorithm \"sample", "algorithm sample"),
              HasSubstr("t.txt:1: the algorithm name must be a double-quoted string"));
  EXPECT_THAT(parseErrorOf([] { parseText("rank 0 input=1 output=0 scratch=0\n", "r.txt"); }),
              HasSubstr("r.txt:1: expected the 'algorithm' line first"));
  EXPECT_THAT(parseErrorOf([] {
                parseText(
                    "algorithm \"x\" collective=allreduce protocol=LL inplace=1 ranks=2 "
                    "chunks=1\nrank 0 input=1 output=0 scratch=0\n",
                    "r.txt");
              }),
              HasSubstr("r.txt:3: the header says ranks=2 but 1 'rank' lines follow"));
}

// ---------------------------------------------------------------------------------------------
// MSCCL runtime limits

TEST(MscclXmlLimits, TooManyStepsPerThreadblockCountingNops) {
  EXPECT_NO_THROW(writeMscclXml(makeLinear(64)));
  EXPECT_THAT(limitErrorOf(makeLinear(65)),
              HasSubstr("rank 0 tb 0: 65 XML steps (nops for extra dependencies included) "
                        "exceed the MSCCL runtime limit of 64 steps per threadblock"));
  EXPECT_NO_THROW(writeMscclXml(makeLinear(65), {.maxStepsPerThreadblock = 256}));
  EXPECT_NO_THROW(writeMscclXml(makeLinear(300), {.checkLimits = false}));

  // 63 real steps + one step with 2 deps = 65 XML steps.
  Algorithm a = makeLinear(63);
  a.ranks[0].threadblocks.push_back(
      makeTb(1, -1, -1, 0,
             {makeStep(OpKind::copy, kIn, 0, kIn, 0), makeStep(OpKind::copy, kIn, 0, kIn, 0)}));
  a.ranks[0].threadblocks[1].steps[0].hasDependents = true;
  a.ranks[0].threadblocks[1].steps[1].hasDependents = true;
  a.ranks[0].threadblocks[0].steps.push_back(
      makeStep(OpKind::copy, kIn, 0, kIn, 0, 1, {{1, 0}, {1, 1}}));
  EXPECT_THAT(limitErrorOf(a), HasSubstr("rank 0 tb 0: 65 XML steps"));
}

TEST(MscclXmlLimits, StepLimitIsAWriterOptionAndItsErrorSaysHowToRaiseIt) {
  const std::string error = limitErrorOf(makeLinear(65));
  EXPECT_THAT(error, HasSubstr("raise the limit with --msccl-max-steps N"));
  EXPECT_THAT(error, HasSubstr("built with MSCCL_MAX_NUM_STEPS >= N"));
  EXPECT_THAT(error, HasSubstr("the older msccl runtime takes 256"));
  const MscclWriteOptions oldRuntime{.maxStepsPerThreadblock = 256};
  EXPECT_NO_THROW(writeMscclXml(makeLinear(256), oldRuntime));
  EXPECT_THAT(limitErrorOf(makeLinear(257), oldRuntime),
              HasSubstr("257 XML steps (nops for extra dependencies included) exceed the MSCCL "
                        "runtime limit of 256 steps per threadblock"));
  EXPECT_THAT(limitErrorOf(makeLinear(11), {.maxStepsPerThreadblock = 10}),
              HasSubstr("limit of 10 steps"));
  // Format dispatch passes the option through, and other formats have no such limit.
  EXPECT_THROW(writeAlgorithm(makeLinear(65), Format::xml), FormatLimitError);
  EXPECT_NO_THROW(writeAlgorithm(makeLinear(65), Format::xml, oldRuntime));
  EXPECT_NO_THROW(writeAlgorithm(makeLinear(300), Format::json));
  EXPECT_THROW(writeMscclXml(makeLinear(1), {.maxStepsPerThreadblock = 0}), OptionError);
}

TEST(MscclXmlLimits, CountOffsetChannelAndDependee) {
  Algorithm cnt = makeLinear(3);
  cnt.ranks[0].threadblocks[0].steps[2].count = 72;
  EXPECT_THAT(limitErrorOf(cnt),
              HasSubstr("rank 0 tb 0 step 2 (send): cnt 72 is outside the MSCCL runtime limit "
                        "1..71"));
  cnt.ranks[0].threadblocks[0].steps[2].count = 71;
  EXPECT_NO_THROW(writeMscclXml(cnt));
  cnt.ranks[0].threadblocks[0].steps[2].count = 0;
  EXPECT_THAT(limitErrorOf(cnt), HasSubstr("cnt 0 is outside"));

  Algorithm offset = makeLinear(2);
  offset.ranks[1].threadblocks[0].steps[1].dstIndex = 32768;
  EXPECT_THAT(limitErrorOf(offset),
              HasSubstr("rank 1 tb 0 step 1 (recv): dstoff 32768 is outside the MSCCL runtime "
                        "limit 0..32767"));

  Algorithm channel = makeLinear(1);
  channel.ranks[0].threadblocks[0].channel = 32;
  channel.ranks[1].threadblocks[0].channel = 32;
  EXPECT_THAT(limitErrorOf(channel),
              HasSubstr("rank 0 tb 0: channel 32 is outside the MSCCL runtime limit 0..31"));

  Algorithm dependee = makeLinear(1);
  auto& tbs = dependee.ranks[0].threadblocks;
  for (int id = 1; id <= 128; ++id) {
    tbs.push_back(makeTb(id, -1, -1, 0, {makeStep(OpKind::copy, kIn, 0, kIn, 0)}));
  }
  tbs[128].steps[0].hasDependents = true;
  tbs[0].steps[0].deps = {{128, 0}};
  EXPECT_THAT(limitErrorOf(dependee),
              HasSubstr("rank 0 tb 0 step 0 (send): depends on tb 128 step 0, but the MSCCL "
                        "runtime stores depid as int8"));
  tbs[0].steps[0].deps = {{127, 0}};
  tbs[128].steps[0].hasDependents = false;
  tbs[127].steps[0].hasDependents = true;
  EXPECT_NO_THROW(writeMscclXml(dependee));
  EXPECT_EQ(readMscclXml(writeMscclXml(dependee), "d.xml").at(0), dependee);
}

TEST(MscclXmlLimits, ThreadblockIdLimit) {
  Algorithm a = makeLinear(1);
  auto& tbs = a.ranks[0].threadblocks;
  for (int id = 1; id <= 1024; ++id)
    tbs.push_back(makeTb(id, -1, -1, 0, {}));
  EXPECT_THAT(limitErrorOf(a), HasSubstr("rank 0 tb 1024: threadblock id 1024 exceeds"));
}

// ---------------------------------------------------------------------------------------------
// A step's own peer and channel (Step::peer, Step::channel)

// makeSample() with a step's peer and channel set on three steps (two-sided steps may not set
// them, but the formats carry whatever the IR holds; the verifier judges).
Algorithm makeSampleWithEndpoints() {
  Algorithm a = makeSample();
  a.ranks[0].threadblocks[0].steps[0].peer = 2;
  a.ranks[0].threadblocks[0].steps[0].channel = 3;
  a.ranks[0].threadblocks[1].steps[3].channel = 0;
  a.ranks[1].threadblocks[0].steps[0].peer = 0;
  return a;
}

TEST(StepEndpointsFormat, JsonCarriesThemOnlyWhenSet) {
  const Algorithm a = makeSampleWithEndpoints();
  const std::string json = writeJson(a);
  EXPECT_THAT(json, HasSubstr(R"({"op": "send", "peer": 2, "channel": 3, "src": ["input", 0], )"));
  EXPECT_THAT(json, HasSubstr(R"({"op": "nop", "channel": 0, "src": )"));
  EXPECT_THAT(json, HasSubstr(R"({"op": "recv", "peer": 0, "src": ["input", 0], )"));
  EXPECT_EQ(readJson(json, "e.json"), a);
  EXPECT_EQ(readAlgorithms(json, "e.json"), std::vector<Algorithm>{a});
  // Unset (-1) is not written: plans without them print exactly as before.
  EXPECT_THAT(writeJson(makeSample()), Not(HasSubstr("\"peer\"")));
  EXPECT_THAT(writeJson(makeSample()), Not(HasSubstr(R"("op": "send", "channel")")));
  // An explicit -1 reads as unset.
  std::string explicitUnset = writeJson(makeSample());
  const std::string send = R"({"op": "send", )";
  explicitUnset.replace(explicitUnset.find(send), send.size(),
                        R"({"op": "send", "peer": -1, "channel": -1, )");
  EXPECT_EQ(readJson(explicitUnset, "u.json"), makeSample());
}

TEST(StepEndpointsFormat, TextCarriesThemOnlyWhenSet) {
  const Algorithm a = makeSampleWithEndpoints();
  const std::string text = printText(a);
  EXPECT_THAT(text, HasSubstr("\n    0: send input[0] -> output[0] count=2 peer=2 channel=3 "
                              "hasdep\n"));
  EXPECT_THAT(text, HasSubstr("\n    3: nop input[0] -> input[0] count=1 channel=0 "
                              "deps=(0,2),(2,1)\n"));
  EXPECT_THAT(text, HasSubstr("\n    0: recv input[0] -> output[0] count=2 peer=0\n"));
  EXPECT_EQ(parseText(text, "e.txt"), a);
  EXPECT_EQ(readAlgorithms(text, "e.txt"), std::vector<Algorithm>{a});
  EXPECT_THAT(printText(makeSample()), Not(HasSubstr("peer=")));
}

TEST(StepEndpointsFormat, DotShowsThem) {
  const std::string dot = writeDot(makeSampleWithEndpoints());
  EXPECT_THAT(dot, HasSubstr("r0_t0_s0 [label=\"0: send in[0] -> out[0] x2 peer=2 ch=3\", "
                             "peripheries=2];"));
  EXPECT_THAT(dot, HasSubstr("r0_t1_s3 [label=\"3: nop ch=0\"];"));
  EXPECT_THAT(writeDot(makeSample()), Not(HasSubstr("peer=")));
}

TEST(StepEndpointsFormat, JsonRejectsBadValuesNamingTheStep) {
  const std::string good = writeJson(makeSampleWithEndpoints());
  const auto errorFor =
      errorsOfEdits(good, [](const std::string& edited) { readJson(edited, "p.json"); });
  EXPECT_THAT(errorFor(R"("peer": 2)", R"("peer": 3)"),
              HasSubstr("p.json: ranks[0].threadblocks[0].steps[0].peer: is 3 (expected -1 for "
                        "the threadblock's peer, or a rank in 0..2)"));
  EXPECT_THAT(errorFor(R"("peer": 2)", R"("peer": -2)"),
              HasSubstr("ranks[0].threadblocks[0].steps[0].peer: is -2 (expected -1"));
  EXPECT_THAT(errorFor(R"("channel": 3)", R"("channel": -7)"),
              HasSubstr("p.json: ranks[0].threadblocks[0].steps[0].channel: is -7 (expected -1 "
                        "for the threadblock's channel, or a channel >= 0)"));
  EXPECT_THAT(errorFor(R"("peer": 0)", R"("peer": "0")"),
              HasSubstr("ranks[1].threadblocks[0].steps[0].peer: is a string (expected an "
                        "integer)"));
  EXPECT_THAT(errorFor(R"("channel": 3)", R"("channel": 3000000000)"),
              HasSubstr("ranks[0].threadblocks[0].steps[0].channel: is 3000000000 (expected an "
                        "integer in"));
}

TEST(StepEndpointsFormat, TextRejectsBadValuesNamingTheStep) {
  const std::string good = printText(makeSampleWithEndpoints());
  const auto errorFor =
      errorsOfEdits(good, [](const std::string& edited) { parseText(edited, "t.txt"); });
  EXPECT_THAT(errorFor("peer=2 ", "peer=3 "),
              HasSubstr("t.txt:4: rank 0 tb 0 step 0: peer has value '3' (expected -1 for the "
                        "threadblock's peer, or a rank in 0..2)"));
  EXPECT_THAT(errorFor("peer=0\n", "peer=x\n"),
              HasSubstr("rank 1 tb 0 step 0: peer has value 'x' (expected -1"));
  EXPECT_THAT(errorFor("channel=0 deps", "channel=-3 deps"),
              HasSubstr("t.txt:11: rank 0 tb 1 step 3: channel has value '-3' (expected -1 for "
                        "the threadblock's channel, or a channel >= 0)"));
  EXPECT_THAT(errorFor("peer=2 ", "peer=2 peer=1 "), HasSubstr("key 'peer' appears twice"));
  EXPECT_THAT(errorFor("hasdep\n", "color=red\n"),
              HasSubstr("(expected count=, peer=, channel=, deps= or hasdep)"));
}

TEST(StepEndpointsFormat, MscclXmlWriterRefusesThemNamingTheStep) {
  const Algorithm a = makeSampleWithEndpoints();
  const std::string expected =
      "cannot write MSCCL XML for 'sample \"all ops\" <&>': rank 0 tb 0 step 0 (send) names "
      "peer 2 / channel 3, but MSCCL XML has no per-step peer or channel (a step uses its <tb>'s "
      "send, recv and chan); write the chorus JSON or text format instead (--format json or "
      "--format text)";
  EXPECT_EQ(limitErrorOf(a), expected);
  // Not a runtime limit: refused with the limit checks off too, and through format dispatch.
  EXPECT_EQ(limitErrorOf(a, {.checkLimits = false}), expected);
  EXPECT_THROW(writeAlgorithm(a, Format::xml), FormatLimitError);
  Algorithm channelOnly = makeSample();
  channelOnly.ranks[2].threadblocks[0].steps[0].channel = 1;
  EXPECT_THAT(limitErrorOf(channelOnly), HasSubstr("rank 2 tb 0 step 0 (send) names channel 1, "
                                                   "but MSCCL XML has no per-step peer"));
  // JSON and text take them.
  EXPECT_NO_THROW(writeAlgorithm(a, Format::json));
  EXPECT_NO_THROW(writeAlgorithm(a, Format::text));
}

// ---------------------------------------------------------------------------------------------
// Format detection by content (readAlgorithms, detectFormat)

// The shape of an MSCCL++ execution plan (microsoft/mscclpp test/execution-files): key names
// only, values made up.
constexpr std::string_view kMscclppLikePlan = R"({
  "name": "allreduce_packet",
  "collective": "allreduce",
  "protocol": "LL",
  "inplace": true,
  "gpus": [
    {"id": 0, "input_chunks": 2, "output_chunks": 0, "scratch_chunks": 4,
     "threadblocks": [{"id": 0, "ops": [{"name": "put", "channel_ids": [0]},
                                        {"name": "signal"}, {"name": "wait"}],
                       "channels": [{"channel_type": "memory", "channel_ids": [0]}]}]}
  ],
  "num_threads_per_block": 1024
}
)";

std::string readErrorOf(std::string_view text, const std::string& source = "in") {
  return parseErrorOf([&] { readAlgorithms(text, source); });
}

TEST(FormatDetection, NamesEachFormatByContent) {
  const Algorithm a = makeSample();
  EXPECT_EQ(detectFormat(writeMscclXml(a)), "MSCCL XML");
  EXPECT_EQ(detectFormat(writeJson(a)), "chorus JSON");
  EXPECT_EQ(detectFormat(printText(a)), "chorus text IR");
  EXPECT_EQ(detectFormat(writeDot(a)), "DOT");
  EXPECT_EQ(detectFormat(kMscclppLikePlan), "MSCCL++ execution plan");
  EXPECT_EQ(detectFormat("{\"a\": 1}"), std::nullopt);
  EXPECT_EQ(detectFormat("<html></html>"), std::nullopt);
  EXPECT_EQ(detectFormat("algorithms are fun"), std::nullopt);
  EXPECT_EQ(detectFormat(""), std::nullopt);
}

TEST(FormatDetection, MscclXmlAfterDeclarationCommentsAndDoctype) {
  const Algorithm a = makeSample();
  const std::string xml =
      "\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- made by "
      "hand <algo> -->\n<!DOCTYPE algo [ <!ENTITY x \"y\"> ]>\n" +
      writeMscclXml(a);
  EXPECT_EQ(detectFormat(xml), "MSCCL XML");
  EXPECT_EQ(readAlgorithms(xml, "d.xml"), std::vector<Algorithm>{a});
  // A truncated <algo> still goes to the XML reader, whose message names the line.
  EXPECT_THAT(readErrorOf("<algo name=\"x\"", "bad.xml"), HasSubstr("bad.xml:1: malformed XML"));
}

TEST(FormatDetection, RefusesXmlThatIsNotMscclXml) {
  const std::string html = readErrorOf(
      "<!DOCTYPE html>\n<html><head><title>algo</title></head><body><algo/></body></html>\n",
      "page.html");
  EXPECT_THAT(html, HasSubstr("page.html: unrecognized format: the input is XML whose first "
                              "element is <html>, not MSCCL XML (<algo> elements)"));
  EXPECT_THAT(html, HasSubstr("chorus reads MSCCL XML (<algo> elements), chorus JSON (an object "
                              "with \"format\": \"chorus-ir\"), MSCCL++ execution plans (an "
                              "object with \"gpus\" whose threadblocks have \"ops\") and the "
                              "chorus text IR"));
  EXPECT_THAT(readErrorOf("<algorithm name=\"x\"/>"),
              HasSubstr("XML whose first element is <algorithm>"));
  EXPECT_THAT(readErrorOf("<?xml version=\"1.0\"?>\n<!-- nothing -->\n"),
              HasSubstr("unrecognized format: the input is XML without an element"));
}

TEST(FormatDetection, ChorusJsonByItsFormatMarkerAnywhereAtTheTop) {
  const Algorithm a = makeSample();
  std::string json = writeJson(a);
  // Move "format" from the first to the last member: still chorus JSON.
  const std::string marker = "\n  \"format\": \"chorus-ir\",";
  json.erase(json.find(marker), marker.size());
  json.insert(json.rfind('}'), ",\"format\": \"chorus-ir\"\n");
  EXPECT_EQ(detectFormat(json), "chorus JSON");
  EXPECT_EQ(readAlgorithms(json, "moved.json"), std::vector<Algorithm>{a});
  // A nested "format" does not count.
  EXPECT_EQ(detectFormat(R"({"meta": {"format": "chorus-ir"}})"), std::nullopt);
  // Malformed chorus JSON after the marker gets the JSON reader's message.
  EXPECT_THAT(readErrorOf("{\"format\": \"chorus-ir\", \"version\": ", "t.json"),
              HasSubstr("t.json: malformed JSON"));
}

TEST(FormatDetection, MscclppPlanGoesToItsReader) {
  // This plan lacks the GPU's "channels": the MSCCL++ reader (ir/mscclpp_plan.h) says so.
  const std::string message = readErrorOf(kMscclppLikePlan, "allreduce_packet.json");
  EXPECT_THAT(message, HasSubstr("allreduce_packet.json: MSCCL++ execution plan: plan.gpus[0]: "
                                 "missing \"channels\""));
  // Recognised by gpus -> threadblocks -> ops alone (older plans spell the other keys
  // differently), or by num_threads_per_block.
  EXPECT_THAT(readErrorOf(R"({"gpus": [{"threadblocks": [{"ops": []}]}]})"),
              HasSubstr("MSCCL++ execution plan: plan: missing \"name\""));
  EXPECT_THAT(readErrorOf(R"({"num_threads_per_block": 512, "gpus": []})"),
              HasSubstr("MSCCL++ execution plan: plan: missing \"name\""));
  // "gpus" alone is not enough.
  EXPECT_THAT(readErrorOf(R"({"gpus": [{"threadblocks": [{"steps": []}]}]})"),
              HasSubstr("unrecognized format"));
}

TEST(FormatDetection, OtherJsonIsDescribed) {
  EXPECT_THAT(readErrorOf(R"({"version": 1, "name": "x", "ranks": []})", "old.json"),
              HasSubstr("old.json: unrecognized format: the input is a JSON object with the "
                        "top-level keys \"version\", \"name\", \"ranks\": neither chorus JSON "
                        "(no \"format\": \"chorus-ir\") nor an MSCCL++ execution plan"));
  EXPECT_THAT(readErrorOf(R"({"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8})"),
              HasSubstr("keys \"a\", \"b\", \"c\", \"d\", \"e\", \"f\" and 2 more:"));
  EXPECT_THAT(readErrorOf(R"({"format": "msccl", "nranks": 2})"),
              HasSubstr("the input is a JSON object whose \"format\" is \"msccl\", not "
                        "\"chorus-ir\""));
  EXPECT_THAT(readErrorOf(R"({"format": "chorus-topology/1", "name": "t"})"),
              HasSubstr("a chorus topology file (\"format\": \"chorus-topology/1\"); pass it to "
                        "--topology"));
  EXPECT_THAT(readErrorOf("[1, 2]"), HasSubstr("unrecognized format: the input is a JSON array"));
  EXPECT_THAT(readErrorOf("{}"), HasSubstr("the input is an empty JSON object"));
  const std::string malformed = readErrorOf("{\"a\": [1, 2}", "m.json");
  EXPECT_THAT(malformed, HasSubstr("m.json: malformed JSON: "));
  EXPECT_THAT(malformed, HasSubstr("chorus reads MSCCL XML"));
}

TEST(FormatDetection, TextIrAfterCommentsAndDotAndOtherText) {
  const Algorithm a = makeSample();
  const std::string text = "# plan made by hand\n\n   # indented comment\n" + printText(a);
  EXPECT_EQ(detectFormat(text), "chorus text IR");
  EXPECT_EQ(readAlgorithms(text, "c.txt"), std::vector<Algorithm>{a});
  EXPECT_THAT(readErrorOf("# only\n# comments\n", "c.txt"),
              HasSubstr("c.txt: unrecognized format: the input is only '#' comments"));
  EXPECT_THAT(readErrorOf("# header\nrank 0 input=1 output=0 scratch=0\n"),
              HasSubstr("the input is text starting with 'rank 0 input=1 outpu' after its "
                        "comments"));
  EXPECT_THAT(readErrorOf("algorithmic notes\n"),
              HasSubstr("the input is text starting with 'algorithmic notes'"));
  const std::string dot = readErrorOf("/* picture */\nstrict digraph \"x\" {}\n", "x.dot");
  EXPECT_THAT(dot, HasSubstr("x.dot: unrecognized format: this is a DOT graph"));
  EXPECT_THAT(dot, HasSubstr("DOT is output only"));
}

}  // namespace
}  // namespace chorus::ir
