#include "compiler/assign_channels.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "support/error.h"

namespace chorus::compiler {

namespace {

class SlotTable {
 public:
  explicit SlotTable(InstrGraph& graph) : graph_(graph) {}

  // Whether `in` can run on abstract channel `channel` of its replica's namespace.
  bool fits(const Instr& in, int channel) const {
    const int s = in.sendPeer, r = in.recvPeer;
    const int manual = manualHint(in);
    const int t1 = s >= 0 ? find(bySend_, in, channel, s) : -1;
    const int t2 = r >= 0 ? find(byRecv_, in, channel, r) : -1;
    if (manual >= 0) {
      auto it = manual_.find(manualKey(in.rank, manual));
      if (it != manual_.end()) {
        const TbSlot& slot = graph_.slots[it->second];
        if (slotChannel_[it->second] != channelKey(in, channel)) return false;
        if (s >= 0 && slot.sendPeer >= 0 && slot.sendPeer != s) return false;
        if (r >= 0 && slot.recvPeer >= 0 && slot.recvPeer != r) return false;
      }
      const int mine = it == manual_.end() ? -2 : it->second;
      return (t1 < 0 || t1 == mine) && (t2 < 0 || t2 == mine);
    }
    if (s >= 0 && r >= 0) {
      if (t1 >= 0 && t2 >= 0) return t1 == t2;
      if (t1 >= 0) return graph_.slots[t1].recvPeer < 0 && graph_.slots[t1].manualId < 0;
      if (t2 >= 0) return graph_.slots[t2].sendPeer < 0 && graph_.slots[t2].manualId < 0;
    }
    return true;
  }

  // Undo log so a flow that visits one rank twice can be placed hop by hop and rolled back.
  void beginFlow() { undo_.clear(); slotsAtBegin_ = graph_.slots.size(); }
  void rollbackFlow() {
    for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) it->restore(*this);
    undo_.clear();
    graph_.slots.resize(slotsAtBegin_);
    slotChannel_.resize(slotsAtBegin_);
  }

  void commit(Instr& in, int channel) {
    const int s = in.sendPeer, r = in.recvPeer;
    const int manual = manualHint(in);
    int slot = -1;
    if (manual >= 0) {
      auto it = manual_.find(manualKey(in.rank, manual));
      slot = it != manual_.end() ? it->second : newSlot(in, channel, manual);
    } else {
      if (s >= 0) slot = find(bySend_, in, channel, s);
      if (slot < 0 && r >= 0) slot = find(byRecv_, in, channel, r);
      if (slot < 0) slot = newSlot(in, channel, -1);
    }
    TbSlot& t = graph_.slots[slot];
    undo_.push_back({Undo::slotPeers, slot, static_cast<std::uint64_t>(t.sendPeer), t.recvPeer, -1});
    if (s >= 0) {
      t.sendPeer = s;
      remember(bySend_, Undo::sendMap, peerKey(in, channel, s));
      bySend_[peerKey(in, channel, s)] = slot;
    }
    if (r >= 0) {
      t.recvPeer = r;
      remember(byRecv_, Undo::recvMap, peerKey(in, channel, r));
      byRecv_[peerKey(in, channel, r)] = slot;
    }
    in.slot = slot;
    in.channel = channel;  // abstract until finalized
  }

  // Channel namespace of the slot (replica, abstract channel), for finalization.
  std::pair<int, int> slotNamespace(int slot) const {
    const auto key = slotChannel_[slot];
    return {static_cast<int>(key >> 32), static_cast<int>(key & 0xffffffff)};
  }

 private:
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
  int find(const std::unordered_map<std::uint64_t, int>& map, const Instr& in, int channel,
           int peer) const {
    auto it = map.find(peerKey(in, channel, peer));
    return it == map.end() ? -1 : it->second;
  }
  struct Undo {
    enum Kind { slotPeers, sendMap, recvMap, manualMap } kind;
    int slot;
    std::uint64_t key;  // map key, or the old send peer for slotPeers
    int oldRecv;        // slotPeers: old recv peer
    int oldValue;       // maps: previous slot, -1 when absent
    void restore(SlotTable& table) const {
      if (kind == slotPeers) {
        if (slot < static_cast<int>(table.graph_.slots.size())) {
          table.graph_.slots[slot].sendPeer = static_cast<int>(static_cast<std::int64_t>(key));
          table.graph_.slots[slot].recvPeer = oldRecv;
        }
        return;
      }
      auto& map = kind == sendMap ? table.bySend_ : kind == recvMap ? table.byRecv_ : table.manual_;
      if (oldValue < 0)
        map.erase(key);
      else
        map[key] = oldValue;
    }
  };
  void remember(const std::unordered_map<std::uint64_t, int>& map, typename Undo::Kind kind,
                std::uint64_t key) {
    auto it = map.find(key);
    undo_.push_back({kind, -1, key, -1, it == map.end() ? -1 : it->second});
  }

  int newSlot(const Instr& in, int channel, int manual) {
    TbSlot slot;
    slot.rank = in.rank;
    slot.manualId = manual;
    graph_.slots.push_back(slot);
    slotChannel_.push_back(channelKey(in, channel));
    const int id = static_cast<int>(graph_.slots.size()) - 1;
    if (manual >= 0) {
      remember(manual_, Undo::manualMap, manualKey(in.rank, manual));
      manual_[manualKey(in.rank, manual)] = id;
    }
    return id;
  }

  InstrGraph& graph_;
  std::unordered_map<std::uint64_t, int> bySend_, byRecv_, manual_;
  std::vector<std::uint64_t> slotChannel_;
  std::vector<Undo> undo_;
  std::size_t slotsAtBegin_ = 0;
};

}  // namespace

InstrGraph assignChannels(InstrGraph graph, const PassContext&) {
  graph.slots.clear();
  SlotTable table(graph);
  constexpr int kMaxSearch = 4096;
  for (const auto& start : graph.instrs) {
    if (start.dead || start.op != ir::OpKind::send) continue;
    std::vector<int> flow;
    int hint = -1;
    for (int id = start.id; id >= 0;) {
      const Instr& in = graph.instrs[id];
      flow.push_back(id);
      hint = std::max(hint, in.channelHint);
      id = ir::opSends(in.op) ? in.sendMatch : -1;
    }
    // Places the flow hop by hop on `channel`, or leaves the table unchanged and returns false.
    auto tryPlace = [&](int channel) {
      table.beginFlow();
      for (int id : flow) {
        if (!table.fits(graph.instrs[id], channel)) {
          table.rollbackFlow();
          return false;
        }
        table.commit(graph.instrs[id], channel);
      }
      return true;
    };
    int channel = hint;
    if (hint >= 0) {
      if (!tryPlace(hint))
        throw CompileError(fmt::format(
            "the transfer traced at {} (rank {} -> rank {}) asks for channel {}, but on that "
            "channel a threadblock of one of its ranks already serves another peer in the same "
            "direction; give one of the two transfers a different channel",
            start.where, start.rank, start.sendPeer, hint));
    } else {
      channel = 0;
      while (!tryPlace(channel)) {
        if (++channel > kMaxSearch)
          throw CompileError(fmt::format("no channel fits the transfer traced at {}",
                                         start.where));
      }
    }
  }

  // Final channel numbers: replica q's channels follow those of replicas 0..q-1.
  std::vector<int> used(graph.replicaCount, 0);
  for (std::size_t s = 0; s < graph.slots.size(); ++s) {
    const auto [replica, channel] = table.slotNamespace(static_cast<int>(s));
    used[replica] = std::max(used[replica], channel + 1);
  }
  std::vector<int> base(graph.replicaCount, 0);
  for (int q = 1; q < graph.replicaCount; ++q) base[q] = base[q - 1] + used[q - 1];
  for (std::size_t s = 0; s < graph.slots.size(); ++s) {
    const auto [replica, channel] = table.slotNamespace(static_cast<int>(s));
    graph.slots[s].channel = base[replica] + channel;
  }
  for (auto& in : graph.instrs)
    if (in.slot >= 0) in.channel = graph.slots[in.slot].channel;
  return graph;
}

}  // namespace chorus::compiler
