#include "ir/one_sided_lowering.h"

#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ir/step_endpoints.h"
#include "ir/step_semantics.h"
#include "support/error.h"

namespace chorus::ir {

namespace one_sided_lowering {

// A connection: messages from `sender` to `receiver` on chorus channel `channel`.
using ConnectionKey = std::tuple<int, int, int>;

struct Connection {
  int senderTb = -1;
  int receiverTb = -1;
  int senderChannel = -1;    // index into the sender's RankProgram::channels
  int receiverChannel = -1;  // and the receiver's (its pair)
  std::vector<int> landing;  // per message: its first landing chunk in the receiver's scratch
  std::vector<int> counts;   // per message: its chunks
  // LL plans: per message, its first landing chunk of packets (after all plain scratch).
  std::vector<int> packetLanding;
};

// One local chunk range a data step reads or writes.
struct Access {
  BufferKind buffer = BufferKind::input;
  int index = 0;
  int count = 0;
  bool writes = false;
  bool packets = false;  // the chunks' packets, a memory apart from their plain data
};

// Builds one threadblock's one-sided steps, inserting the nops MSCCL++ needs.
class Emitter {
 public:
  explicit Emitter(std::vector<Step>& out) : out_(out) {}

  void nop() {
    if (out_.empty() || out_.back().op != OpKind::nop) out_.push_back(Step{});
    pending_.clear();
  }
  // A signal, wait or semaphore op; `nopBefore` joins the threads first (so a signal publishes
  // the data written before it). The caller adds the nop after a wait or acquire.
  void sync(OpKind op, int peer, int channel, bool nopBefore) {
    if (nopBefore) nop();
    Step s;
    s.op = op;
    s.peer = peer;
    s.channel = channel;
    out_.push_back(s);
  }
  // `fromPackets`: read the source chunks' LL packets (waiting for them) instead of their data.
  void copy(BufferKind fromBuffer, int from, BufferKind toBuffer, int to, int count,
            bool fromPackets = false) {
    data(OpKind::copy, fromBuffer, from, toBuffer, to, count, -1, fromPackets, false);
  }
  void reduce(BufferKind fromBuffer, int from, BufferKind toBuffer, int to, int count,
              bool fromPackets = false) {
    data(OpKind::reduce, fromBuffer, from, toBuffer, to, count, -1, fromPackets, false);
  }
  // `toPackets`: write the peer's landing chunks as LL packets.
  void put(BufferKind fromBuffer, int from, int peer, int to, int count, bool toPackets = false) {
    data(OpKind::put, fromBuffer, from, BufferKind::scratch, to, count, peer, false, toPackets);
  }

 private:
  static bool overlaps(const Access& a, const Access& b) {
    return a.buffer == b.buffer && a.packets == b.packets && a.index < b.index + b.count &&
           b.index < a.index + a.count && (a.writes || b.writes);
  }
  // A plain put of exactly what the step before reduced into (from plain data) is one MSCCL++
  // op (`res`, the writer fuses them): it needs no nop between.
  bool putsWhatWasReduced(OpKind op, BufferKind fromBuffer, int from, int count,
                          bool toPackets) const {
    if (op != OpKind::put || toPackets || out_.empty()) return false;
    const Step& last = out_.back();
    return last.op == OpKind::reduce && !last.srcPackets && last.dstBuffer == fromBuffer &&
           last.dstIndex == from && last.count == count;
  }
  void data(OpKind op, BufferKind fromBuffer, int from, BufferKind toBuffer, int to, int count,
            int peer, bool fromPackets, bool toPackets) {
    std::vector<Access> mine = {{fromBuffer, from, count, false, fromPackets}};
    if (peer < 0) mine.push_back({toBuffer, to, count, true, false});
    if (!putsWhatWasReduced(op, fromBuffer, from, count, toPackets)) {
      bool conflict = false;
      for (const Access& a : mine)
        for (const Access& b : pending_)
          conflict = conflict || overlaps(a, b);
      if (conflict) nop();
    }
    Step s;
    s.op = op;
    s.peer = peer;
    s.srcBuffer = fromBuffer;
    s.srcIndex = from;
    s.dstBuffer = toBuffer;
    s.dstIndex = to;
    s.count = count;
    s.srcPackets = fromPackets;
    s.dstPackets = toPackets;
    out_.push_back(s);
    pending_.insert(pending_.end(), mine.begin(), mine.end());
  }

  std::vector<Step>& out_;
  std::vector<Access> pending_;  // local accesses since the last nop
};

class Lowering {
 public:
  explicit Lowering(const Algorithm& plan) : in_(plan), ll_(plan.protocol == Protocol::ll) {}

  Algorithm run() {
    out_ = in_;
    for (RankProgram& program : out_.ranks) {
      program.channels.clear();
      program.semaphores.clear();
    }
    findConnections();
    if (ll_) placePacketLandings();
    pairChannels();
    numberDependencies();
    for (std::size_t r = 0; r < in_.ranks.size(); ++r)
      for (std::size_t t = 0; t < in_.ranks[r].threadblocks.size(); ++t)
        lowerThreadblock(static_cast<int>(r), static_cast<int>(t));
    out_.protocol = ll_ ? Protocol::ll : Protocol::simple;
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw PlanError(
        fmt::format("plan '{}' cannot be lowered to one-sided steps: {}; 'chorus "
                    "verify' checks the plan",
                    in_.name, what));
  }

  void findConnections() {
    for (const RankProgram& program : in_.ranks)
      for (const Threadblock& tb : program.threadblocks) {
        bool sends = false, receives = false;
        for (const Step& s : tb.steps) {
          sends = sends || opSends(s.op);
          receives = receives || opReceives(s.op);
        }
        if (sends) attach({program.rank, tb.sendPeer, tb.channel}, tb.id, true);
        if (receives) attach({tb.recvPeer, program.rank, tb.channel}, tb.id, false);
      }
    for (auto& [key, c] : connections_) {
      const auto [sender, receiver, channel] = key;
      if (c.senderTb < 0 || c.receiverTb < 0)
        fail(fmt::format(
            "rank {} {} rank {} on channel {}, but no threadblock of rank {} {} it",
            c.senderTb < 0 ? receiver : sender, c.senderTb < 0 ? "receives from" : "sends to",
            c.senderTb < 0 ? sender : receiver, channel, c.senderTb < 0 ? sender : receiver,
            c.senderTb < 0 ? "sends to" : "receives from"));
      // Landing chunks after the receiver's own scratch, one range per message.
      std::vector<int> sent;
      for (const Step& s : threadblock(sender, c.senderTb).steps)
        if (opSends(s.op)) sent.push_back(s.count);
      for (const Step& s : threadblock(receiver, c.receiverTb).steps)
        if (opReceives(s.op)) c.counts.push_back(s.count);
      if (sent != c.counts)
        fail(
            fmt::format("rank {} tb {} sends {} message(s) to rank {} on channel {} and rank {} "
                        "tb {} receives {}, of other sizes or number",
                        sender, c.senderTb, sent.size(), receiver, channel, receiver, c.receiverTb,
                        c.counts.size()));
      RankProgram& target = out_.ranks[static_cast<std::size_t>(receiver)];
      for (int count : c.counts) {
        c.landing.push_back(target.scratchChunks);
        target.scratchChunks += count;
      }
    }
  }

  void attach(ConnectionKey key, int tb, bool sender) {
    const auto [from, to, channel] = key;
    if (from < 0 || to < 0 || from >= in_.nranks || to >= in_.nranks || from == to)
      fail(fmt::format("rank {} tb {} {} rank {}", sender ? from : to, tb,
                       sender ? "sends to" : "receives from", sender ? to : from));
    Connection& c = connections_[key];
    int& slot = sender ? c.senderTb : c.receiverTb;
    if (slot >= 0)
      fail(
          fmt::format("rank {} tbs {} and {} both {} rank {} on channel {}; a connection has "
                      "one threadblock on each end",
                      sender ? from : to, slot, tb, sender ? "send to" : "receive from",
                      sender ? to : from, channel));
    slot = tb;
  }

  // LL: each message also lands as packets, in chunks of the receiver's scratch whose packets
  // lie past all its plain scratch (the packets of chunk c fill the bytes of plain chunks 2c and
  // 2c + 1, MSCCL++ packet_device.hpp); the scratch grows to hold them.
  void placePacketLandings() {
    std::vector<int> next(out_.ranks.size());
    for (std::size_t r = 0; r < out_.ranks.size(); ++r)
      next[r] = (out_.ranks[r].scratchChunks + 1) / 2;
    for (auto& [key, c] : connections_) {
      const auto receiver = static_cast<std::size_t>(std::get<1>(key));
      for (int count : c.counts) {
        c.packetLanding.push_back(next[receiver]);
        next[receiver] += count;
      }
    }
    for (std::size_t r = 0; r < out_.ranks.size(); ++r)
      if (next[r] > (out_.ranks[r].scratchChunks + 1) / 2)
        out_.ranks[r].scratchChunks = 2 * next[r];
  }

  // The k-th memory channel from A to B pairs with the k-th from B to A (ir::pairChannels):
  // give each connection one on both ends, in one order per pair of ranks.
  void pairChannels() {
    for (auto& [key, c] : connections_) {
      const auto [sender, receiver, channel] = key;
      auto& senderChannels = out_.ranks[static_cast<std::size_t>(sender)].channels;
      auto& receiverChannels = out_.ranks[static_cast<std::size_t>(receiver)].channels;
      c.senderChannel = static_cast<int>(senderChannels.size());
      senderChannels.push_back({ChannelType::memory, receiver});
      c.receiverChannel = static_cast<int>(receiverChannels.size());
      receiverChannels.push_back({ChannelType::memory, sender});
    }
  }

  // One semaphore (initially 0) per cross-threadblock dependency, named by its consumer.
  void numberDependencies() {
    for (const RankProgram& program : in_.ranks)
      for (const Threadblock& tb : program.threadblocks)
        for (std::size_t s = 0; s < tb.steps.size(); ++s)
          for (const StepRef& dep : tb.steps[s].deps) {
            auto& semaphores = out_.ranks[static_cast<std::size_t>(program.rank)].semaphores;
            const int id = static_cast<int>(semaphores.size());
            semaphores.push_back(0);
            releases_[{program.rank, dep.tb, dep.step}].push_back(id);
            acquires_[{program.rank, tb.id, static_cast<int>(s)}].push_back(id);
          }
  }

  const Threadblock& threadblock(int rank, int tb) const {
    return in_.ranks[static_cast<std::size_t>(rank)].threadblocks[static_cast<std::size_t>(tb)];
  }

  void lowerThreadblock(int rank, int t) {
    const Threadblock& tb = threadblock(rank, t);
    Threadblock& lowered =
        out_.ranks[static_cast<std::size_t>(rank)].threadblocks[static_cast<std::size_t>(t)];
    lowered.sendPeer = -1;
    lowered.recvPeer = -1;
    lowered.channel = 0;
    lowered.steps.clear();
    Emitter emit(lowered.steps);
    Connection* in = find({tb.recvPeer, rank, tb.channel}, t, false);
    Connection* out = find({rank, tb.sendPeer, tb.channel}, t, true);
    // Opening handshake: "ready for this launch" to whoever sends here, and wait for the same
    // from whoever this sends to (relaxed: it orders execution, no data).
    if (in) emit.sync(OpKind::relaxedSignal, tb.recvPeer, in->receiverChannel, false);
    if (out) {
      emit.sync(OpKind::relaxedWait, tb.sendPeer, out->senderChannel, false);
      emit.nop();
    }
    std::size_t received = 0, sent = 0;
    for (std::size_t i = 0; i < tb.steps.size(); ++i) {
      const Step& s = tb.steps[i];
      const int si = static_cast<int>(i);
      if (auto it = acquires_.find({rank, t, si}); it != acquires_.end()) {
        for (int id : it->second)
          emit.sync(OpKind::semAcquire, -1, id, false);
        emit.nop();
      }
      // Where the step's value lies once computed, for a send.
      BufferKind valueBuffer = s.srcBuffer;
      int valueIndex = s.srcIndex;
      if (opReceives(s.op) && ll_) {
        std::tie(valueBuffer, valueIndex) =
            receivePackets(emit, s, in->landing[received], in->packetLanding[received]);
        ++received;
      } else if (opReceives(s.op)) {
        emit.sync(OpKind::wait, tb.recvPeer, in->receiverChannel, false);
        emit.nop();
        const int landing = in->landing[received++];
        const bool sameChunks = s.srcBuffer == s.dstBuffer && s.srcIndex == s.dstIndex;
        valueBuffer = BufferKind::scratch;
        valueIndex = landing;
        if (opReducesReceived(s.op)) {
          if (opWritesDst(s.op) && sameChunks) {
            emit.reduce(BufferKind::scratch, landing, s.dstBuffer, s.dstIndex, s.count);
            valueBuffer = s.dstBuffer;
            valueIndex = s.dstIndex;
          } else {
            emit.reduce(s.srcBuffer, s.srcIndex, BufferKind::scratch, landing, s.count);
            if (opWritesDst(s.op))
              emit.copy(BufferKind::scratch, landing, s.dstBuffer, s.dstIndex, s.count);
          }
        } else if (opWritesDst(s.op)) {
          emit.copy(BufferKind::scratch, landing, s.dstBuffer, s.dstIndex, s.count);
        }
      } else if (s.op == OpKind::copy) {
        emit.copy(s.srcBuffer, s.srcIndex, s.dstBuffer, s.dstIndex, s.count);
      } else if (s.op == OpKind::reduce) {
        emit.reduce(s.srcBuffer, s.srcIndex, s.dstBuffer, s.dstIndex, s.count);
      } else if (s.op == OpKind::nop) {
        emit.nop();
      }
      if (opSends(s.op) && ll_) {
        emit.put(valueBuffer, valueIndex, tb.sendPeer, out->packetLanding[sent++], s.count, true);
      } else if (opSends(s.op)) {
        emit.put(valueBuffer, valueIndex, tb.sendPeer, out->landing[sent++], s.count);
        emit.sync(OpKind::signal, tb.sendPeer, out->senderChannel, true);
      }
      if (auto it = releases_.find({rank, t, si}); it != releases_.end()) {
        emit.nop();
        for (int id : it->second)
          emit.sync(OpKind::semRelease, -1, id, false);
      }
    }
  }

  // LL: a receive step's local work, reading the message's packets (each read waits for its
  // packets, so no signal is needed); returns where its value lies for a send.
  static std::pair<BufferKind, int> receivePackets(Emitter& emit, const Step& s, int landing,
                                                   int packets) {
    const bool sameChunks = s.srcBuffer == s.dstBuffer && s.srcIndex == s.dstIndex;
    if (!opReducesReceived(s.op)) {
      if (opWritesDst(s.op)) {
        emit.copy(BufferKind::scratch, packets, s.dstBuffer, s.dstIndex, s.count, true);
        return {s.dstBuffer, s.dstIndex};
      }
      emit.copy(BufferKind::scratch, packets, BufferKind::scratch, landing, s.count, true);
      return {BufferKind::scratch, landing};
    }
    if (opWritesDst(s.op) && sameChunks) {
      emit.reduce(BufferKind::scratch, packets, s.dstBuffer, s.dstIndex, s.count, true);
      return {s.dstBuffer, s.dstIndex};
    }
    // received ⊕ src into the plain landing chunks, then home.
    emit.copy(s.srcBuffer, s.srcIndex, BufferKind::scratch, landing, s.count);
    emit.reduce(BufferKind::scratch, packets, BufferKind::scratch, landing, s.count, true);
    if (opWritesDst(s.op))
      emit.copy(BufferKind::scratch, landing, s.dstBuffer, s.dstIndex, s.count);
    return {BufferKind::scratch, landing};
  }

  Connection* find(ConnectionKey key, int tb, bool sender) {
    auto it = connections_.find(key);
    if (it == connections_.end()) return nullptr;
    return (sender ? it->second.senderTb : it->second.receiverTb) == tb ? &it->second : nullptr;
  }

  const Algorithm& in_;
  const bool ll_;  // LL plan: messages land as packets, without signals
  Algorithm out_;
  std::map<ConnectionKey, Connection> connections_;
  std::map<std::tuple<int, int, int>, std::vector<int>> releases_;  // (rank, tb, step) -> ids
  std::map<std::tuple<int, int, int>, std::vector<int>> acquires_;
};

}  // namespace one_sided_lowering

Algorithm lowerToOneSided(const Algorithm& plan) {
  if (hasOneSidedOps(plan)) return plan;
  requireStepEndpoints(plan, "lowered to one-sided steps");
  if (static_cast<int>(plan.ranks.size()) != plan.nranks)
    throw PlanError(fmt::format("plan '{}' declares {} ranks but has {} rank programs", plan.name,
                                plan.nranks, plan.ranks.size()));
  return one_sided_lowering::Lowering(plan).run();
}

}  // namespace chorus::ir
