// The MSCCL++ execution-plan reader (src/ir/mscclpp_plan.h): how each op becomes steps, and
// the errors for plans it cannot read, each naming the JSON path and what to do.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "chorus/error.h"
#include "ir/formats.h"
#include "ir/mscclpp_plan.h"

namespace chorus::ir {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// Two ranks, in place, memory channels both ways; rank 0 runs `ops` in its one threadblock,
// rank 1 runs nothing.
json planWithOps(json ops) {
  auto gpu = [](int rank, int peer, json tbOps) {
    return json{{"id", rank},
                {"input_chunks", 2},
                {"output_chunks", 2},
                {"scratch_chunks", 2},
                {"channels",
                 {{{"channel_type", "memory"}, {"connected_to", {peer}}},
                  {{"channel_type", "port"}, {"connected_to", {peer}}}}},
                {"remote_buffers",
                 {{{"rank", peer}, {"type", "i"}, {"access_channel_types", {"memory"}}},
                  {{"rank", peer}, {"type", "s"}, {"access_channel_types", {"port"}}}}},
                {"semaphores", {{{"init_value", 1}}}},
                {"threadblocks",
                 {{{"id", 0},
                   {"channels",
                    {{{"channel_type", "memory"}, {"channel_ids", {0}}},
                     {{"channel_type", "port"}, {"channel_ids", {0}}}}},
                   {"remote_buffer_refs",
                    {{{"access_channel_type", "memory"}, {"remote_buffer_ids", {0}}},
                     {{"access_channel_type", "port"}, {"remote_buffer_ids", {1}}}}},
                   {"ops", tbOps}}}}};
  };
  return {{"name", "p"},
          {"collective", "allreduce"},
          {"protocol", "Simple"},
          {"inplace", true},
          {"gpus", {gpu(0, 1, ops), gpu(1, 0, json::array())}}};
}

json local(const char* type, int index, int size = 1) {
  return {{"type", type}, {"index", index}, {"size", size}};
}
json remote(int id, int index, int size = 1) {
  return {{"buffer_id", id}, {"index", index}, {"size", size}};
}

std::vector<Step> stepsOf(const json& ops) {
  return readMscclppPlan(planWithOps(ops).dump(), "p.json").ranks[0].threadblocks[0].steps;
}

std::string errorOf(const json& plan) {
  try {
    readMscclppPlan(plan.dump(), "p.json");
  } catch (const ParseError& error) {
    return error.what();
  }
  return "no error";
}

TEST(MscclppPlan, ReadsTheHeaderChannelsAndSemaphores) {
  const Algorithm a = readMscclppPlan(planWithOps(json::array()).dump(), "p.json");
  EXPECT_EQ(a.name, "p");
  EXPECT_EQ(a.collective, CollectiveKind::allreduce);
  EXPECT_TRUE(a.inPlace);
  EXPECT_EQ(a.nranks, 2);
  EXPECT_EQ(a.chunksPerLoop, 2);
  ASSERT_EQ(a.ranks[0].channels.size(), 2u);  // memory channels first, then port channels
  EXPECT_EQ(a.ranks[0].channels[0], (Channel{ChannelType::memory, 1}));
  EXPECT_EQ(a.ranks[0].channels[1], (Channel{ChannelType::port, 1}));
  EXPECT_EQ(a.ranks[0].semaphores, std::vector<int>{1});
  EXPECT_EQ(a.ranks[1].scratchChunks, 2);
  EXPECT_EQ(detectFormat(planWithOps(json::array()).dump()), "MSCCL++ execution plan");
}

TEST(MscclppPlan, OpsBecomeSteps) {
  // rres: dst[0] = src[0] + remote src[1], then put to the remote dst[1].
  const std::vector<Step> rres = stepsOf({{{"name", "rres"},
                                           {"channel_type", "memory"},
                                           {"src_buff", {local("i", 0), remote(0, 0)}},
                                           {"dst_buff", {local("i", 0), remote(0, 0)}},
                                           {"reduce_op", "sum"}}});
  ASSERT_EQ(rres.size(), 2u);
  EXPECT_EQ(rres[0].op, OpKind::getReduce);
  EXPECT_EQ(rres[0].peer, 1);
  EXPECT_EQ(rres[1].op, OpKind::put);
  EXPECT_EQ(rres[1].srcBuffer, BufferKind::input);
  EXPECT_EQ(rres[1].dstBuffer, BufferKind::input);

  // re with dst unequal to every source: a copy first, then a reduce per other source.
  const std::vector<Step> re = stepsOf({{{"name", "re"},
                                         {"src_buff", {local("i", 0), local("s", 0)}},
                                         {"dst_buff", {local("s", 1)}}}});
  ASSERT_EQ(re.size(), 2u);
  EXPECT_EQ(re[0].op, OpKind::copy);
  EXPECT_EQ(re[1].op, OpKind::reduce);

  // pwsf on a port channel: put, signal and flush on that channel (index 1: port after memory).
  const std::vector<Step> pwsf = stepsOf({{{"name", "pwsf"},
                                           {"channel_type", "port"},
                                           {"channel_ids", {0}},
                                           {"src_buff", {local("i", 1)}},
                                           {"dst_buff", {remote(0, 1)}}}});
  ASSERT_EQ(pwsf.size(), 3u);
  EXPECT_EQ(pwsf[0].op, OpKind::put);
  EXPECT_EQ(pwsf[0].channel, 1);
  EXPECT_EQ(pwsf[0].dstBuffer, BufferKind::scratch);
  EXPECT_EQ(pwsf[1].op, OpKind::signal);
  EXPECT_EQ(pwsf[2].op, OpKind::flush);

  // rlxsignal on a port channel is an ordinary signal (MSCCL++ relaxes memory channels only).
  const std::vector<Step> rlx =
      stepsOf({{{"name", "rlxsignal"}, {"channel_type", "port"}, {"channel_ids", {0}}},
               {{"name", "rlxsignal"}, {"channel_type", "memory"}, {"channel_ids", {0}}}});
  EXPECT_EQ(rlx[0].op, OpKind::signal);
  EXPECT_EQ(rlx[1].op, OpKind::relaxedSignal);

  const std::vector<Step> sync =
      stepsOf({{{"name", "barrier"}, {"barrier_id", 3}, {"num_threadblocks", 1}},
               {{"name", "sem_acquire"}, {"semaphore_ids", {0}}}});
  EXPECT_EQ(sync[0].op, OpKind::barrier);
  EXPECT_EQ(sync[0].channel, 3);
  EXPECT_EQ(sync[0].count, 1);
  EXPECT_EQ(sync[1].op, OpKind::semAcquire);
  EXPECT_EQ(sync[1].peer, -1);
}

TEST(MscclppPlan, PacketOpsBecomeStepsOnPackets) {
  // cpkt then upkt: copies into and out of packets; upkt reads scratch whatever its type says.
  const std::vector<Step> copies =
      stepsOf({{{"name", "cpkt"}, {"src_buff", {local("i", 0)}}, {"dst_buff", {local("s", 1)}}},
               {{"name", "upkt"}, {"src_buff", {local("o", 1)}}, {"dst_buff", {local("o", 0)}}}});
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(copies[0].op, OpKind::copy);
  EXPECT_TRUE(copies[0].dstPackets);
  EXPECT_FALSE(copies[0].srcPackets);
  EXPECT_EQ(copies[1].op, OpKind::copy);
  EXPECT_TRUE(copies[1].srcPackets);
  EXPECT_EQ(copies[1].srcBuffer, BufferKind::scratch);

  // ppkt: plain data into the peer's packets on a memory channel; packets copied as they are
  // on a port channel; rppkt forwards packets after waiting for them.
  const std::vector<Step> puts = stepsOf({{{"name", "ppkt"},
                                           {"channel_type", "memory"},
                                           {"src_buff", {local("i", 0)}},
                                           {"dst_buff", {remote(0, 1)}}},
                                          {{"name", "ppkt"},
                                           {"channel_type", "port"},
                                           {"channel_ids", {0}},
                                           {"src_buff", {local("s", 0)}},
                                           {"dst_buff", {remote(0, 1)}}},
                                          {{"name", "rppkt"},
                                           {"channel_type", "memory"},
                                           {"src_buff", {local("s", 0)}},
                                           {"dst_buff", {remote(0, 0)}}}});
  ASSERT_EQ(puts.size(), 3u);
  EXPECT_EQ(puts[0].op, OpKind::put);
  EXPECT_FALSE(puts[0].srcPackets);
  EXPECT_TRUE(puts[0].dstPackets);
  EXPECT_EQ(puts[0].channel, -1);
  EXPECT_TRUE(puts[1].srcPackets && puts[1].dstPackets && puts[1].rawPackets);
  EXPECT_EQ(puts[1].channel, 1);
  EXPECT_TRUE(puts[2].srcPackets && puts[2].dstPackets);
  EXPECT_FALSE(puts[2].rawPackets);

  // recspkt: dst[0] = src[0] + packets of src[1], copied as packets to dst[1] and put as
  // packets to the remote dst[2].
  const std::vector<Step> reduce =
      stepsOf({{{"name", "recspkt"},
                {"channel_type", "memory"},
                {"src_buff", {local("i", 0), local("s", 0)}},
                {"dst_buff", {local("o", 0), local("s", 1), remote(0, 1)}},
                {"reduce_op", "sum"}}});
  ASSERT_EQ(reduce.size(), 4u);
  EXPECT_EQ(reduce[0].op, OpKind::copy);
  EXPECT_EQ(reduce[1].op, OpKind::reduce);
  EXPECT_TRUE(reduce[1].srcPackets);
  EXPECT_EQ(reduce[1].dstBuffer, BufferKind::output);
  EXPECT_EQ(reduce[2].op, OpKind::copy);
  EXPECT_TRUE(reduce[2].dstPackets);
  EXPECT_EQ(reduce[3].op, OpKind::put);
  EXPECT_TRUE(reduce[3].dstPackets);
  EXPECT_EQ(reduce[3].peer, 1);

  EXPECT_THAT(errorOf(planWithOps({{{"name", "respkt"},
                                    {"channel_type", "port"},
                                    {"src_buff", {local("i", 0), local("s", 0)}},
                                    {"dst_buff", {local("i", 0), remote(0, 0)}}}})),
              HasSubstr("(respkt): writes peer memory directly: needs \"channel_type\": "
                        "\"memory\""));
  EXPECT_THAT(
      errorOf(planWithOps(
          {{{"name", "upkt"}, {"src_buff", {local("s", 0)}}, {"dst_buff", {local("i", 0, 2)}}}})),
      HasSubstr("(upkt): needs src_buff and dst_buff entries of one size"));
}

TEST(MscclppPlan, NoWrittenFormatDropsPackets) {
  // A plan of packet copies only has no channels, but no format chorus writes holds packets.
  json plan = planWithOps(
      {{{"name", "cpkt"}, {"src_buff", {local("i", 0)}}, {"dst_buff", {local("s", 1)}}}});
  for (json& gpu : plan["gpus"]) {
    gpu["channels"] = json::array();
    gpu["remote_buffers"] = json::array();
    gpu.erase("semaphores");
    gpu["threadblocks"][0]["channels"] = json::array();
    gpu["threadblocks"][0].erase("remote_buffer_refs");
  }
  const Algorithm a = readMscclppPlan(plan.dump(), "p.json");
  for (Format format : {Format::xml, Format::json, Format::text}) {
    try {
      writeAlgorithm(a, format);
      ADD_FAILURE() << "the packets were dropped";
    } catch (const FormatLimitError& error) {
      EXPECT_THAT(error.what(), HasSubstr("rank 0 tb 0 step 0 (copy) moves LL packets (an "
                                          "MSCCL++ LL plan), which that format does not hold"));
    }
  }
}

TEST(MscclppPlan, ThreadblockGroupsScaleChunks) {
  const Algorithm a = readMscclppPlan(planWithOps({{{"name", "copy"},
                                                    {"src_buff", {local("i", 0, 2)}},
                                                    {"dst_buff", {local("s", 0, 2)}},
                                                    {"tbg_info", {{"tb_id", 1}, {"tbg_size", 4}}}}})
                                          .dump(),
                                      "p.json");
  EXPECT_EQ(a.chunksPerLoop, 8);
  EXPECT_EQ(a.ranks[0].inputChunks, 8);
  const Step& copy = a.ranks[0].threadblocks[0].steps[0];
  EXPECT_EQ(copy.srcIndex, 2);  // member 1 of 4 takes the second quarter of chunks 0..2
  EXPECT_EQ(copy.count, 2);
}

TEST(MscclppPlan, RefusesWhatChorusDoesNotModelByName) {
  EXPECT_THAT(errorOf(planWithOps({{{"name", "gstorepkt"}}})),
              HasSubstr("p.json: MSCCL++ execution plan: plan.gpus[0].threadblocks[0].ops[0] "
                        "(gstorepkt): NVLS switch operations need NVLink SHARP multicast"));
  EXPECT_THAT(errorOf(planWithOps({{{"name", "glres"}}})),
              HasSubstr("(glres): NVLS switch operations need NVLink SHARP multicast hardware"));
  EXPECT_THAT(errorOf(planWithOps({{{"name", "teleport"}}})),
              HasSubstr("(teleport): unknown operation; MSCCL++'s executor runs nop, barrier"));
  EXPECT_THAT(errorOf(planWithOps({{{"name", "re"},
                                    {"src_buff", {local("i", 0), local("s", 0)}},
                                    {"dst_buff", {local("i", 0)}},
                                    {"reduce_op", "max"}}})),
              HasSubstr("reduce_op \"max\": MSCCL++'s executor ignores reduce_op and always sums"));
  json nvls = planWithOps(json::array());
  nvls["gpus"][0]["channels"].push_back(
      {{"channel_type", "switch"}, {"buffer_type", "i"}, {"rank_groups", json::array()}});
  EXPECT_THAT(errorOf(nvls), HasSubstr("plan.gpus[0].channels[2].channel_type: a switch channel "
                                       "(NVLink SHARP multicast, NVLS) needs NVLS hardware"));
}

TEST(MscclppPlan, MalformedPlansNameThePath) {
  json plan = planWithOps(json::array());
  plan.erase("inplace");
  EXPECT_THAT(errorOf(plan),
              HasSubstr("p.json: MSCCL++ execution plan: plan: missing \"inplace\""));
  plan = planWithOps(json::array());
  plan["gpus"][1]["id"] = 0;
  EXPECT_THAT(errorOf(plan), HasSubstr("plan.gpus[1].id: is 0, but this entry is at position 1"));
  EXPECT_THAT(errorOf(planWithOps({{{"name", "copy"},
                                    {"src_buff", {local("i", 1, 2)}},
                                    {"dst_buff", {local("s", 0, 2)}}}})),
              HasSubstr("plan.gpus[0].threadblocks[0].ops[0].src_buff[0]: chunks 1..3 lie "
                        "outside local buffer 'input' of rank 0 (2 chunks)"));
  EXPECT_THAT(errorOf(planWithOps(
                  {{{"name", "signal"}, {"channel_type", "memory"}, {"channel_ids", {4}}}})),
              HasSubstr("ops[0].channel_ids[0]: 4 is out of range 0..0"));
  EXPECT_THAT(errorOf(planWithOps({{{"name", "get"},
                                    {"channel_type", "port"},
                                    {"src_buff", {remote(0, 0)}},
                                    {"dst_buff", {local("s", 0)}}}})),
              HasSubstr("(get): reads peer memory directly: needs \"channel_type\": \"memory\""));
  EXPECT_THAT(
      errorOf(planWithOps(
          {{{"name", "put"}, {"src_buff", {local("i", 0)}}, {"dst_buff", {remote(0, 0)}}}})),
      HasSubstr("names a remote buffer (buffer_id), but the op has no \"channel_type\""));
  EXPECT_THAT(errorOf(json::parse(R"({"name": "x"})")), HasSubstr("plan: missing \"collective\""));
  try {
    readMscclppPlan("{\"gpus\": [", "bad.json");
    FAIL();
  } catch (const ParseError& error) {
    EXPECT_THAT(error.what(), HasSubstr("bad.json: malformed JSON"));
  }
}

}  // namespace
}  // namespace chorus::ir
