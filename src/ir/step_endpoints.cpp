#include "ir/step_endpoints.h"

#include <map>
#include <tuple>

#include <fmt/format.h>

#include "ir/step_semantics.h"
#include "support/error.h"

namespace chorus::ir {
namespace {

bool peerInRange(int peer, int nranks) {
  return peer >= -1 && peer < nranks;
}

// "peer 3", "channel 1", "peer 3 / channel 1"; an out-of-range peer says so.
std::string namedEndpoints(const Step& step, int nranks) {
  std::string peer;
  if (step.peer != -1) {
    peer = fmt::format("peer {}", step.peer);
    if (!peerInRange(step.peer, nranks))
      peer += fmt::format(" (not a rank: this plan has ranks 0..{})", nranks - 1);
  }
  const std::string channel = step.channel != -1 ? fmt::format("channel {}", step.channel) : "";
  if (peer.empty()) return channel;
  if (channel.empty()) return peer;
  return peer + " / " + channel;
}

// How a two-sided op moves its data: "send moves data over its threadblock's connection (send
// peer 2, channel 0)".
std::string threadblockConnection(const Threadblock& tb, OpKind op) {
  const bool sends = opSends(op);
  const bool receives = opReceives(op);
  if (sends && receives)
    return fmt::format(
        "{} moves data over its threadblock's connections (recv peer {}, send peer {}, channel "
        "{})",
        opName(op), tb.recvPeer, tb.sendPeer, tb.channel);
  if (sends)
    return fmt::format("{} moves data over its threadblock's connection (send peer {}, channel {})",
                       opName(op), tb.sendPeer, tb.channel);
  if (receives)
    return fmt::format("{} moves data over its threadblock's connection (recv peer {}, channel {})",
                       opName(op), tb.recvPeer, tb.channel);
  if (opMovesNoData(op)) return fmt::format("{} moves no data", opName(op));
  return fmt::format("{} is local to its rank and uses no connection", opName(op));
}

}  // namespace

std::string stepEndpointIssue(const RankProgram& program, int tb, int step, int nranks) {
  const Threadblock& block = program.threadblocks[static_cast<std::size_t>(tb)];
  const Step& s = block.steps[static_cast<std::size_t>(step)];
  if (s.peer == -1 && s.channel == -1 && !opIsOneSided(s.op)) return {};
  const std::string where =
      fmt::format("rank {} tb {} step {} ({})", program.rank, tb, step, opName(s.op));
  if (opSemantics(s.op).peer == OpPeer::rankLocal) {
    if (s.peer != -1)
      return fmt::format("{} names peer {}; {} is local to its rank: set its peer to -1", where,
                         s.peer, opName(s.op));
    if (s.channel < 0)
      return fmt::format("{} names no {} (channel {}); name one with an index from 0", where,
                         s.op == OpKind::barrier ? "barrier" : "semaphore", s.channel);
    return {};
  }
  if (!opTakesStepPeer(s.op)) {
    return fmt::format("{} names {}; {}: remove the step's peer and channel (set both to -1)",
                       where, namedEndpoints(s, nranks), threadblockConnection(block, s.op));
  }
  if (s.peer < 0 || s.peer >= nranks || s.peer == program.rank)
    return fmt::format("{} names peer {}, which is {}; a one-sided op names another rank of 0..{}",
                       where, s.peer, s.peer == program.rank ? "its own rank" : "not a rank",
                       nranks - 1);
  if (s.channel < -1)
    return fmt::format(
        "{} names channel {}; channels are numbered from 0 (-1: a memory access without one)",
        where, s.channel);
  return {};
}

std::vector<StepEndpointIssue> findStepEndpointIssues(const Algorithm& algorithm) {
  std::vector<StepEndpointIssue> issues;
  for (const RankProgram& program : algorithm.ranks) {
    for (std::size_t t = 0; t < program.threadblocks.size(); ++t) {
      const auto& steps = program.threadblocks[t].steps;
      for (std::size_t s = 0; s < steps.size(); ++s) {
        if (steps[s].peer == -1 && steps[s].channel == -1 && !opIsOneSided(steps[s].op)) continue;
        std::string message =
            stepEndpointIssue(program, static_cast<int>(t), static_cast<int>(s), algorithm.nranks);
        if (!message.empty())
          issues.push_back(
              {program.rank, static_cast<int>(t), static_cast<int>(s), std::move(message)});
      }
    }
  }
  return issues;
}

void requireStepEndpoints(const Algorithm& algorithm, std::string_view action) {
  const std::vector<StepEndpointIssue> issues = findStepEndpointIssues(algorithm);
  if (issues.empty()) return;
  const std::string more =
      issues.size() > 1 ? fmt::format(" ({} more step(s) like it)", issues.size() - 1) : "";
  throw PlanError(
      fmt::format("plan '{}' cannot be {}: {}{}; 'chorus verify' reports every such step",
                  algorithm.name, action, issues.front().message, more));
}

bool stepIsOneSided(const Step& step) {
  return opIsOneSided(step.op) || step.srcPackets || step.dstPackets || step.rawPackets;
}

bool hasOneSidedOps(const Algorithm& algorithm) {
  for (const auto& program : algorithm.ranks)
    for (const auto& tb : program.threadblocks)
      for (const auto& step : tb.steps)
        if (stepIsOneSided(step)) return true;
  return false;
}

std::vector<std::vector<int>> pairChannels(const Algorithm& algorithm) {
  std::vector<std::vector<int>> pairs(algorithm.ranks.size());
  // (rank, type, peer) -> that rank's channels of the type to the peer, in order.
  std::map<std::tuple<int, int, int>, std::vector<int>> ordered;
  for (const RankProgram& program : algorithm.ranks)
    for (std::size_t c = 0; c < program.channels.size(); ++c)
      ordered[{program.rank, static_cast<int>(program.channels[c].type), program.channels[c].peer}]
          .push_back(static_cast<int>(c));
  for (std::size_t r = 0; r < algorithm.ranks.size(); ++r) {
    const RankProgram& program = algorithm.ranks[r];
    pairs[r].assign(program.channels.size(), -1);
    for (const auto& [key, mine] : ordered) {
      const auto [rank, type, peer] = key;
      if (rank != program.rank) continue;
      const auto theirs = ordered.find({peer, type, rank});
      if (theirs == ordered.end()) continue;
      for (std::size_t k = 0; k < mine.size() && k < theirs->second.size(); ++k)
        pairs[r][static_cast<std::size_t>(mine[k])] = theirs->second[k];
    }
  }
  return pairs;
}

void requireTwoSidedOps(const Algorithm& algorithm, std::string_view consumer) {
  for (const auto& rank : algorithm.ranks)
    for (const auto& tb : rank.threadblocks)
      for (std::size_t s = 0; s < tb.steps.size(); ++s)
        if (stepIsOneSided(tb.steps[s]))
          throw PlanError(fmt::format(
              "plan '{}' cannot be run by {}: rank {} tb {} step {} ({}) is a one-sided "
              "operation (it takes its peer and channel from the step, or moves LL packets), "
              "which it does not run yet; it runs ops that move data over their threadblock's "
              "connections",
              algorithm.name, consumer, rank.rank, tb.id, s, opName(tb.steps[s].op)));
}

}  // namespace chorus::ir
