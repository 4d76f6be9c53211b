#include "compiler/assign_threadblocks.h"

#include <algorithm>
#include <deque>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "compiler/flat_successors.h"
#include "support/error.h"

namespace chorus::compiler {

namespace {

std::uint64_t connectionKey(int rank, int peer, int channel) {
  return (static_cast<std::uint64_t>(rank) << 40) | (static_cast<std::uint64_t>(peer) << 16) |
         static_cast<std::uint64_t>(channel);
}

struct ScheduleAttempt {
  std::vector<int> order;
  // When stuck on message order: the receive at the head of its connection that cannot run yet,
  // and a later receive on the same connection that could.
  int blockedHead = -1;
  int readyLater = -1;
  std::uint64_t fullConnection = 0;  // when stuck on the FIFO bound
  bool stuckOnFifo = false;
};

// Dense ids for the connections (sender rank, receiver rank, channel) the instructions use, so
// that the scheduler's per-connection state is mostly indexed rather than hashed.
struct Connections {
  explicit Connections(const InstrGraph& graph)
      : sendOf(graph.instrs.size(), -1), recvOf(graph.instrs.size(), -1) {
    std::unordered_map<std::uint64_t, int> ids;
    auto idOf = [&](std::uint64_t k) {
      auto [it, added] = ids.try_emplace(k, static_cast<int>(key.size()));
      if (added) key.push_back(k);
      return it->second;
    };
    for (const auto& in : graph.instrs) {
      if (in.dead) continue;
      if (ir::opSends(in.op)) sendOf[in.id] = idOf(connectionKey(in.rank, in.sendPeer, in.channel));
      if (ir::opReceives(in.op))
        recvOf[in.id] = idOf(connectionKey(in.recvPeer, in.rank, in.channel));
    }
  }
  std::vector<int> sendOf;         // per instr: the connection it sends on, or -1
  std::vector<int> recvOf;         // per instr: the connection it receives on, or -1
  std::vector<std::uint64_t> key;  // per connection id: connectionKey()
};

// One list-scheduling attempt. `extra` adds same-threadblock order constraints between sends.
ScheduleAttempt trySchedule(const InstrGraph& graph, const Depths& depths,
                            const Connections& connections, int fifoSlots,
                            const std::vector<std::vector<int>>& extra) {
  const int n = static_cast<int>(graph.instrs.size());
  // Successor lists in one flat array (CSR), each in the order the edges are met below.
  auto forEachEdge = [&](auto&& visit) {
    for (const auto& in : graph.instrs) {
      if (in.dead) continue;
      for (int p : graph.preds(in))
        visit(p, in.id);
      for (int p : extra[in.id])
        visit(p, in.id);
      if (in.recvMatch >= 0) visit(in.recvMatch, in.id);
    }
  };
  FlatSuccessors successors = flatSuccessors(n, forEachEdge);
  std::vector<int>& pending = successors.indegree;
  const std::vector<int>& succBegin = successors.begin;
  const std::vector<int>& succs = successors.succs;
  const int live = static_cast<int>(std::count_if(graph.instrs.begin(), graph.instrs.end(),
                                                  [](const Instr& in) { return !in.dead; }));
  using Key = std::tuple<int, int, int>;  // depth, -reverse depth, id
  std::priority_queue<Key, std::vector<Key>, std::greater<>> ready;
  std::unordered_map<std::uint64_t, std::vector<int>> heldBack;
  // Receives per connection in send order: only the head may run (k-th send = k-th receive).
  std::unordered_map<std::uint64_t, std::deque<int>> expected;
  std::vector<char> waitingForTurn(n, 0);
  auto push = [&](int id) { ready.push({depths.depth[id], -depths.reverseDepth[id], id}); };
  // The maps keep their insertion and iteration order (a stuck attempt reports the first entry
  // it finds); these index them by connection id.
  const std::size_t connectionCount = connections.key.size();
  std::vector<int> outstanding(connectionCount, 0);
  std::vector<std::deque<int>*> expectedOf(connectionCount, nullptr);
  std::vector<char> holding(connectionCount, 0);  // whether heldBack has an entry
  auto expectedQueue = [&](int c) -> std::deque<int>& {
    auto& queue = expectedOf[c];
    if (queue == nullptr) queue = &expected[connections.key[c]];
    return *queue;
  };
  auto release = [&](int id) {
    const Instr& in = graph.instrs[id];
    if (ir::opReceives(in.op)) {
      const auto& queue = expectedQueue(connections.recvOf[id]);
      if (queue.empty() || queue.front() != id) {
        waitingForTurn[id] = 1;
        return;
      }
    }
    push(id);
  };
  for (const auto& in : graph.instrs)
    if (!in.dead && pending[in.id] == 0) release(in.id);

  ScheduleAttempt attempt;
  attempt.order.reserve(live);
  while (!ready.empty()) {
    const int id = std::get<2>(ready.top());
    ready.pop();
    const Instr& in = graph.instrs[id];
    if (ir::opSends(in.op)) {
      const int c = connections.sendOf[id];
      if (outstanding[c] >= fifoSlots) {
        heldBack[connections.key[c]].push_back(id);
        holding[c] = 1;
        continue;
      }
      ++outstanding[c];
      expectedQueue(c).push_back(in.sendMatch);
    }
    if (ir::opReceives(in.op)) {
      const int c = connections.recvOf[id];
      --outstanding[c];
      auto& queue = expectedQueue(c);
      queue.pop_front();
      if (!queue.empty() && waitingForTurn[queue.front()]) {
        waitingForTurn[queue.front()] = 0;
        push(queue.front());
      }
      if (holding[c]) {
        auto it = heldBack.find(connections.key[c]);
        for (int h : it->second)
          push(h);
        heldBack.erase(it);
        holding[c] = 0;
      }
    }
    attempt.order.push_back(id);
    for (int e = succBegin[id]; e < succBegin[id + 1]; ++e)
      if (--pending[succs[e]] == 0) release(succs[e]);
  }
  if (static_cast<int>(attempt.order.size()) == live) return attempt;
  for (const auto& [key, queue] : expected)
    for (std::size_t i = 1; i < queue.size(); ++i)
      if (waitingForTurn[queue[i]]) {
        attempt.blockedHead = queue.front();
        attempt.readyLater = queue[i];
        return attempt;
      }
  for (const auto& [key, held] : heldBack)
    if (!held.empty()) {
      attempt.stuckOnFifo = true;
      attempt.fullConnection = key;
      attempt.blockedHead = held.front();
      return attempt;
    }
  CHORUS_INTERNAL_ASSERT(false, "instruction graph has a cycle");
  return attempt;
}

// The plain send that starts the flow `id` belongs to.
int flowStart(const InstrGraph& graph, int id) {
  while (graph.instrs[id].op != ir::OpKind::send)
    id = graph.instrs[id].recvMatch;
  return id;
}

// Global list schedule (see the header); returns instruction ids in order. When a receive would
// have to overtake an earlier message on its connection, the two sends are reordered on the
// sender and scheduling restarts.
std::vector<int> scheduleInstructions(const InstrGraph& graph, int fifoSlots) {
  const Depths depths = computeDepths(graph);
  const Connections connections(graph);
  const int n = static_cast<int>(graph.instrs.size());
  std::vector<std::vector<int>> extra(n);
  for (;;) {
    auto attempt = trySchedule(graph, depths, connections, fifoSlots, extra);
    if (attempt.blockedHead < 0) return std::move(attempt.order);
    const Instr& head = graph.instrs[attempt.blockedHead];
    if (attempt.stuckOnFifo) {
      // The connection is full of messages its receiver cannot take yet: give the held-back
      // send's flow its own channel (the pipeline reassigns channels), unless it is pinned.
      const int start = flowStart(graph, head.id);
      if (graph.instrs[start].channelHint >= 0)
        throw CompileError(fmt::format(
            "cannot schedule '{}' within {} outstanding sends per connection: rank {} must send "
            "to rank {} on channel {} (traced at {}) before the receiver can drain its earlier "
            "sends; raise fifoSlots (--fifo-slots) or put the transfer on another channel",
            graph.name, fifoSlots, head.rank, head.sendPeer, head.channel, graph.whereOf(head)));
      throw ChannelConflict{start, head.replicaChannel};
    }
    // Send the later message first: its send gets ordered before the head's send.
    const int firstSend = head.recvMatch;
    const int laterSend = graph.instrs[attempt.readyLater].recvMatch;
    std::vector<std::vector<int>> succs(n);
    for (const auto& in : graph.instrs) {
      if (in.dead) continue;
      for (int p : graph.preds(in))
        succs[p].push_back(in.id);
      for (int p : extra[in.id])
        succs[p].push_back(in.id);
      if (in.recvMatch >= 0) succs[in.recvMatch].push_back(in.id);
    }
    std::vector<char> seen(n, 0);
    std::vector<int> stack{firstSend};
    bool cyclic = false;
    while (!stack.empty() && !cyclic) {
      const int id = stack.back();
      stack.pop_back();
      if (seen[id]) continue;
      seen[id] = 1;
      cyclic = id == laterSend;
      for (int s : succs[id])
        stack.push_back(s);
    }
    if (cyclic) {
      // The receiver needs the later message first but the sender cannot send it first: move
      // the later message's flow to another channel (the pipeline reassigns channels).
      const int start = flowStart(graph, laterSend);
      if (graph.instrs[start].channelHint >= 0)
        throw CompileError(fmt::format(
            "cannot order the messages from rank {} to rank {} on channel {}: the receiver needs "
            "the transfer traced at {} before the one traced at {}, but the sender can only send "
            "them the other way round; put one of them on another channel",
            head.recvPeer, head.rank, head.channel, graph.whereOf(graph.instrs[attempt.readyLater]),
            graph.whereOf(head)));
      throw ChannelConflict{start, graph.instrs[laterSend].replicaChannel};
    }
    extra[firstSend].push_back(laterSend);
  }
}

}  // namespace

InstrGraph assignThreadblocks(InstrGraph&& graph, const PassContext& context) {
  if (context.options.fifoSlots < 1)
    throw OptionError(
        fmt::format("fifoSlots must be at least 1, got {}", context.options.fifoSlots));
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
  // A rank's local instructions may open new slots below: one per manual threadblock id no
  // existing slot has, plus one where the rank has no slot at all. `width` bounds the rank's
  // slot count so that the vector clocks can be sized up front.
  std::vector<std::set<int>> newManualIds(nranks);
  for (const Instr& in : graph.instrs)
    if (in.slot < 0 && in.sendTbHint >= 0) newManualIds[in.rank].insert(in.sendTbHint);
  for (const TbSlot& slot : graph.slots)
    newManualIds[slot.rank].erase(slot.manualId);
  std::vector<int> width(nranks);
  for (int r = 0; r < nranks; ++r)
    width[r] = static_cast<int>(slotsOfRank[r].size() + newManualIds[r].size()) + 1;
  std::vector<int> lastPosition(graph.slots.size(), -1);
  std::vector<int> stepsOf(graph.slots.size(), 0);
  std::vector<std::vector<int>> knowledge(graph.slots.size());
  // after(id): the vector clock of id's threadblock once id has run, one row per scheduled
  // instruction in one flat array.
  std::vector<int> afterRows;
  std::vector<std::size_t> afterBegin(graph.instrs.size(), 0);
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
    for (int p : graph.preds(in))
      waits += covered(slot, graph.instrs[p]) ? 0 : 1;
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
      for (int p : graph.preds(in))
        readyAt = std::max(readyAt, position[p]);
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
        CHORUS_INTERNAL_ASSERT(
            indexInRank.back() < width[in.rank],
            "slots opened for local instructions stay within the width counted above");
      }
      in.slot = chosen;
      in.channel = graph.slots[chosen].channel;
    }
    auto& k = knowledgeOf(in.slot);
    for (int p : graph.preds(in)) {
      const Instr& pred = graph.instrs[p];
      if (covered(in.slot, pred)) continue;
      const int* known = afterRows.data() + afterBegin[p];
      for (std::size_t u = 0; u < k.size(); ++u)
        k[u] = std::max(k[u], known[u]);
    }
    in.step = stepsOf[in.slot]++;
    k[indexInRank[in.slot]] = in.step;
    afterBegin[in.id] = afterRows.size();
    afterRows.insert(afterRows.end(), k.begin(), k.end());
    lastPosition[in.slot] = rankPosition[in.rank];
    position[in.id] = rankPosition[in.rank]++;
  }

  // Threadblock ids: manual ids keep their order, the rest fill the gaps sorted by (channel,
  // send, recv); then the ids are made dense.
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
      while (next < static_cast<int>(taken.size()) && taken[next])
        ++next;
      tbOfSlot[s] = next++;
    }
    // Manual ids a rank does not use would be empty threadblocks (each one a CUDA block on
    // MSCCL's runtime): close the gaps, keeping the ids' order, as msccl-tools' lowering does.
    std::vector<int> used;
    for (int s : slots)
      used.push_back(tbOfSlot[s]);
    std::sort(used.begin(), used.end());
    for (int s : slots)
      tbOfSlot[s] =
          static_cast<int>(std::lower_bound(used.begin(), used.end(), tbOfSlot[s]) - used.begin());
  }
  for (int id : order)
    graph.instrs[id].tb = tbOfSlot[graph.instrs[id].slot];
  return std::move(graph);
}

}  // namespace chorus::compiler
