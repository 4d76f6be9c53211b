// What a one-sided plan (MSCCL++ execution plans, ir/mscclpp_plan.h) must satisfy before anyone
// can run or model it (ir stage): peers, channels, barriers and semaphores that exist and match,
// chunk ranges inside the owning rank's buffers, LL packet operands only where an op can take
// them. The verifier reports every issue as a `malformed` finding; the one-sided runner refuses
// the plan with the first. Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/algorithm.h"
#include "ir/collective.h"

namespace chorus::ir {

// One step (or, with tb == -1, one rank or the whole plan) that breaks a rule, located, with
// what to change.
struct OneSidedIssue {
  int rank = -1;
  int tb = -1;
  int step = -1;
  std::string message;
};

// Chunks of `buffer` on `rank` that a one-sided plan of `collective` may touch.
int oneSidedBufferChunks(const Algorithm& algorithm, const Collective& collective, int rank,
                         BufferKind buffer);

// The rank whose memory the step's src (or dst) lies in: its peer for the remote operand of a
// put, get or getReduce, else its own.
int srcOwner(int rank, const Step& step);
int dstOwner(int rank, const Step& step);

// Every issue, in (rank, tb, step) order, at most one per step, then one per rank and buffer
// whose packets overlap plain data. Steps that move packets may not overlap plain data: a packet
// takes twice its data's bytes (the packets of chunk c fill the bytes of plain chunks 2c and 2c+1,
// MSCCL++ packet_device.hpp), and chorus keeps the two apart, so a plan that mixes them in one
// place is refused.
std::vector<OneSidedIssue> findOneSidedIssues(const Algorithm& algorithm,
                                              const Collective& collective);

// For the stages that run or simulate one-sided plans nobody verified: throws PlanError naming
// the first issue and how many more there are, unless there is none. `action` completes "plan
// 'NAME' cannot be ...": "run", "simulated".
void requireOneSidedStructure(const Algorithm& algorithm, std::string_view action);

}  // namespace chorus::ir
