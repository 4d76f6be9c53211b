#include "verify/check_deadlock.h"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace chorus::verify {

namespace {

// "rank 0 tb 1 step 3 (recv from rank 1 into input[2]; nothing to receive)".
std::string describeWait(const ProgramModel& model, const SimResult& result, int tb) {
  const TbBlock& b = result.blocks[tb];
  const TbInfo& info = model.tbs[tb];
  const ir::Threadblock& threadblock = model.threadblock(tb);
  const ir::Step& step = threadblock.steps[b.step];
  std::string why;
  switch (b.kind) {
    case BlockKind::dependency:
      why = fmt::format("waits for its dependency tb {} step {}", model.tbs[b.targetTb].tb,
                        b.depStep);
      break;
    case BlockKind::emptyFifo:
      why = fmt::format("nothing to receive from rank {} on channel {}", model.tbs[b.targetTb].rank,
                        model.connections[b.conn].channel);
      break;
    case BlockKind::fullFifo:
      why = fmt::format("the FIFO to rank {} on channel {} is full with {} unreceived message(s)",
                        model.tbs[b.targetTb].rank, model.connections[b.conn].channel,
                        result.queued[b.conn]);
      break;
    case BlockKind::none:
      why = "finished";
      break;
  }
  const std::string iteration =
      b.iteration > 0 ? fmt::format(", iteration {}", b.iteration) : std::string();
  return fmt::format("{} ({}: {}{})", describeStepRef(info.rank, info.tb, b.step),
                     describeOp(threadblock, step), why, iteration);
}

std::string cycleHint(const ProgramModel& model, const SimResult& result,
                      const std::vector<int>& cycle, const SimOptions& options) {
  bool fullFifo = false;
  bool onlyDependencies = true;
  for (int tb : cycle) {
    fullFifo |= result.blocks[tb].kind == BlockKind::fullFifo;
    onlyDependencies &= result.blocks[tb].kind == BlockKind::dependency;
  }
  if (onlyDependencies)
    return fmt::format("the dependencies of rank {} form a cycle; remove or redirect one of them",
                       model.tbs[cycle.front()].rank);
  if (fullFifo)
    return fmt::format(
        "the cycle goes through a full FIFO ({} slot(s) per connection); post the "
        "receives before the sends that fill it, split the traffic over more "
        "channels, or rely on fewer outstanding messages",
        options.fifoSlots);
  return "reorder the steps so that each receive's matching send can run before it (for "
         "example, send first on one side of each pair)";
}

}  // namespace

void reportDeadlock(const ProgramModel& model, const SimResult& result, const SimOptions& options,
                    FindingSink& sink) {
  const int ntbs = static_cast<int>(model.tbs.size());
  // Each stuck tb waits for exactly one tb: a functional graph. Walk it from each stuck tb.
  std::vector<int> walk(ntbs, -1);  // id of the walk that visited the tb
  for (int start = 0; start < ntbs; ++start) {
    if (result.blocks[start].kind == BlockKind::none || walk[start] >= 0) continue;
    std::vector<int> path;
    int t = start;
    while (t >= 0 && walk[t] < 0 && result.blocks[t].kind != BlockKind::none) {
      walk[t] = start;
      path.push_back(t);
      t = result.blocks[t].targetTb;
    }
    if (t >= 0 && walk[t] == start && result.blocks[t].kind != BlockKind::none) {
      // A new cycle: the path from t on. Start it at its smallest tb for stable messages.
      std::vector<int> cycle(std::find(path.begin(), path.end(), t), path.end());
      std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
      std::string chain = describeWait(model, result, cycle[0]);
      for (std::size_t i = 1; i < cycle.size(); ++i)
        chain += ", which waits for " + describeWait(model, result, cycle[i]);
      const TbInfo& head = model.tbs[cycle[0]];
      chain += fmt::format(", which waits for {} again",
                           describeStepRef(head.rank, head.tb, result.blocks[cycle[0]].step));
      sink.add(FindingKind::deadlock, head.rank, head.tb, result.blocks[cycle[0]].step,
               fmt::format("deadlock (fifo={}, {} iteration(s)): {}; {}", options.fifoSlots,
                           options.iterations, chain, cycleHint(model, result, cycle, options)));
    } else if (t >= 0 && result.blocks[t].kind == BlockKind::none) {
      // The last tb on the path waits for a tb that already finished: an unmatched wait.
      const int stuck = path.back();
      const TbBlock& b = result.blocks[stuck];
      const TbInfo& info = model.tbs[stuck];
      const TbInfo& target = model.tbs[t];
      std::string why;
      switch (b.kind) {
        case BlockKind::emptyFifo:
          why = fmt::format(
              "its sender rank {} tb {} finished without sending the matching "
              "message (unmatched receive); add the missing send",
              target.rank, target.tb);
          break;
        case BlockKind::fullFifo:
          why = fmt::format(
              "its receiver rank {} tb {} finished without receiving (unmatched "
              "send); add the missing receive",
              target.rank, target.tb);
          break;
        default:
          why = fmt::format("tb {} finished without reaching step {}", target.tb, b.depStep);
          break;
      }
      sink.add(
          FindingKind::deadlock, info.rank, info.tb, b.step,
          fmt::format("deadlock: {} never completes: {}", describeWait(model, result, stuck), why));
    }
  }
}

}  // namespace chorus::verify
