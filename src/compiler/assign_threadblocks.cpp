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
  const int waitCost = context.options.waitCost;
  const int nranks = graph.collective->nranks();

  // Place local instructions, tracking per threadblock which steps of the rank's other
  // threadblocks are known to have finished (vector clocks over the rank's slots).
  std::vector<std::vector<int>> slotsOfRank(nranks);
  std::vector<int> indexInRank(graph.slots.size(), -1);
  for (std::size_t s = 0; s < graph.slots.size(); ++s) {
    auto& list = slotsOfRank[graph.slots[s].rank];
    indexInRank[s] = static_cast<int>(list.size());
    list.push_back(static_cast<int>(s));
  }
  std::vector<int> width(nranks);
  for (int r = 0; r < nranks; ++r) width[r] = static_cast<int>(slotsOfRank[r].size()) + 1;
  std::vector<int> lastPosition(graph.slots.size(), -1);
  std::vector<int> stepsOf(graph.slots.size(), 0);
  std::vector<std::vector<int>> knowledge(graph.slots.size());
  std::vector<std::vector<int>> after(graph.instrs.size());
  std::vector<int> position(graph.instrs.size(), -1);
  std::vector<int> rankPosition(nranks, 0);
  auto knowledgeOf = [&](int slot) -> std::vector<int>& {
    auto& k = knowledge[slot];
    if (k.empty()) k.assign(width[graph.slots[slot].rank], -1);
    return k;
  };
  auto covered = [&](int slot, const Instr& pred) {
    return pred.slot == slot || knowledgeOf(slot)[indexInRank[pred.slot]] >= pred.step;
  };
  auto waitsOn = [&](int slot, const Instr& in) {
    int waits = 0;
    for (int p : in.preds) waits += covered(slot, graph.instrs[p]) ? 0 : 1;
    return waits;
  };
  for (std::size_t pos = 0; pos < order.size(); ++pos) {
    Instr& in = graph.instrs[order[pos]];
    if (in.slot < 0) {
      // Earliest estimated start: a threadblock is busy until its latest instruction, the
      // instruction is ready after its latest predecessor (positions in the rank's order stand in
      // for time; GC3 §5.2), and each new cross-threadblock wait costs `waitCost`. Ties go to
      // fewer waits, then to the least recently used threadblock.
      const int hint = in.sendTbHint;
      int readyAt = -1;
      for (int p : in.preds) readyAt = std::max(readyAt, position[p]);
      int chosen = -1;
      std::tuple<int, int, int> best;
      for (int s : slotsOfRank[in.rank]) {
        if (hint >= 0 && graph.slots[s].manualId != hint) continue;
        const int waits = waitsOn(s, in);
        const std::tuple<int, int, int> key{std::max(readyAt, lastPosition[s]) + waitCost * waits,
                                            waits, lastPosition[s]};
        if (chosen < 0 || key < best) {
          chosen = s;
          best = key;
        }
      }
      if (chosen < 0) {
        TbSlot slot;
        slot.rank = in.rank;
        slot.manualId = hint;
        graph.slots.push_back(slot);
        chosen = static_cast<int>(graph.slots.size()) - 1;
        indexInRank.push_back(static_cast<int>(slotsOfRank[in.rank].size()));
        slotsOfRank[in.rank].push_back(chosen);
        lastPosition.push_back(-1);
        stepsOf.push_back(0);
        knowledge.emplace_back();
        CHORUS_INTERNAL_ASSERT(indexInRank.back() < width[in.rank], "one local slot per rank");
      }
      in.slot = chosen;
      in.channel = graph.slots[chosen].channel;
    }
    auto& k = knowledgeOf(in.slot);
    for (int p : in.preds) {
      const Instr& pred = graph.instrs[p];
      if (covered(in.slot, pred)) continue;
      const auto& known = after[p];
      for (std::size_t u = 0; u < k.size(); ++u) k[u] = std::max(k[u], known[u]);
    }
    in.step = stepsOf[in.slot]++;
    k[indexInRank[in.slot]] = in.step;
    after[in.id] = k;
    lastPosition[in.slot] = rankPosition[in.rank];
    position[in.id] = rankPosition[in.rank]++;
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
  for (int id : order) graph.instrs[id].tb = tbOfSlot[graph.instrs[id].slot];
  return graph;
}

}  // namespace chorus::compiler
