// The verifier on one-sided plans (MSCCL++ execution plans, read by ir/mscclpp_plan.h): correct
// plans written here by hand verify clean, and each mutation of them (a dropped signal, wait or
// nop, a put into a live buffer, a dropped semaphore acquire or barrier) is found.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/mscclpp_plan.h"
#include "mscclpp_plans.h"
#include "verify/verify.h"

namespace chorus::verify {
namespace {

using chorus::testing_support::mscclpp_plans::handOff;
using chorus::testing_support::mscclpp_plans::packetAllReduce;
using chorus::testing_support::mscclpp_plans::pipelinedAllToAll;
using chorus::testing_support::mscclpp_plans::portAllGather;
using chorus::testing_support::mscclpp_plans::portPacketAllGather;
using chorus::testing_support::mscclpp_plans::twoPhaseAllReduce;
using nlohmann::json;
using ::testing::HasSubstr;

VerifyReport verifyPlan(const json& plan) {
  return verifyAlgorithm(ir::readMscclppPlan(plan.dump(), "plan.json"));
}

bool hasKind(const VerifyReport& report, FindingKind kind) {
  for (const Finding& f : report.findings)
    if (f.kind == kind) return true;
  return false;
}

json& opsOf(json& plan, int rank, int tb = 0) {
  return plan["gpus"][rank]["threadblocks"][tb]["ops"];
}

TEST(OneSidedVerify, HandWrittenPlansAreClean) {
  for (int n : {2, 3, 5}) {
    SCOPED_TRACE(n);
    const VerifyReport twoPhase = verifyPlan(twoPhaseAllReduce(n));
    EXPECT_TRUE(twoPhase.ok()) << twoPhase.describe();
    EXPECT_TRUE(twoPhase.postconditionChecked);
    EXPECT_THAT(twoPhase.describe(),
                HasSubstr("ok: postcondition, deadlock freedom (one launch: signals, waits, "
                          "barriers, semaphores) and races checked"));
    const VerifyReport gather = verifyPlan(portAllGather(n));
    EXPECT_TRUE(gather.ok()) << gather.describe();
    EXPECT_TRUE(gather.postconditionChecked);
  }
  for (bool barrier : {false, true}) {
    const VerifyReport report = verifyPlan(handOff(barrier));
    EXPECT_TRUE(report.ok()) << report.describe();
  }
}

// A pipeline's body is verified as read once (ir/mscclpp_pipelines.h): the pipelined AllToAll
// is clean, and without the semaphore that holds each receiver until its sender has read
// input[peer], the receiver's copy into input[peer] races with that put.
TEST(OneSidedVerify, PipelinedPlansAreVerifiedAsTheirBodies) {
  for (int n : {2, 3, 5}) {
    SCOPED_TRACE(n);
    const VerifyReport report = verifyPlan(pipelinedAllToAll(n, 1 << 20));
    EXPECT_TRUE(report.ok()) << report.describe();
    EXPECT_TRUE(report.postconditionChecked);
  }
  json plan = pipelinedAllToAll(3, 1 << 20);
  for (int tb = 0; tb < 2; ++tb) {
    json& send = opsOf(plan, 0, tb)[3]["ops"];
    ASSERT_EQ(send[4]["name"], "sem_release");
    send.erase(4);
    json& receive = opsOf(plan, 0, 2 + tb)[0]["ops"];
    ASSERT_EQ(receive[0]["name"], "sem_acquire");
    receive.erase(0);
  }
  const VerifyReport report = verifyPlan(plan);
  EXPECT_TRUE(hasKind(report, FindingKind::race)) << report.describe();
  EXPECT_THAT(report.describe(), HasSubstr("rank 0's input["));
  // A channel a loop waits on that nothing signals reads (no iteration meets a signal either
  // way), and its wait starves.
  json unsignalled = pipelinedAllToAll(2, 1 << 20);
  json& body = opsOf(unsignalled, 0, 0)[3]["ops"];
  ASSERT_EQ(body[2]["name"], "signal");
  body.erase(2);
  const VerifyReport starved = verifyPlan(unsignalled);
  EXPECT_TRUE(hasKind(starved, FindingKind::deadlock)) << starved.describe();
  EXPECT_THAT(starved.describe(), HasSubstr("rank 1 tb 1 step 2 (wait for rank 0"));
}

// Every single-op deletion of a signal, wait or nop in the two-phase plan on 3 ranks: each
// mutant is wrong (a wait starves, a signal is left over, or data moves unordered) and the
// verifier reports it.
TEST(OneSidedVerify, EveryDroppedSignalWaitOrNopIsFound) {
  const json original = twoPhaseAllReduce(3);
  int mutants = 0;
  for (int r = 0; r < 3; ++r) {
    const json& ops = original["gpus"][r]["threadblocks"][0]["ops"];
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const std::string name = ops[i]["name"];
      if (name != "signal" && name != "wait" && name != "nop") continue;
      // The last nop orders nothing after it. The nop between the reduce and the put that
      // sends its result orders two all-thread ops of one threadblock, which the model takes
      // in program order (docs/ir.md "One-sided operations").
      if (name == "nop" && (i + 1 == ops.size() || i == 6)) continue;
      json mutant = original;
      opsOf(mutant, r).erase(i);
      const VerifyReport report = verifyPlan(mutant);
      ++mutants;
      EXPECT_FALSE(report.ok()) << "dropping rank " << r << " op " << i << " (" << name
                                << ") went unnoticed";
      if (name == "signal") {
        EXPECT_TRUE(hasKind(report, FindingKind::deadlock));
      }
    }
  }
  EXPECT_EQ(mutants, 3 * 7);
}

TEST(OneSidedVerify, DroppedWaitIsARaceOnTheScratchItGuards) {
  json plan = twoPhaseAllReduce(3);
  opsOf(plan, 1).erase(3);  // rank 1's first wait
  const VerifyReport report = verifyPlan(plan);
  EXPECT_TRUE(hasKind(report, FindingKind::race));
  EXPECT_THAT(report.describe(),
              HasSubstr("race on rank 1's scratch[0]: rank 0 tb 0 step 0 (put input[1] to rank "
                        "1's scratch[0]) writes it and rank 1 tb 0 step 6 (reduce scratch[0] "
                        "into input[1]) reads it"));
  EXPECT_THAT(report.describe(),
              HasSubstr("rank 0 signals rank 1's channel 0 2 time(s) in a launch, but rank 1 "
                        "waits on it 1 time(s)"));
}

TEST(OneSidedVerify, DroppedSignalIsADeadlockNamingTheWait) {
  json plan = twoPhaseAllReduce(2);
  opsOf(plan, 0).erase(2);  // rank 0's first signal
  const VerifyReport report = verifyPlan(plan);
  EXPECT_THAT(report.describe(),
              HasSubstr("deadlock: rank 1 tb 0 step 10 (wait for rank 0 on channel 0) never "
                        "completes: it is wait number 2 on channel 0, but rank 0 signals the "
                        "paired channel 0 only 1 time(s) in a launch"));
}

TEST(OneSidedVerify, PutIntoALiveBufferIsARace) {
  // Rank 0 sends the sum of chunk 0 into rank 1's input[1] instead of input[0]: rank 1 still
  // reduces its own input[1] there.
  json plan = twoPhaseAllReduce(2);
  opsOf(plan, 0)[7]["dst_buff"][0]["index"] = 1;
  const VerifyReport report = verifyPlan(plan);
  EXPECT_TRUE(hasKind(report, FindingKind::race)) << report.describe();
  EXPECT_TRUE(hasKind(report, FindingKind::postcondition)) << report.describe();
  EXPECT_THAT(report.describe(), HasSubstr("race on rank 1's input[1]"));
}

TEST(OneSidedVerify, SignalWithoutANopDoesNotPublishThePut) {
  json plan = twoPhaseAllReduce(2);
  opsOf(plan, 0).erase(1);  // the nop between rank 0's put and its signal
  const VerifyReport report = verifyPlan(plan);
  EXPECT_THAT(report.describe(), HasSubstr("race on rank 1's scratch[0]"));
}

TEST(OneSidedVerify, PortPutWithoutSignalStarvesThePeer) {
  json plan = portAllGather(2);
  opsOf(plan, 0)[1]["name"] = "put";  // pws -> put: the data goes, the signal does not
  const VerifyReport report = verifyPlan(plan);
  EXPECT_THAT(report.describe(), HasSubstr("deadlock: rank 1 tb 0 step 3 (wait for rank 0 on "
                                           "channel 0) never completes"));
}

TEST(OneSidedVerify, RelaxedSignalOrdersExecutionButPublishesNoData) {
  // On memory channels rlxsignal/rlxwait carry no data ordering (MSCCL++'s
  // semaphore_device.hpp: "use it only for synchronizing execution, not data").
  json plan = twoPhaseAllReduce(2);
  for (int r = 0; r < 2; ++r) {
    opsOf(plan, r)[2]["name"] = "rlxsignal";
    opsOf(plan, r)[3]["name"] = "rlxwait";
  }
  const VerifyReport report = verifyPlan(plan);
  EXPECT_THAT(report.describe(), HasSubstr("race on rank 1's scratch[0]"));
}

TEST(OneSidedVerify, SemaphoreAndBarrierMutations) {
  json noAcquire = handOff(false);
  opsOf(noAcquire, 0, 1).erase(0);
  const VerifyReport unordered = verifyPlan(noAcquire);
  EXPECT_THAT(unordered.describe(), HasSubstr("race on rank 0's scratch[0]"));
  EXPECT_THAT(unordered.describe(),
              HasSubstr("semaphore 0 of rank 0 starts at 0 and ends a launch at 1"));

  json noRelease = handOff(false);
  opsOf(noRelease, 0, 0).erase(2);
  EXPECT_THAT(verifyPlan(noRelease).describe(),
              HasSubstr("deadlock: rank 0 tb 1 step 0 (semAcquire semaphore 0) never completes: "
                        "semaphore 0 of rank 0 stays at 0"));

  json lonelyBarrier = handOff(true);
  opsOf(lonelyBarrier, 0, 1).erase(0);
  EXPECT_THAT(verifyPlan(lonelyBarrier).describe(),
              HasSubstr("deadlock: rank 0 tb 0 step 1 (barrier 0 (2 threadblocks)) never "
                        "completes: barrier 0 of rank 0 waits for 2 threadblocks and only 1 "
                        "arrive"));
}

TEST(OneSidedVerify, ThreadblockGroupsSliceEveryEntry) {
  // The hand-off with each copy split over a group of two threadblocks per side: slices are
  // disjoint, so splitting adds no race; dropping the acquire of one member still races.
  json plan = handOff(false);
  json& tbs = plan["gpus"][0]["threadblocks"];
  json group = tbs;
  for (int member = 0; member < 2; ++member) {
    json tb0 = tbs[0], tb1 = tbs[1];
    tb0["ops"][0]["tbg_info"] = {{"tb_id", member}, {"tbg_size", 2}};
    tb1["ops"][2]["tbg_info"] = {{"tb_id", member}, {"tbg_size", 2}};
    group[2 * member] = tb0;
    group[2 * member + 1] = tb1;
  }
  for (int t = 0; t < 4; ++t)
    group[t]["id"] = t;
  tbs = group;
  const VerifyReport report = verifyPlan(plan);
  EXPECT_TRUE(report.ok()) << report.describe();
  opsOf(plan, 0, 3).erase(0);  // member 1's acquire
  EXPECT_THAT(verifyPlan(plan).describe(), HasSubstr("race on rank 0's scratch"));
}

TEST(OneSidedVerify, UnpairedChannelIsMalformed) {
  json plan = twoPhaseAllReduce(2);
  plan["gpus"][1]["channels"][0]["channel_type"] = "port";  // rank 1's channel to 0 is a port
  plan["gpus"][1]["threadblocks"][0]["channels"][0]["channel_type"] = "port";
  for (json& op : opsOf(plan, 1))
    if (op.contains("channel_ids")) op["channel_type"] = "port";
  const VerifyReport report = verifyPlan(plan);
  EXPECT_THAT(report.describe(),
              HasSubstr("malformed: rank 0 tb 0 step 2 (signal) uses channel 0 (memory channel "
                        "to rank 1), which has no counterpart on rank 1"));
}

TEST(OneSidedVerify, PacketPlansAreCleanAndTheirMutantsAreFound) {
  for (int n : {2, 3, 4}) {
    SCOPED_TRACE(n);
    const VerifyReport allreduce = verifyPlan(packetAllReduce(n));
    EXPECT_TRUE(allreduce.ok()) << allreduce.describe();
    EXPECT_TRUE(allreduce.postconditionChecked);
    const VerifyReport allgather = verifyPlan(portPacketAllGather(n));
    EXPECT_TRUE(allgather.ok()) << allgather.describe();
  }
  // Rank 1 no longer puts its chunk 0 into rank 0's packets: rank 0's reduce spins forever.
  json dropped = packetAllReduce(3);
  opsOf(dropped, 1)[0]["src_buff"].erase(0);
  opsOf(dropped, 1)[0]["dst_buff"].erase(0);
  EXPECT_THAT(verifyPlan(dropped).describe(),
              HasSubstr("deadlock: rank 0 tb 0 step 2 (reduce packets of scratch[1] into "
                        "input[0]) never completes: it reads rank 0's packets of scratch[1], "
                        "which no step writes in this launch"));
  // Rank 2 puts its chunk 0 into the packets rank 1 already wrote: two writes in one launch.
  json twice = packetAllReduce(3);
  opsOf(twice, 2)[0]["dst_buff"][0]["index"] = 1;
  EXPECT_THAT(verifyPlan(twice).describe(),
              HasSubstr("already wrote in this launch: packets carry one flag per launch"));
  // Without the nop, the proxy may copy the packets before every thread has written them.
  json early = portPacketAllGather(2);
  opsOf(early, 0).erase(2);
  EXPECT_THAT(verifyPlan(early).describe(),
              HasSubstr("copies rank 0's packets of scratch[2] as they are, but their write "
                        "(rank 0 tb 0 step 1"));
  // A packet read of a chunk whose bytes also hold plain data is refused.
  json overlap = packetAllReduce(2);
  opsOf(overlap, 0)
      .push_back({{"name", "copy"},
                  {"src_buff", {{{"type", "i"}, {"index", 0}, {"size", 1}}}},
                  {"dst_buff", {{{"type", "s"}, {"index", 3}, {"size", 1}}}}});
  EXPECT_THAT(verifyPlan(overlap).describe(),
              HasSubstr("malformed: rank 0's scratch chunk 3 is used as plain data, and its "
                        "bytes also hold the LL packets of chunk 1"));
}

}  // namespace
}  // namespace chorus::verify
