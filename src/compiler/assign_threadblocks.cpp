#include "compiler/assign_threadblocks.h"

#include <algorithm>
#include <queue>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "support/error.h"

namespace chorus::compiler {

namespace {

std::uint64_t connectionKey(int rank, int peer, int channel) {
  return (static_cast<std::uint64_t>(rank) << 40) | (static_cast<std::uint64_t>(peer) << 16) |
         static_cast<std::uint64_t>(channel);
}

// Global list schedule; returns instruction ids in order.
std::vector<int> scheduleInstructions(const InstrGraph& graph, int fifoSlots) {
  const int n = static_cast<int>(graph.instrs.size());
  const Depths depths = computeDepths(graph);
  std::vector<std::vector<int>> succs(n);
  std::vector<int> pending(n, 0);
  int live = 0;
  for (const auto& in : graph.instrs) {
    if (in.dead) continue;
    ++live;
    for (int p : in.preds) {
      succs[p].push_back(in.id);
      ++pending[in.id];
    }
    if (in.recvMatch >= 0) {
      succs[in.recvMatch].push_back(in.id);
      ++pending[in.id];
    }
  }
  using Key = std::tuple<int, int, int>;  // depth, -reverse depth, id
  std::priority_queue<Key, std::vector<Key>, std::greater<>> ready;
  std::unordered_map<std::uint64_t, int> outstanding;
  std::unordered_map<std::uint64_t, std::vector<int>> heldBack;
  auto push = [&](int id) {
    ready.push({depths.depth[id], -depths.reverseDepth[id], id});
  };
  for (const auto& in : graph.instrs)
    if (!in.dead && pending[in.id] == 0) push(in.id);

  std::vector<int> order;
  order.reserve(live);
  while (!ready.empty()) {
    const int id = std::get<2>(ready.top());
    ready.pop();
    const Instr& in = graph.instrs[id];
    if (ir::opSends(in.op)) {
      const auto key = connectionKey(in.rank, in.sendPeer, in.channel);
      if (outstanding[key] >= fifoSlots) {
        heldBack[key].push_back(id);
        continue;
      }
      ++outstanding[key];
    }
    if (ir::opReceives(in.op)) {
      const auto key = connectionKey(in.recvPeer, in.rank, in.channel);
      --outstanding[key];
      auto it = heldBack.find(key);
      if (it != heldBack.end()) {
        for (int h : it->second) push(h);
        heldBack.erase(it);
      }
    }
    order.push_back(id);
    for (int s : succs[id])
      if (--pending[s] == 0) push(s);
  }
  if (static_cast<int>(order.size()) != live) {
    for (const auto& [key, held] : heldBack)
      if (!held.empty()) {
        const Instr& in = graph.instrs[held.front()];
        throw CompileError(fmt::format(
            "cannot schedule '{}' within {} outstanding sends per connection: rank {} must send "
            "to rank {} on channel {} (traced at {}) before the receiver can drain its earlier "
            "sends; raise fifoSlots (--fifo-slots) or spread the transfers over more channels",
            graph.name, fifoSlots, in.rank, in.sendPeer, in.channel, in.where));
      }
    CHORUS_INTERNAL_ASSERT(false, "instruction graph has a cycle");
  }
  return order;
}

}  // namespace

InstrGraph assignThreadblocks(InstrGraph graph, const PassContext& context) {
  if (context.options.fifoSlots < 1)
    throw OptionError(fmt::format("fifoSlots must be at least 1, got {}",
                                  context.options.fifoSlots));
  const auto order = scheduleInstructions(graph, context.options.fifoSlots);
  const int nranks = graph.collective->nranks();

  // Place local instructions; remember each slot's latest position in the order.
  std::vector<std::vector<int>> slotsOfRank(nranks);
  for (std::size_t s = 0; s < graph.slots.size(); ++s)
    slotsOfRank[graph.slots[s].rank].push_back(static_cast<int>(s));
  std::vector<int> lastPosition(graph.slots.size(), -1);
  for (std::size_t pos = 0; pos < order.size(); ++pos) {
    Instr& in = graph.instrs[order[pos]];
    if (in.slot < 0) {
      const int hint = in.sendTbHint;
      int chosen = -1;
      for (int s : slotsOfRank[in.rank]) {
        if (hint >= 0) {
          if (graph.slots[s].manualId == hint) chosen = s;
          continue;
        }
        if (chosen < 0 || lastPosition[s] < lastPosition[chosen]) chosen = s;
      }
      if (chosen < 0) {
        TbSlot slot;
        slot.rank = in.rank;
        slot.manualId = hint;
        graph.slots.push_back(slot);
        lastPosition.push_back(-1);
        chosen = static_cast<int>(graph.slots.size()) - 1;
        slotsOfRank[in.rank].push_back(chosen);
      }
      in.slot = chosen;
      in.channel = graph.slots[chosen].channel;
    }
    lastPosition[in.slot] = static_cast<int>(pos);
  }

  // Threadblock ids: manual ids first, then the rest sorted by (channel, send, recv).
  std::vector<int> tbOfSlot(graph.slots.size(), -1);
  for (int r = 0; r < nranks; ++r) {
    auto& slots = slotsOfRank[r];
    std::vector<bool> taken;
    for (int s : slots) {
      const int id = graph.slots[s].manualId;
      if (id < 0) continue;
      if (static_cast<int>(taken.size()) <= id) taken.resize(id + 1, false);
      taken[id] = true;
      tbOfSlot[s] = id;
    }
    std::vector<int> automatic;
    for (int s : slots)
      if (graph.slots[s].manualId < 0) automatic.push_back(s);
    std::sort(automatic.begin(), automatic.end(), [&](int a, int b) {
      const auto& x = graph.slots[a];
      const auto& y = graph.slots[b];
      return std::tie(x.channel, x.sendPeer, x.recvPeer, a) <
             std::tie(y.channel, y.sendPeer, y.recvPeer, b);
    });
    int next = 0;
    for (int s : automatic) {
      while (next < static_cast<int>(taken.size()) && taken[next]) ++next;
      tbOfSlot[s] = next++;
    }
  }
  std::vector<int> stepsOf(graph.slots.size(), 0);
  for (int id : order) {
    Instr& in = graph.instrs[id];
    in.tb = tbOfSlot[in.slot];
    in.step = stepsOf[in.slot]++;
  }
  return graph;
}

}  // namespace chorus::compiler
