#include "ir/one_sided_structure.h"

#include <array>
#include <utility>

#include <fmt/format.h>

#include "ir/step_endpoints.h"
#include "ir/step_semantics.h"
#include "support/error.h"

namespace chorus::ir {

namespace {

bool isSyncOnChannel(OpKind op) {
  return op == OpKind::signal || op == OpKind::wait || op == OpKind::relaxedSignal ||
         op == OpKind::relaxedWait || op == OpKind::flush;
}

bool isLocalDataOrNop(OpKind op) {
  return op == OpKind::copy || op == OpKind::reduce || op == OpKind::nop;
}

std::string rangeText(BufferKind buffer, int index, int count) {
  return fmt::format("{}[{}..{})", bufferName(buffer), index, index + count);
}

// What is wrong with the step's packet flags, or "" (MSCCL++'s packet ops: cpkt and upkt are
// copies, repkt's packet sources are reduces, ppkt and rppkt are puts; execution_kernel.hpp).
std::string packetIssue(const RankProgram& program, const Step& step) {
  if (!step.srcPackets && !step.dstPackets && !step.rawPackets) return {};
  if (opMovesNoData(step.op)) return "moves no data, but marks an operand as LL packets";
  if (step.srcPackets && step.op != OpKind::copy && step.op != OpKind::reduce &&
      step.op != OpKind::put)
    return fmt::format(
        "reads LL packets with {}; packets are read by copy, reduce and put only (a "
        "peer's packets are never read remotely)",
        opName(step.op));
  if (step.dstPackets && step.op != OpKind::copy && step.op != OpKind::put)
    return fmt::format("writes LL packets with {}; packets are written by copy and put only",
                       opName(step.op));
  if (step.rawPackets) {
    const bool portPut =
        step.op == OpKind::put && step.channel >= 0 &&
        step.channel < static_cast<int>(program.channels.size()) &&
        program.channels[static_cast<std::size_t>(step.channel)].type == ChannelType::port;
    if (!portPut || !step.srcPackets || !step.dstPackets)
      return "copies packets as they are (rawPackets), which only a port-channel put from "
             "packets to packets does";
  }
  return {};
}

}  // namespace

int oneSidedBufferChunks(const Algorithm& algorithm, const Collective& collective, int rank,
                         BufferKind buffer) {
  switch (buffer) {
    case BufferKind::input:
      return collective.inputChunks(rank);
    case BufferKind::output:
      return collective.outputChunks(rank);
    case BufferKind::scratch:
      return algorithm.ranks[static_cast<std::size_t>(rank)].scratchChunks;
  }
  return 0;
}

int srcOwner(int rank, const Step& step) {
  return opRemoteOperand(step.op) == RemoteOperand::src ? step.peer : rank;
}
int dstOwner(int rank, const Step& step) {
  return opRemoteOperand(step.op) == RemoteOperand::dst ? step.peer : rank;
}

std::vector<OneSidedIssue> findOneSidedIssues(const Algorithm& algorithm,
                                              const Collective& collective) {
  std::vector<OneSidedIssue> issues;
  if (static_cast<int>(algorithm.ranks.size()) != algorithm.nranks) {
    issues.push_back({-1, -1, -1,
                      fmt::format("'{}' declares {} ranks but has {} rank programs", algorithm.name,
                                  algorithm.nranks, algorithm.ranks.size())});
    return issues;
  }
  for (std::size_t r = 0; r < algorithm.ranks.size(); ++r)
    if (algorithm.ranks[r].rank != static_cast<int>(r)) {
      issues.push_back({-1, -1, -1,
                        fmt::format("rank program {} of '{}' says it is rank {}", r, algorithm.name,
                                    algorithm.ranks[r].rank)});
      return issues;
    }
  const auto pairs = pairChannels(algorithm);
  // Per rank and buffer: which chunks steps touch as plain data (1) and as packets (2).
  std::vector<std::array<std::vector<char>, 3>> touched(algorithm.ranks.size());
  for (const auto& program : algorithm.ranks) {
    const int r = program.rank;
    bool channelsSound = true;
    for (std::size_t c = 0; c < program.channels.size(); ++c) {
      const int peer = program.channels[c].peer;
      if (peer < 0 || peer >= algorithm.nranks || peer == r) {
        channelsSound = false;
        issues.push_back(
            {r, -1, -1,
             fmt::format("rank {} channel {} connects to rank {}, which is {}", r, c, peer,
                         peer == r ? "its own rank" : "not a rank of this plan")});
      }
    }
    if (!channelsSound) continue;
    for (const auto& tb : program.threadblocks) {
      for (std::size_t s = 0; s < tb.steps.size(); ++s) {
        const Step& step = tb.steps[s];
        const int si = static_cast<int>(s);
        const std::string where =
            fmt::format("rank {} tb {} step {} ({})", r, tb.id, si, opName(step.op));
        auto fail = [&](std::string message) {
          issues.push_back({r, tb.id, si, std::move(message)});
        };
        if (!opIsOneSided(step.op) && !isLocalDataOrNop(step.op)) {
          fail(
              fmt::format("{} is a two-sided op in a plan of one-sided ops; chorus runs and "
                          "verifies a plan in one model or the other, not both",
                          where));
          continue;
        }
        if (!step.deps.empty()) {
          fail(
              fmt::format("{} waits for steps of other threadblocks (deps), which one-sided "
                          "plans do not use; order threadblocks with a semaphore or a barrier, "
                          "as MSCCL++'s executor does",
                          where));
          continue;
        }
        if (std::string issue = stepEndpointIssue(program, tb.id, si, algorithm.nranks);
            !issue.empty()) {
          fail(std::move(issue));
          continue;
        }
        if (opTakesStepPeer(step.op)) {
          if (step.channel >= static_cast<int>(program.channels.size())) {
            fail(fmt::format("{} names channel {}, but rank {} has {} channel(s)", where,
                             step.channel, r, program.channels.size()));
            continue;
          }
          if (step.channel < 0 && isSyncOnChannel(step.op)) {
            fail(fmt::format("{} names no channel; it signals or waits on one", where));
            continue;
          }
          if (step.channel >= 0) {
            const Channel& channel = program.channels[static_cast<std::size_t>(step.channel)];
            if (channel.peer != step.peer) {
              fail(fmt::format("{} names peer {}, but its channel {} connects to rank {}", where,
                               step.peer, step.channel, channel.peer));
              continue;
            }
            if (step.op == OpKind::flush && channel.type != ChannelType::port) {
              fail(
                  fmt::format("{} flushes channel {}, a memory channel; only port channels "
                              "have puts in flight to flush",
                              where, step.channel));
              continue;
            }
            if (isSyncOnChannel(step.op) && step.op != OpKind::flush &&
                pairs[static_cast<std::size_t>(r)][static_cast<std::size_t>(step.channel)] < 0) {
              fail(fmt::format(
                  "{} uses channel {} ({} channel to rank {}), which has no "
                  "counterpart on rank {}: the k-th {} channel from rank {} to "
                  "rank {} pairs with the k-th from rank {} to rank {}, and rank {} "
                  "declares fewer; add the channel on rank {}",
                  where, step.channel, channelTypeName(channel.type), step.peer, step.peer,
                  channelTypeName(channel.type), r, step.peer, step.peer, r, step.peer, step.peer));
              continue;
            }
          }
        }
        if (std::string issue = packetIssue(program, step); !issue.empty()) {
          fail(fmt::format("{} {}", where, issue));
          continue;
        }
        if (step.op == OpKind::barrier &&
            (step.count < 1 || step.count > static_cast<int>(program.threadblocks.size()))) {
          fail(fmt::format("{} joins {} threadblocks, but rank {} has {}", where, step.count, r,
                           program.threadblocks.size()));
          continue;
        }
        if ((step.op == OpKind::semAcquire || step.op == OpKind::semRelease) &&
            step.channel >= static_cast<int>(program.semaphores.size())) {
          fail(fmt::format("{} names semaphore {}, but rank {} has {}", where, step.channel, r,
                           program.semaphores.size()));
          continue;
        }
        if (opMovesNoData(step.op)) continue;
        if (step.count < 1) {
          fail(fmt::format("{} moves {} chunks; a step moves at least one", where, step.count));
          continue;
        }
        // Checks the range and records it in `touched`.
        auto checkRange = [&](const char* role, int owner, BufferKind buffer, int index,
                              bool packets) {
          const int limit = oneSidedBufferChunks(algorithm, collective, owner, buffer);
          if (index < 0 || index + step.count > limit) {
            fail(fmt::format("{} {} {}{} lies outside rank {}'s {} buffer ({} chunks for {})",
                             where, role, packets ? "the packets of " : "",
                             rangeText(buffer, index, step.count), owner, bufferName(buffer), limit,
                             collective.name()));
            return false;
          }
          auto& marks = touched[static_cast<std::size_t>(owner)][static_cast<std::size_t>(buffer)];
          marks.resize(static_cast<std::size_t>(2 * limit + 2), 0);
          for (int i = index; i < index + step.count; ++i) {
            if (packets) {
              marks[static_cast<std::size_t>(2 * i)] |= 2;
              marks[static_cast<std::size_t>(2 * i + 1)] |= 2;
            } else {
              marks[static_cast<std::size_t>(i)] |= 1;
            }
          }
          return true;
        };
        if (opReadsSrc(step.op) &&
            !checkRange("reads", srcOwner(r, step), step.srcBuffer, step.srcIndex, step.srcPackets))
          continue;
        if (opWritesDst(step.op))
          checkRange("writes", dstOwner(r, step), step.dstBuffer, step.dstIndex, step.dstPackets);
      }
    }
  }
  for (std::size_t r = 0; r < touched.size(); ++r)
    for (std::size_t b = 0; b < 3; ++b) {
      const auto& marks = touched[r][b];
      for (std::size_t i = 0; i < marks.size(); ++i) {
        if (marks[i] != 3) continue;
        const auto buffer = static_cast<BufferKind>(b);
        issues.push_back(
            {static_cast<int>(r), -1, -1,
             fmt::format("rank {}'s {} chunk {} is used as plain data, and its bytes also hold "
                         "the LL packets of chunk {} (a packet takes twice its data's bytes: "
                         "the packets of chunk c fill plain chunks 2c and 2c+1); chorus keeps "
                         "packets and plain data apart, so give them separate chunks",
                         r, bufferName(buffer), i, i / 2)});
        break;
      }
    }
  return issues;
}

void requireOneSidedStructure(const Algorithm& algorithm, std::string_view action) {
  const std::vector<OneSidedIssue> issues = findOneSidedIssues(algorithm, *collectiveOf(algorithm));
  if (issues.empty()) return;
  const std::string more =
      issues.size() > 1 ? fmt::format(" ({} more like it)", issues.size() - 1) : "";
  throw PlanError(
      fmt::format("plan '{}' cannot be {}: {}{}; 'chorus verify' reports every such "
                  "issue",
                  algorithm.name, action, issues.front().message, more));
}

}  // namespace chorus::ir
