// Which connection a step uses: its threadblock's (the two-sided ops, every op today) or its own
// peer and channel (Step::peer, Step::channel: the one-sided ops of MSCCL++ execution plans, to
// come; ir::opTakesStepPeer). Shared by the verifier's structure check, the stages that take
// plans unverified (the runners, the communicator, `chorus simulate`) and the consumers
// themselves (the interpreter, the simulator), so all refuse the same steps.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/algorithm.h"

namespace chorus::ir {

// One step whose peer or channel breaks the IR's rules.
struct StepEndpointIssue {
  int rank = -1;
  int tb = -1;
  int step = -1;
  // Located, with the fix: "rank 1 tb 0 step 2 (send) names peer 3 / channel 1; send moves
  // data over its threadblock's connection (send peer 2, channel 0): remove the step's peer
  // and channel (set both to -1)".
  std::string message;
};

// What is wrong with the peer and channel of step `step` of threadblock `tb` of `program`, in a
// plan of `nranks` ranks; empty when nothing is. A two-sided step must leave both at -1; a
// step's peer is -1 or a rank in 0..nranks-1 other than its own, its channel -1 or >= 0.
// Preconditions: tb and step index existing entries. Pure.
std::string stepEndpointIssue(const RankProgram& program, int tb, int step, int nranks);

// Every such step of `algorithm`, in (rank, tb, step) order, at most one issue per step. Pure.
std::vector<StepEndpointIssue> findStepEndpointIssues(const Algorithm& algorithm);

// For the stages that run or simulate plans nobody verified: throws PlanError naming the first
// issue, how many more there are, and `chorus verify`, unless there is none. `action` completes
// "plan 'NAME' cannot be ...": "run", "simulated".
void requireStepEndpoints(const Algorithm& algorithm, std::string_view action);

// True when the step belongs to the one-sided model: its op is one-sided (opIsOneSided) or an
// operand is LL packets (Step::srcPackets, dstPackets). Pure.
bool stepIsOneSided(const Step& step);

// True when some step of `algorithm` is one-sided (stepIsOneSided): an MSCCL++ plan, which the
// verifier and the one-sided thread runner take, and the other consumers refuse.
bool hasOneSidedOps(const Algorithm& algorithm);

// The k-th channel of a type from rank A to rank B pairs with the k-th channel of that type from
// B to A (MSCCL++'s executor connects them in that order, executor.cc:287-313 at 1f5f065): per
// rank, per channel, the index of the paired channel on the peer, or -1 when the peer declares
// fewer. A signal on a channel adds a token that waits on its pair take. Pure.
std::vector<std::vector<int>> pairChannels(const Algorithm& algorithm);

// Throws PlanError naming the first step whose op takes its peer from the step (a one-sided
// operation, opTakesStepPeer), which `consumer` ("the CPU interpreter", "the simulator") does
// not run yet.
void requireTwoSidedOps(const Algorithm& algorithm, std::string_view consumer);

}  // namespace chorus::ir
