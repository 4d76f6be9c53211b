#include "ir/step_endpoints.h"

#include <fmt/format.h>

#include "support/error.h"

namespace chorus::ir {
namespace {

// Whether `op` moves data over its threadblock's connections (or over none): true for every
// op there is, all two-sided. A one-sided op (put, get, signal, wait, flush) will return false
// and name its own peer and channel; the switch has no default so that adding an op asks.
// It belongs in the op table once the one-sided ops exist.
bool usesThreadblockConnections(OpKind op) {
  switch (op) {
    case OpKind::send:
    case OpKind::recv:
    case OpKind::recvCopySend:
    case OpKind::recvReduceCopy:
    case OpKind::recvReduceSend:
    case OpKind::recvReduceCopySend:
    case OpKind::copy:
    case OpKind::reduce:
    case OpKind::nop:
      return true;
  }
  return true;
}

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
  if (op == OpKind::nop) return "nop moves no data";
  return fmt::format("{} is local to its rank and uses no connection", opName(op));
}

}  // namespace

std::string stepEndpointIssue(const RankProgram& program, int tb, int step, int nranks) {
  const Threadblock& block = program.threadblocks[static_cast<std::size_t>(tb)];
  const Step& s = block.steps[static_cast<std::size_t>(step)];
  if (s.peer == -1 && s.channel == -1) return {};
  const std::string where =
      fmt::format("rank {} tb {} step {} ({})", program.rank, tb, step, opName(s.op));
  if (usesThreadblockConnections(s.op)) {
    return fmt::format("{} names {}; {}: remove the step's peer and channel (set both to -1)",
                       where, namedEndpoints(s, nranks), threadblockConnection(block, s.op));
  }
  if (!peerInRange(s.peer, nranks) || s.peer == program.rank)
    return fmt::format(
        "{} names peer {}, which is {}; name another rank of 0..{}, or -1 for the threadblock's",
        where, s.peer, s.peer == program.rank ? "its own rank" : "not a rank", nranks - 1);
  if (s.channel < -1)
    return fmt::format(
        "{} names channel {}; channels are numbered from 0 (-1 for the threadblock's)", where,
        s.channel);
  return {};
}

std::vector<StepEndpointIssue> findStepEndpointIssues(const Algorithm& algorithm) {
  std::vector<StepEndpointIssue> issues;
  for (const RankProgram& program : algorithm.ranks) {
    for (std::size_t t = 0; t < program.threadblocks.size(); ++t) {
      const auto& steps = program.threadblocks[t].steps;
      for (std::size_t s = 0; s < steps.size(); ++s) {
        if (steps[s].peer == -1 && steps[s].channel == -1) continue;
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

}  // namespace chorus::ir
