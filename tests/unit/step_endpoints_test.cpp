// A step's own peer and channel (ir/step_endpoints.h): the issues the verifier and the unverified
// entry points share, and the refusal of the runners, the communicator and plan files.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "api/comm_factory.h"
#include "chorus/chorus.h"
#include "ir/json_format.h"
#include "ir/step_endpoints.h"
#include "runtime/process_runner.h"
#include "runtime/thread_runner.h"
#include "selection/plan_files.h"
#include "support/error.h"
#include "temp_dir.h"

namespace chorus {
namespace {

using ::testing::HasSubstr;

ir::Algorithm compiledRing(int ranks) {
  algorithms::BuildRequest request;
  request.algorithm = "allreduce.ring";
  request.ranks = ranks;
  return algorithms::compileAlgorithm(request).algorithm;
}

std::string planErrorOf(auto&& function) {
  try {
    function();
  } catch (const PlanError& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected a PlanError";
  return {};
}

TEST(StepEndpoints, CompiledPlansHaveNoIssues) {
  const ir::Algorithm ring = compiledRing(4);
  EXPECT_TRUE(ir::findStepEndpointIssues(ring).empty());
  EXPECT_NO_THROW(ir::requireStepEndpoints(ring, "run"));
}

TEST(StepEndpoints, ListsEveryStepInOrderAndRefusesWithTheFirst) {
  ir::Algorithm ring = compiledRing(3);
  ring.ranks[2].threadblocks[0].steps[1].channel = 4;
  ring.ranks[0].threadblocks[0].steps[0].peer = 1;
  const auto issues = ir::findStepEndpointIssues(ring);
  ASSERT_EQ(issues.size(), 2u);
  EXPECT_EQ(issues[0].rank, 0);
  EXPECT_EQ(issues[0].tb, 0);
  EXPECT_EQ(issues[0].step, 0);
  EXPECT_EQ(issues[1].rank, 2);
  EXPECT_EQ(issues[1].step, 1);
  EXPECT_THAT(issues[1].message, HasSubstr("rank 2 tb 0 step 1 ("));
  EXPECT_THAT(issues[1].message, HasSubstr(") names channel 4; "));
  const ir::Threadblock& tb = ring.ranks[0].threadblocks[0];
  EXPECT_EQ(ir::stepEndpointIssue(ring.ranks[0], 0, 0, ring.nranks), issues[0].message);
  EXPECT_EQ(ir::stepEndpointIssue(ring.ranks[0], 0, 1, ring.nranks), "");

  const std::string message = planErrorOf([&] { ir::requireStepEndpoints(ring, "run"); });
  EXPECT_EQ(
      message,
      fmt::format("plan 'allreduce.ring' cannot be run: rank 0 tb 0 step 0 ({}) names peer "
                  "1; {} moves data over its threadblock's connection (send peer {}, "
                  "channel {}): remove the step's peer and channel (set both to -1) (1 more "
                  "step(s) like it); 'chorus verify' reports every such step",
                  ir::opName(tb.steps[0].op), ir::opName(tb.steps[0].op), tb.sendPeer, tb.channel));
  EXPECT_EQ(tb.steps[0].op, ir::OpKind::send);
}

TEST(StepEndpoints, RunnersRefuseBeforeStarting) {
  ir::Algorithm ring = compiledRing(2);
  ring.ranks[1].threadblocks[0].steps[0].peer = 0;
  runtime::ThreadRunOptions options;
  options.count = 8;
  EXPECT_THAT(planErrorOf([&] { runtime::runOnThreads(ring, options); }),
              HasSubstr("plan 'allreduce.ring' cannot be run: rank 1 tb 0 step 0"));
  EXPECT_THAT(planErrorOf([&] { runtime::runOnProcesses(ring, {}); }),
              HasSubstr("plan 'allreduce.ring' cannot be run: rank 1 tb 0 step 0"));
  ring.ranks[1].threadblocks[0].steps[0].peer = -1;
  EXPECT_TRUE(runtime::runOnThreads(ring, options).ok());
}

// A provider that hands over one plan, verified by nobody.
class FixedPlanProvider : public runtime::PlanProvider {
 public:
  explicit FixedPlanProvider(ir::Algorithm algorithm)
      : algorithm_(std::make_shared<const ir::Algorithm>(std::move(algorithm))) {}
  runtime::Plan select(const runtime::PlanRequest&) override {
    return {algorithm_, algorithm_->name, "a test provider"};
  }

 private:
  std::shared_ptr<const ir::Algorithm> algorithm_;
};

TEST(StepEndpoints, CommunicatorRefusesAnUnverifiedPlan) {
  // One rank, out of place: a copy from input to output that names a peer.
  ir::Algorithm plan;
  plan.name = "copy.self";
  plan.collective = ir::CollectiveKind::allreduce;
  plan.nranks = 1;
  plan.chunksPerLoop = 1;
  plan.ranks.resize(1);
  plan.ranks[0].inputChunks = 1;
  plan.ranks[0].outputChunks = 1;
  ir::Threadblock tb;
  ir::Step copy;
  copy.op = ir::OpKind::copy;
  copy.dstBuffer = ir::BufferKind::output;
  copy.peer = 0;
  tb.steps.push_back(copy);
  plan.ranks[0].threadblocks.push_back(tb);

  std::vector<Communicator> comms = api::makeInProcessCommunicators(
      1, api::ResolvedConfig{}, std::make_shared<FixedPlanProvider>(plan));
  std::vector<float> in(4, 1.0f);
  std::vector<float> out(4, 0.0f);
  const std::string message = planErrorOf(
      [&] { comms[0].allReduce(in.data(), out.data(), 4, DataType::float32, ReduceOp::sum); });
  EXPECT_THAT(message, HasSubstr("rank 0: allreduce: plan 'copy.self' cannot be run: rank 0 tb 0 "
                                 "step 0 (copy) names peer 0; copy is local to its rank and uses "
                                 "no connection: remove the step's peer and channel"));
  EXPECT_THAT(message, HasSubstr("(a test provider)"));
}

TEST(StepEndpoints, PlanFilesAreVerifiedAndRefused) {
  ir::Algorithm ring = compiledRing(2);
  ring.ranks[0].threadblocks[0].steps[0].channel = 1;
  testing_support::TempDir dir;
  const std::string file = dir.write("ring.json", ir::writeJson(ring));
  try {
    selection::readPlanFile(file, 8);
    ADD_FAILURE() << "expected an OptionError";
  } catch (const OptionError& error) {
    EXPECT_THAT(error.what(), HasSubstr("malformed: rank 0 tb 0 step 0 (send) names channel 1; "
                                        "send moves data over its threadblock's connection"));
  }
}

}  // namespace
}  // namespace chorus
