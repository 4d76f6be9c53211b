// MSCCL++ `pipeline` ops in the plan reader (src/ir/mscclpp_pipelines.h): a body is read once,
// as the same steps as the body without the loop, where that computes what MSCCL++'s
// unit-by-unit iterations do; every plan where it would not is refused naming the op and why.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "chorus/error.h"
#include "ir/mscclpp_plan.h"
#include "mscclpp_plans.h"

namespace chorus::ir::mscclpp_pipeline_test {

using nlohmann::json;
using ::testing::HasSubstr;
namespace plans = chorus::testing_support::mscclpp_plans;

std::string refusalOf(const json& plan) {
  try {
    readMscclppPlan(plan.dump(), "p.json");
  } catch (const ParseError& error) {
    return error.what();
  }
  return "no error";
}

// The ops of rank `rank`'s threadblock `tb` in the pipelined AllToAll on 3 ranks.
json& opsOf(json& plan, int rank, int tb) {
  return plan["gpus"][rank]["threadblocks"][tb]["ops"];
}

// One rank, one threadblock running `ops`; 4 chunks of each buffer, one semaphore.
json oneRank(json ops) {
  json gpu = {{"id", 0},
              {"input_chunks", 4},
              {"output_chunks", 4},
              {"scratch_chunks", 4},
              {"channels", json::array()},
              {"remote_buffers", json::array()},
              {"semaphores", {{{"init_value", 0}}}},
              {"threadblocks", {{{"id", 0}, {"channels", json::array()}, {"ops", ops}}}}};
  return {{"name", "p"},
          {"collective", "test"},
          {"protocol", "Simple"},
          {"inplace", false},
          {"gpus", {gpu}}};
}

json loop(json body, int numChunks = 1, long long unit = 1 << 20) {
  return {{"name", "pipeline"},
          {"iter_context", {{"unit_size", unit}, {"num_chunks", numChunks}}},
          {"ops", std::move(body)}};
}

json copy(const char* from, int src, const char* to, int dst, int size = 1) {
  return {{"name", "copy"},
          {"src_buff", {plans::entry(from, src, size)}},
          {"dst_buff", {plans::entry(to, dst, size)}}};
}

TEST(MscclppPipeline, ABodyReadsAsTheSameStepsWithoutTheLoop) {
  for (int n : {2, 3, 4}) {
    const json plan = plans::pipelinedAllToAll(n, 1 << 19);
    EXPECT_EQ(readMscclppPlan(plan.dump(), "p.json"),
              readMscclppPlan(plans::withoutPipelines(plan).dump(), "p.json"));
  }
  const json single = oneRank({loop({copy("i", 0, "s", 0, 2), copy("s", 0, "o", 2, 2)}, 2)});
  EXPECT_EQ(readMscclppPlan(single.dump(), "p.json"),
            readMscclppPlan(plans::withoutPipelines(single).dump(), "p.json"));
}

TEST(MscclppPipeline, RefusesOpsWhoseIterationsChorusDoesNotModel) {
  EXPECT_THAT(
      refusalOf(oneRank({loop({loop({copy("i", 0, "o", 0)})})})),
      HasSubstr("p.json: MSCCL++ execution plan: plan.gpus[0].threadblocks[0].ops[0].ops[0] "
                "(pipeline): a pipeline inside a pipeline"));
  EXPECT_THAT(
      refusalOf(
          oneRank({loop({{{"name", "barrier"}, {"barrier_id", 0}, {"num_threadblocks", 1}}})})),
      HasSubstr("ops[0].ops[0] (barrier): a barrier in a pipeline body joins its threadblocks "
                "once per iteration"));
  EXPECT_THAT(refusalOf(oneRank({loop({{{"name", "cpkt"},
                                        {"src_buff", {plans::entry("i", 0)}},
                                        {"dst_buff", {plans::entry("s", 0)}}}})})),
              HasSubstr("(cpkt): an LL packet op in a pipeline body"));
  json group = copy("i", 0, "o", 0);
  group["tbg_info"] = {{"tb_id", 0}, {"tbg_size", 2}};
  EXPECT_THAT(refusalOf(oneRank({loop({group})})),
              HasSubstr("(copy): a thread-block group op in a pipeline body"));
  json noContext = loop({copy("i", 0, "o", 0)});
  noContext.erase("iter_context");
  EXPECT_THAT(refusalOf(oneRank({noContext})),
              HasSubstr("plan.gpus[0].threadblocks[0].ops[0]: missing \"iter_context\""));
}

TEST(MscclppPipeline, RefusesOperandsThatAreNotNumChunksLong) {
  EXPECT_THAT(refusalOf(oneRank({loop({copy("i", 0, "o", 0, 2)})})),
              HasSubstr("ops[0].ops[0]: has operands of 2 chunks in a pipeline of num_chunks 1"));
  EXPECT_THAT(refusalOf(oneRank({loop({copy("i", 0, "o", 0)}, 2)})),
              HasSubstr("has operands of 1 chunks in a pipeline of num_chunks 2"));
}

TEST(MscclppPipeline, RefusesOperandsThatOverlapWithoutCoinciding) {
  // The second copy reads scratch[1..3) while the first writes scratch[0..2): iteration i of the
  // second reads what iteration i + chunk/unit of the first writes.
  EXPECT_THAT(
      refusalOf(oneRank({loop({copy("i", 0, "s", 0, 2), copy("s", 1, "o", 0, 2)}, 2)})),
      HasSubstr("an operand on rank 0 overlaps one of plan.gpus[0].threadblocks[0].ops[0].ops[0] "
                "without being the same chunks"));
  // The same ranges outside the loop, or coinciding ones inside, are fine.
  EXPECT_EQ(refusalOf(oneRank({loop({copy("i", 0, "s", 0, 2)}, 2), copy("s", 1, "o", 0, 2)})),
            "no error");
  EXPECT_EQ(refusalOf(oneRank({loop({copy("i", 0, "s", 0, 2), copy("s", 0, "o", 0, 2)}, 2)})),
            "no error");
}

TEST(MscclppPipeline, RefusesSignalsAndWaitsThatMeetInDifferentIterations) {
  // The receivers wait outside their loop, once, for signals given once per iteration.
  json waitOutside = plans::pipelinedAllToAll(3, 1 << 19);
  json& body = opsOf(waitOutside, 1, 2)[0]["ops"];
  json wait = body[2];
  body.erase(2);
  opsOf(waitOutside, 1, 2).insert(opsOf(waitOutside, 1, 2).begin(), wait);
  EXPECT_THAT(refusalOf(waitOutside),
              HasSubstr("channel 2 of rank 1 (to rank 0) and its pair is signalled 1 per "
                        "iteration of plan.gpus[0].threadblocks[0].ops[3] but waited on 1 outside "
                        "pipelines"));
  // A receiver's loop runs other units: another iteration count.
  json otherUnit = plans::pipelinedAllToAll(3, 1 << 19);
  opsOf(otherUnit, 2, 3)[0]["iter_context"]["unit_size"] = 1 << 18;
  EXPECT_THAT(refusalOf(otherUnit),
              HasSubstr("per iteration of plan.gpus[2].threadblocks[3].ops[0]"));
  // A semaphore released in the loop but acquired once before it.
  json acquireBefore = plans::pipelinedAllToAll(2, 1 << 19);
  json& receiver = opsOf(acquireBefore, 0, 1);
  json acquire = receiver[0]["ops"][0];
  receiver[0]["ops"].erase(0);
  receiver.insert(receiver.begin(), acquire);
  EXPECT_THAT(refusalOf(acquireBefore),
              HasSubstr("semaphore 0 of rank 0 is released 1 per iteration of "
                        "plan.gpus[0].threadblocks[0].ops[3] but acquired 1 outside pipelines"));
}

TEST(MscclppPipeline, RefusesAChannelSignalledFromTwoThreadblocks) {
  // Two threadblocks of one rank release semaphore 0 in their loops; one acquires it.
  json release = {{"name", "sem_release"}, {"semaphore_ids", {0}}};
  json acquire = {{"name", "sem_acquire"}, {"semaphore_ids", {0}}};
  json plan = oneRank({loop({copy("i", 0, "s", 0), release})});
  json& tbs = plan["gpus"][0]["threadblocks"];
  tbs.push_back(
      {{"id", 1}, {"channels", json::array()}, {"ops", {loop({copy("i", 1, "s", 1), release})}}});
  tbs.push_back({{"id", 2},
                 {"channels", json::array()},
                 {"ops", {loop({acquire, acquire, copy("s", 0, "o", 0)})}}});
  EXPECT_THAT(refusalOf(plan),
              HasSubstr("semaphore 0 of rank 0 is released by rank 0 tb 0 and rank 0 tb 1, and a "
                        "pipeline uses it"));
}

}  // namespace chorus::ir::mscclpp_pipeline_test
