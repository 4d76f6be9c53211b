// The MSCCL++ plan writer (src/ir/mscclpp_plan_writer.h) and the lowering of two-sided plans
// to one-sided steps (src/ir/one_sided_lowering.h): every library algorithm at 2 to 8 ranks
// and every valid MSCCL XML file, written as MSCCL++ JSON, reads back with the schema MSCCL++'s
// executor parses, verifies clean, and (a sample) runs exactly on thread ranks; a plan over
// the executor's limits is refused by name; MSCCL++ plans read by chorus round-trip.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "chorus/error.h"
#include "ir/formats.h"
#include "ir/mscclpp_plan.h"
#include "ir/mscclpp_plan_writer.h"
#include "library_cases.h"
#include "mscclpp_plans.h"
#include "runtime/thread_runner.h"
#include "valid_msccl_files.h"
#include "verify/verify.h"

namespace chorus::runtime {
namespace mscclpp_writer_test {

using nlohmann::json;
using ::testing::HasSubstr;
namespace support = chorus::testing_support;
namespace plans = chorus::testing_support::mscclpp_plans;

// What MSCCL++'s executor requires of a plan as it parses it (execution_plan.cc at 1f5f065,
// docs/ir.md "Writing MSCCL++ plans"), beyond what chorus's reader checks: the fields it reads
// without a default, non-zero chunk counts (it divides by them), known op names, at most 64
// operations per threadblock, and tb-local indices inside the threadblock's tables.
void expectExecutorSchema(const json& plan) {
  static const std::set<std::string> kOps = {
      "nop",     "barrier", "copy",        "put",         "pws",    "pwsf", "get",
      "re",      "res",     "rre",         "rres",        "signal", "wait", "rlxsignal",
      "rlxwait", "flush",   "sem_acquire", "sem_release", "cpkt",   "upkt", "ppkt",
      "rppkt",   "repkt",   "respkt",      "recpkt",      "recspkt"};
  for (const char* key : {"name", "collective", "protocol", "inplace", "gpus"})
    EXPECT_TRUE(plan.contains(key)) << key;
  for (std::size_t r = 0; r < plan["gpus"].size(); ++r) {
    const json& gpu = plan["gpus"][r];
    EXPECT_EQ(gpu["id"], r);
    EXPECT_GT(gpu["input_chunks"].get<int>(), 0);
    EXPECT_GT(gpu["output_chunks"].get<int>(), 0);
    for (const char* key : {"scratch_chunks", "channels", "remote_buffers", "threadblocks"})
      EXPECT_TRUE(gpu.contains(key)) << key;
    for (std::size_t t = 0; t < gpu["threadblocks"].size(); ++t) {
      const json& tb = gpu["threadblocks"][t];
      EXPECT_EQ(tb["id"], t);
      EXPECT_TRUE(tb.contains("channels"));
      EXPECT_LE(tb["ops"].size(), 64u);
      std::map<std::string, std::size_t> channels, refs;
      for (const json& c : tb["channels"])
        channels[c["channel_type"]] = c["channel_ids"].size();
      for (const json& c : tb["remote_buffer_refs"])
        refs[c["access_channel_type"]] = c["remote_buffer_ids"].size();
      for (const json& op : tb["ops"]) {
        EXPECT_TRUE(kOps.count(op["name"])) << op.dump();
        if (op.contains("channel_ids")) {
          for (const json& id : op["channel_ids"]) {
            EXPECT_LT(id.get<std::size_t>(), channels[op["channel_type"]]) << op.dump();
          }
        }
        for (const char* list : {"src_buff", "dst_buff"}) {
          if (!op.contains(list)) continue;
          for (const json& entry : op[list]) {
            if (!entry.contains("buffer_id")) continue;
            EXPECT_LT(entry["buffer_id"].get<std::size_t>(), refs[op["channel_type"]]) << op.dump();
          }
        }
      }
    }
  }
}

// Writes `plan` as MSCCL++ JSON, checks the schema and reads it back.
ir::Algorithm throughMscclpp(const ir::Algorithm& plan) {
  const std::string text = ir::writeAlgorithm(plan, ir::Format::mscclppJson);
  expectExecutorSchema(json::parse(text));
  return ir::readMscclppPlan(text, plan.name + ".json");
}

TEST(MscclppWriter, EveryLibraryAlgorithmVerifiesAsMscclppJson) {
  for (const support::LibrarySweepCase& c : support::deviceSweepCases()) {
    SCOPED_TRACE(support::libraryCaseName(c));
    const ir::Algorithm plan = support::compileSweepCase(c, ir::Protocol::simple);
    const verify::VerifyReport report = verify::verifyAlgorithm(throughMscclpp(plan));
    EXPECT_TRUE(report.ok()) << report.describe();
    EXPECT_TRUE(report.postconditionChecked);
  }
}

// LL plans lower each message to packets put into the receiver's scratch and read there (each
// read waits for its packets): no signal or wait besides the opening handshake.
TEST(MscclppWriter, EveryLibraryAlgorithmVerifiesAsAnLlPlan) {
  for (const support::LibrarySweepCase& c : support::deviceSweepCases()) {
    SCOPED_TRACE(support::libraryCaseName(c));
    const ir::Algorithm plan = support::compileSweepCase(c, ir::Protocol::ll);
    const std::string text = ir::writeAlgorithm(plan, ir::Format::mscclppJson);
    const json written = json::parse(text);
    EXPECT_EQ(written["protocol"].get<std::string>(), "LL");
    for (const json& gpu : written["gpus"])
      for (const json& tb : gpu["threadblocks"])
        for (const json& op : tb["ops"]) {
          const std::string name = op["name"].get<std::string>();
          EXPECT_TRUE(name != "signal" && name != "wait") << op.dump();
        }
    const verify::VerifyReport report = verify::verifyAlgorithm(throughMscclpp(plan));
    EXPECT_TRUE(report.ok()) << report.describe();
  }
}

TEST(MscclppWriter, WrittenLlPlansRunExactly) {
  for (const char* name : {"allreduce.ring", "allgather.ring", "alltoall.pairwise",
                           "reducescatter.ring", "broadcast.binomial", "allreduce.allpairs"})
    for (int ranks : {2, 3, 5}) {
      SCOPED_TRACE(testing::Message() << name << " on " << ranks);
      const ir::Algorithm read =
          throughMscclpp(support::compileOnProtocol(name, ranks, ir::Protocol::ll));
      EXPECT_EQ(read.protocol, ir::Protocol::ll);
      RunOptions options = support::exactRun(1000);
      options.iterations = 2;  // packets start unwritten in every launch
      const RunReport report = runOnThreads(read, options);
      EXPECT_TRUE(report.ok()) << report.firstWrong;
    }
}

TEST(MscclppWriter, WrittenPlansRunExactly) {
  for (const char* name : {"allreduce.ring", "allgather.ring", "alltoall.pairwise",
                           "reducescatter.ring", "broadcast.binomial", "allreduce.allpairs"})
    for (int ranks : {2, 3, 5}) {
      SCOPED_TRACE(testing::Message() << name << " on " << ranks);
      const ir::Algorithm read =
          throughMscclpp(support::compileOnProtocol(name, ranks, ir::Protocol::simple));
      // 1000 elements leave the last chunks short.
      const RunReport report = runOnThreads(read, support::exactRun(1000));
      EXPECT_TRUE(report.ok()) << report.firstWrong;
    }
}

TEST(MscclppWriter, ValidMscclFilesVerifyAsMscclppJson) {
  for (const std::string& path : support::validFiles()) {
    SCOPED_TRACE(path);
    for (const ir::Algorithm& plan : ir::readAlgorithmsFile(path)) {
      const verify::VerifyReport report = verify::verifyAlgorithm(throughMscclpp(plan));
      EXPECT_TRUE(report.ok()) << report.describe();
    }
  }
}

TEST(MscclppWriter, MscclppPlansRoundTrip) {
  for (const json& original :
       {plans::twoPhaseAllReduce(3), plans::portAllGather(3), plans::handOff(true),
        plans::handOff(false), plans::packetAllReduce(3), plans::portPacketAllGather(3)}) {
    SCOPED_TRACE(original["name"].get<std::string>());
    const ir::Algorithm read = ir::readMscclppPlan(original.dump(), "plan.json");
    const ir::Algorithm again = throughMscclpp(read);
    for (std::size_t r = 0; r < read.ranks.size(); ++r) {
      EXPECT_EQ(again.ranks[r].threadblocks, read.ranks[r].threadblocks);
      EXPECT_EQ(again.ranks[r].channels, read.ranks[r].channels);
      EXPECT_EQ(again.ranks[r].semaphores, read.ranks[r].semaphores);
    }
    EXPECT_EQ(again.protocol, read.protocol);
  }
}

TEST(MscclppWriter, LongThreadblocksAreSplitIntoAChain) {
  // An 8-rank ring keeps 14 steps in one threadblock per channel: 80 operations, more than
  // the executor's 64; the writer cuts it in two, chained by a semaphore.
  const ir::Algorithm ring = support::compileOnProtocol("allreduce.ring", 8, ir::Protocol::simple);
  const std::string text = ir::writeAlgorithm(ring, ir::Format::mscclppJson);
  const json plan = json::parse(text);
  expectExecutorSchema(plan);
  EXPECT_EQ(plan["gpus"][0]["threadblocks"].size(), 2 * ring.ranks[0].threadblocks.size());
  EXPECT_EQ(plan["gpus"][0]["threadblocks"][0]["ops"].back()["name"], "sem_release");
  EXPECT_EQ(plan["gpus"][0]["threadblocks"][1]["ops"].front()["name"], "sem_acquire");
  const ir::Algorithm read = ir::readMscclppPlan(text, "ring.json");
  const verify::VerifyReport report = verify::verifyAlgorithm(read);
  EXPECT_TRUE(report.ok()) << report.describe();
  const RunReport run = runOnThreads(read, support::exactRun(1000));
  EXPECT_TRUE(run.ok()) << run.firstWrong;
}

TEST(MscclppWriter, ASendWithoutItsReceiveIsRefusedByName) {
  ir::Algorithm plan;
  plan.name = "lonely";
  plan.collective = ir::CollectiveKind::custom;
  plan.customName = "lonely";
  plan.nranks = 2;
  plan.chunksPerLoop = 1;
  plan.ranks.resize(2);
  for (int r = 0; r < 2; ++r) {
    plan.ranks[static_cast<std::size_t>(r)].rank = r;
    plan.ranks[static_cast<std::size_t>(r)].inputChunks = 1;
    plan.ranks[static_cast<std::size_t>(r)].outputChunks = 1;
  }
  ir::Threadblock sender;
  sender.sendPeer = 1;
  ir::Step send;
  send.op = ir::OpKind::send;
  sender.steps.push_back(send);
  plan.ranks[0].threadblocks.push_back(sender);
  try {
    ir::writeAlgorithm(plan, ir::Format::mscclppJson);
    FAIL() << "a send without a receive was lowered";
  } catch (const PlanError& error) {
    EXPECT_THAT(error.what(), HasSubstr("plan 'lonely' cannot be lowered to one-sided steps: "
                                        "rank 0 sends to rank 1 on channel 0, but no "
                                        "threadblock of rank 1 receives from it"));
  }
}

TEST(MscclppWriter, OverTheChannelLimitIsRefusedByName) {
  // Rank 0 signals 17 peers from one threadblock; the executor holds 16 channels a type.
  json gpus = json::array();
  std::vector<int> peers = plans::peersOf(0, 18);
  gpus.push_back({{"id", 0},
                  {"input_chunks", 1},
                  {"output_chunks", 1},
                  {"scratch_chunks", 0},
                  {"channels", {{{"channel_type", "memory"}, {"connected_to", peers}}}},
                  {"remote_buffers", json::array()},
                  {"threadblocks",
                   {{{"id", 0},
                     {"channels", {{{"channel_type", "memory"}, {"channel_ids", plans::upTo(17)}}}},
                     {"ops", {plans::syncOp("signal", "memory", plans::upTo(17))}}}}}});
  for (int r = 1; r < 18; ++r)
    gpus.push_back({{"id", r},
                    {"input_chunks", 1},
                    {"output_chunks", 1},
                    {"scratch_chunks", 0},
                    {"channels", json::array()},
                    {"remote_buffers", json::array()},
                    {"threadblocks", json::array()}});
  const json plan = {{"name", "wide"},
                     {"collective", "custom"},
                     {"protocol", "Simple"},
                     {"inplace", true},
                     {"gpus", gpus}};
  try {
    ir::writeAlgorithm(ir::readMscclppPlan(plan.dump(), "wide.json"), ir::Format::mscclppJson);
    FAIL() << "a threadblock of 17 memory channels was written";
  } catch (const FormatLimitError& error) {
    EXPECT_THAT(error.what(), HasSubstr("plan 'wide' cannot be written as MSCCL++ JSON: rank 0 "
                                        "tb 0 uses 17 memory channels, and a threadblock holds "
                                        "at most 16"));
  }
}

}  // namespace mscclpp_writer_test
}  // namespace chorus::runtime
