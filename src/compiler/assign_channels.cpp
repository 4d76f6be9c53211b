#include "compiler/assign_channels.h"

#include <algorithm>
#include <span>
#include <unordered_map>

#include <fmt/format.h>

#include "support/error.h"

namespace chorus::compiler {

namespace {

// Threadblock slots per (rank, replica, channel), indexed by send peer and by recv peer. Slots
// whose open sides complement each other are merged (union-find), so a plain send to p and a
// plain receive from p share one threadblock as in MSCCL's all-pairs programs. Every change is
// logged so a flow that does not fit can be rolled back.
class SlotTable {
 public:
  explicit SlotTable(InstrGraph& graph) : graph_(graph) {}

  void beginFlow() {
    undo_.clear();
    slotsAtBegin_ = graph_.slots.size();
  }
  void rollbackFlow() {
    for (auto it = undo_.rbegin(); it != undo_.rend(); ++it)
      restore(*it);
    undo_.clear();
    graph_.slots.resize(slotsAtBegin_);
    parent_.resize(slotsAtBegin_);
    namespace_.resize(slotsAtBegin_);
  }

  // Places `in` on abstract channel `channel` of its replica, or returns false (unchanged).
  bool place(Instr& in, int channel) {
    const int s = in.sendPeer, r = in.recvPeer;
    const int manual = manualHint(in);
    int t1 = s >= 0 ? lookup(bySend_, peerKey(in, channel, s)) : -1;
    int t2 = r >= 0 ? lookup(byRecv_, peerKey(in, channel, r)) : -1;
    int slot = -1;
    if (manual >= 0) {
      slot = lookup(manual_, manualKey(in.rank, manual));
      if (slot >= 0) {
        const TbSlot& t = graph_.slots[slot];
        if (namespace_[slot] != channelKey(in, channel)) return false;
        if ((s >= 0 && t.sendPeer >= 0 && t.sendPeer != s) ||
            (r >= 0 && t.recvPeer >= 0 && t.recvPeer != r))
          return false;
      }
      if ((t1 >= 0 && t1 != slot) || (t2 >= 0 && t2 != slot)) return false;
      if (slot < 0) slot = newSlot(in, channel, manual);
    } else if (t1 >= 0 && t2 >= 0) {
      if (t1 != t2) {
        if (!mergeable(t1, t2)) return false;
        slot = merge(t1, t2);
      } else {
        slot = t1;
      }
    } else if (t1 >= 0) {
      if (r >= 0 && !openRecv(t1)) return false;
      slot = t1;
    } else if (t2 >= 0) {
      if (s >= 0 && !openSend(t2)) return false;
      slot = t2;
    } else {
      slot = openSlotFor(in, channel);
      if (slot < 0) slot = newSlot(in, channel, -1);
    }
    setPeers(slot, s, r);
    if (s >= 0) setMap(bySend_, Undo::sendMap, peerKey(in, channel, s), slot);
    if (r >= 0) setMap(byRecv_, Undo::recvMap, peerKey(in, channel, r), slot);
    in.slot = slot;
    in.replicaChannel = channel;
    return true;
  }

  // Root slot of a slot id (after merges).
  int root(int slot) const {
    while (parent_[slot] != slot)
      slot = parent_[slot];
    return slot;
  }
  std::pair<int, int> slotNamespace(int slot) const {
    const auto key = namespace_[slot];
    return {static_cast<int>(key >> 32), static_cast<int>(key & 0xffffffff)};
  }

 private:
  struct Undo {
    enum Kind { peers, sendMap, recvMap, manualMap, parent, open } kind;
    int slot = -1;
    std::uint64_t key = 0;
    int a = -1;  // peers: old send peer; maps: old value (-1 = absent); parent: old parent
    int b = -1;  // peers: old recv peer
  };

  static int manualHint(const Instr& in) {
    if (in.sendPeer >= 0 && in.sendTbHint >= 0) return in.sendTbHint;
    if (in.recvPeer >= 0 && in.recvTbHint >= 0) return in.recvTbHint;
    return -1;
  }
  static std::uint64_t channelKey(const Instr& in, int channel) {
    return (static_cast<std::uint64_t>(in.replica) << 32) | static_cast<std::uint32_t>(channel);
  }
  static std::uint64_t manualKey(int rank, int id) {
    return (static_cast<std::uint64_t>(rank) << 32) | static_cast<std::uint32_t>(id);
  }
  // rank (20 bits) | replica (12) | channel (12) | peer (20)
  static std::uint64_t peerKey(const Instr& in, int channel, int peer) {
    return (static_cast<std::uint64_t>(in.rank) << 44) |
           (static_cast<std::uint64_t>(in.replica & 0xfff) << 32) |
           (static_cast<std::uint64_t>(channel & 0xfff) << 20) | static_cast<std::uint64_t>(peer);
  }
  static std::uint64_t openKey(const Instr& in, int channel) {
    return peerKey(in, channel, 0xfffff);
  }

  int lookup(const std::unordered_map<std::uint64_t, int>& map, std::uint64_t key) const {
    auto it = map.find(key);
    return it == map.end() ? -1 : root(it->second);
  }
  bool openSend(int slot) const {
    return graph_.slots[slot].sendPeer < 0 && graph_.slots[slot].manualId < 0;
  }
  bool openRecv(int slot) const {
    return graph_.slots[slot].recvPeer < 0 && graph_.slots[slot].manualId < 0;
  }
  // t1 serves the send peer, t2 the recv peer; they can become one slot if each lacks the
  // other's side.
  bool mergeable(int t1, int t2) const { return openRecv(t1) && openSend(t2); }
  int merge(int t1, int t2) {
    undo_.push_back({Undo::parent, t2, 0, parent_[t2], -1});
    parent_[t2] = t1;
    return t1;
  }

  // A slot of this rank/channel with the free side `in` needs: prefer one whose other side is
  // the same peer (a bidirectional pair), else the oldest.
  int openSlotFor(const Instr& in, int channel) {
    const bool sends = in.sendPeer >= 0;
    if (in.sendPeer >= 0 && in.recvPeer >= 0) return -1;
    const int peer = sends ? in.sendPeer : in.recvPeer;
    const int paired = lookup(sends ? byRecv_ : bySend_, peerKey(in, channel, peer));
    if (paired >= 0 && (sends ? openSend(paired) : openRecv(paired))) return paired;
    // Never pair with a slot this flow opened: its own later hops may need that side.
    auto& candidates = open_[openKey(in, channel)];
    for (int c : candidates) {
      const int slot = root(c);
      if (slot >= static_cast<int>(slotsAtBegin_)) continue;
      if (sends ? openSend(slot) : openRecv(slot)) return slot;
    }
    return -1;
  }

  void setPeers(int slot, int s, int r) {
    TbSlot& t = graph_.slots[slot];
    undo_.push_back({Undo::peers, slot, 0, t.sendPeer, t.recvPeer});
    if (s >= 0) t.sendPeer = s;
    if (r >= 0) t.recvPeer = r;
  }
  void setMap(std::unordered_map<std::uint64_t, int>& map, Undo::Kind kind, std::uint64_t key,
              int slot) {
    auto it = map.find(key);
    undo_.push_back({kind, -1, key, it == map.end() ? -1 : it->second, -1});
    map[key] = slot;
  }
  void restore(const Undo& u) {
    switch (u.kind) {
      case Undo::peers:
        if (u.slot < static_cast<int>(graph_.slots.size())) {
          graph_.slots[u.slot].sendPeer = u.a;
          graph_.slots[u.slot].recvPeer = u.b;
        }
        return;
      case Undo::parent:
        parent_[u.slot] = u.a;
        return;
      case Undo::open:
        open_[u.key].pop_back();
        return;
      default: {
        auto& map = u.kind == Undo::sendMap ? bySend_ : u.kind == Undo::recvMap ? byRecv_ : manual_;
        if (u.a < 0)
          map.erase(u.key);
        else
          map[u.key] = u.a;
      }
    }
  }
  int newSlot(const Instr& in, int channel, int manual) {
    TbSlot slot;
    slot.rank = in.rank;
    slot.manualId = manual;
    graph_.slots.push_back(slot);
    const int id = static_cast<int>(graph_.slots.size()) - 1;
    parent_.push_back(id);
    namespace_.push_back(channelKey(in, channel));
    if (manual >= 0) {
      setMap(manual_, Undo::manualMap, manualKey(in.rank, manual), id);
    } else {
      open_[openKey(in, channel)].push_back(id);
      undo_.push_back({Undo::open, id, openKey(in, channel), -1, -1});
    }
    return id;
  }

  InstrGraph& graph_;
  std::unordered_map<std::uint64_t, int> bySend_, byRecv_, manual_;
  std::unordered_map<std::uint64_t, std::vector<int>> open_;  // slots per (rank, replica, channel)
  std::vector<int> parent_;
  std::vector<std::uint64_t> namespace_;
  std::vector<Undo> undo_;
  std::size_t slotsAtBegin_ = 0;
};

}  // namespace

InstrGraph assignChannels(InstrGraph graph, const PassContext&) {
  graph.slots.clear();
  SlotTable table(graph);
  // A flow fits on a fresh channel unless manual threadblocks pin it, so the search is bounded
  // by the channels used so far.
  int channelsUsed = 0;
  for (const auto& start : graph.instrs) {
    if (start.dead || start.op != ir::OpKind::send) continue;
    std::vector<int> flow;
    int hint = -1;
    bool manual = false;
    for (int id = start.id; id >= 0;) {
      const Instr& in = graph.instrs[id];
      flow.push_back(id);
      hint = std::max(hint, in.channelHint);
      manual = manual || in.sendTbHint >= 0 || in.recvTbHint >= 0;
      id = ir::opSends(in.op) ? in.sendMatch : -1;
    }
    auto tryPlace = [&](int channel) {
      table.beginFlow();
      for (int id : flow)
        if (!table.place(graph.instrs[id], channel)) {
          table.rollbackFlow();
          return false;
        }
      return true;
    };
    if (hint >= 0) {
      if (!tryPlace(hint))
        throw CompileError(fmt::format(
            "the transfer traced at {} (rank {} -> rank {}) asks for channel {}, but on that "
            "channel a threadblock of one of its ranks already serves another peer in the same "
            "direction; give one of the two transfers a different channel",
            graph.whereOf(start), start.rank, start.sendPeer, hint));
      channelsUsed = std::max(channelsUsed, hint + 1);
      continue;
    }
    std::span<const int> avoid;
    if (auto it = graph.avoidChannels.find(start.id); it != graph.avoidChannels.end())
      avoid = it->second;
    auto avoided = [&](int c) { return std::find(avoid.begin(), avoid.end(), c) != avoid.end(); };
    int channel = 0;
    const int limit = channelsUsed + static_cast<int>(avoid.size()) + 1;
    while (avoided(channel) || !tryPlace(channel))
      if (++channel > limit)
        throw CompileError(fmt::format(
            "no channel fits the transfer traced at {} (rank {} -> rank {}){}",
            graph.whereOf(start), start.rank, start.sendPeer,
            manual ? ": its manual threadblocks (sendTb/recvTb) would need a second send or "
                     "recv peer, or a second channel; a threadblock has one send peer, one recv "
                     "peer and one channel"
                   : ""));
    channelsUsed = std::max(channelsUsed, channel + 1);
  }

  // Keep root slots only, renumbered in creation order.
  std::vector<int> newId(graph.slots.size(), -1);
  std::vector<TbSlot> roots;
  std::vector<std::pair<int, int>> spaces;
  for (std::size_t s = 0; s < graph.slots.size(); ++s)
    if (table.root(static_cast<int>(s)) == static_cast<int>(s)) {
      newId[s] = static_cast<int>(roots.size());
      roots.push_back(graph.slots[s]);
      spaces.push_back(table.slotNamespace(static_cast<int>(s)));
    }
  for (auto& in : graph.instrs)
    if (in.slot >= 0) in.slot = newId[table.root(in.slot)];

  // Final channel numbers: replica q's channels follow those of replicas 0..q-1.
  std::vector<int> used(graph.replicaCount, 0);
  for (const auto& [replica, channel] : spaces)
    used[replica] = std::max(used[replica], channel + 1);
  std::vector<int> base(graph.replicaCount, 0);
  for (int q = 1; q < graph.replicaCount; ++q)
    base[q] = base[q - 1] + used[q - 1];
  for (std::size_t s = 0; s < roots.size(); ++s)
    roots[s].channel = base[spaces[s].first] + spaces[s].second;
  graph.slots = std::move(roots);
  for (auto& in : graph.instrs)
    if (in.slot >= 0) in.channel = graph.slots[in.slot].channel;
  return graph;
}

}  // namespace chorus::compiler
