// Point-to-point send/recv on the FIFOs of a reserved channel between two ranks.
//
// Algorithm (one message = one send matched with one recv between a pair, in issue order):
//   1. Each direction of a pair numbers its messages (sequence numbers kept by both ends).
//   2. The sender cuts the buffer into slot-sized pieces; the first piece starts with a header
//      (sequence, count, datatype) so a mismatched receiver can name what the sender sent.
//      Every piece carries a tag hashed from (sequence, bytes, datatype). A zero-count message
//      is one header-only piece, so the pair stays in step.
//   3. The receiver checks each piece's tag and size against its own call and copies it out.
//   4. All sends and receives of a batch progress together in one non-blocking loop (messages
//      to the same peer in the same direction stay in order), so any issue order works inside
//      a group. Sends and receives with this rank itself are matched in order and copied.
#include <algorithm>
#include <cstring>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "api/call_tag.h"
#include "api/communicator_impl.h"
#include "device/peer_exchange.h"
#include "runtime/datatype.h"
#include "runtime/idle_backoff.h"
#include "support/error.h"

namespace chorus {

namespace {

using api::P2pCall;

// Collective plans use channels from 0 up; point-to-point uses one far above them.
constexpr int kP2pChannel = 1000;
static_assert(kP2pChannel != device::kDeviceSetupChannel, "the device executors set up there");
constexpr std::uint64_t kHeaderMagic = 0x3250'5355'524f'4843ull;  // "CHORUSP2"
constexpr std::size_t kHeaderBytes = 32;

struct WireHeader {
  std::uint64_t magic = kHeaderMagic;
  std::uint64_t sequence = 0;
  std::uint64_t count = 0;
  std::uint32_t type = 0;
  std::uint32_t reserved = 0;
};
static_assert(sizeof(WireHeader) == kHeaderBytes);

std::string describeOne(const P2pCall& c, std::uint64_t sequence) {
  return fmt::format("{} #{} {} rank {} (count {} {})", c.isSend ? "send" : "recv", sequence,
                     c.isSend ? "to" : "from", c.peer, c.count, runtime::dataTypeName(c.type));
}

std::string describeHeader(const WireHeader& h) {
  const bool known = h.type < runtime::allDataTypes().size();
  return fmt::format("send #{} (count {} {})", h.sequence, h.count,
                     known ? runtime::dataTypeName(static_cast<DataType>(h.type))
                           : std::string_view("of an unknown datatype"));
}

struct Transfer {
  const P2pCall* call = nullptr;
  std::uint64_t sequence = 0;
  std::size_t bytes = 0;
  std::uint64_t tag = 0;
  std::size_t pieces = 1;
  std::size_t done = 0;
  transport::Fifo* fifo = nullptr;
  std::string describe() const { return describeOne(*call, sequence); }
};

// The messages of one direction of one pair, progressed in order.
struct Lane {
  int peer = 0;
  bool isSend = true;
  std::vector<std::size_t> transfers;  // indices into the batch's transfers
  std::size_t next = 0;
};

class P2pBatch {
 public:
  // `executor` copies between the callers' buffers and host memory (device buffers).
  P2pBatch(transport::ConnectionSet& connections, runtime::Executor& executor,
           std::chrono::milliseconds timeout, std::vector<std::uint64_t>& sendSequence,
           std::vector<std::uint64_t>& recvSequence)
      : connections_(connections),
        executor_(executor),
        rank_(connections.rank()),
        timeout_(timeout),
        sendSequence_(sendSequence),
        recvSequence_(recvSequence) {}

  void run(std::span<const P2pCall> calls) {
    copyToSelf(calls);
    plan(calls);
    if (transfers_.empty()) return;
    publish();
    progress();
  }

 private:
  // Matches the k-th send to this rank with the k-th receive from it.
  void copyToSelf(std::span<const P2pCall> calls) {
    std::vector<const P2pCall*> sends, recvs;
    for (const auto& c : calls)
      if (c.peer == rank_) (c.isSend ? sends : recvs).push_back(&c);
    if (sends.size() != recvs.size())
      throw OptionError(fmt::format(
          "rank {}: {} send(s) to itself but {} recv(s) from itself in one group; each send to "
          "the own rank needs a matching recv inside the same groupStart()/groupEnd()",
          rank_, sends.size(), recvs.size()));
    for (std::size_t i = 0; i < sends.size(); ++i) {
      const P2pCall& s = *sends[i];
      const P2pCall& r = *recvs[i];
      if (s.count != r.count || s.type != r.type)
        throw OptionError(fmt::format(
            "rank {}: send to itself (count {} {}) does not match its recv from itself (count {} "
            "{}); a send and its recv must have the same count and datatype",
            rank_, s.count, runtime::dataTypeName(s.type), r.count, runtime::dataTypeName(r.type)));
      const std::size_t bytes = s.count * runtime::dataTypeSize(s.type);
      if (bytes > 0 && r.recvbuf != s.sendbuf) executor_.copyBytes(r.recvbuf, s.sendbuf, bytes);
    }
  }

  void plan(std::span<const P2pCall> calls) {
    for (const auto& c : calls) {
      if (c.peer == rank_) continue;
      Transfer t;
      t.call = &c;
      t.sequence = (c.isSend ? sendSequence_ : recvSequence_)[static_cast<std::size_t>(c.peer)]++;
      t.bytes = c.count * runtime::dataTypeSize(c.type);
      t.tag = api::CallTag()
                  .add("p2p")
                  .add(t.sequence)
                  .add(t.bytes)
                  .add(static_cast<std::uint64_t>(c.type))
                  .value();
      t.fifo = c.isSend ? &connections_.sendFifo(c.peer, kP2pChannel)
                        : &connections_.recvFifo(c.peer, kP2pChannel);
      const std::size_t slot = t.fifo->slotBytes();
      const std::size_t first = slot - kHeaderBytes;
      t.pieces = t.bytes <= first ? 1 : 1 + (t.bytes - first + slot - 1) / slot;
      auto lane = std::find_if(lanes_.begin(), lanes_.end(), [&](const Lane& l) {
        return l.peer == c.peer && l.isSend == c.isSend;
      });
      if (lane == lanes_.end()) lane = lanes_.insert(lanes_.end(), Lane{c.peer, c.isSend, {}, 0});
      lane->transfers.push_back(transfers_.size());
      transfers_.push_back(t);
    }
  }

  void publish() {
    std::string text = "p2p:";
    for (const auto& t : transfers_) {
      if (text.size() > 200) break;
      text += (text.size() > 4 ? ", " : " ") + t.describe();
    }
    connections_.publishCall(text);
  }

  void progress() {
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    std::size_t remaining = transfers_.size();
    runtime::IdleBackoff backoff(connections_.ranksOnThisHost() *
                                 (1 + connections_.progressThreads()));
    bool departureSeen = false;
    while (remaining > 0) {
      bool progressed = false;
      for (auto& lane : lanes_) {
        while (lane.next < lane.transfers.size()) {
          Transfer& t = transfers_[lane.transfers[lane.next]];
          progressed |= lane.isSend ? pushPieces(t) : pullPieces(t);
          if (t.done < t.pieces) break;
          ++lane.next;
          --remaining;
        }
      }
      if (progressed) {
        backoff.reset();
        departureSeen = false;
        continue;
      }
      // Nothing moved: back off, and now and then check for failures and the deadline.
      if (backoff.pause()) {
        const std::string reason = connections_.abortReason();
        if (!reason.empty())
          throw CommError(
              fmt::format("rank {}: {} aborted: {}", rank_, firstPending().describe(), reason));
        // A peer that left cleanly wrote everything it sent before it left: after one more look
        // at the FIFOs, a transfer still waiting on it never ends.
        if (const Transfer* stuck = pendingOnDepartedPeer()) {
          if (departureSeen)
            throw CommError(fmt::format(
                "rank {}: {} cannot complete: rank {} left the group (destroyed its communicator) "
                "without the matching {}",
                rank_, stuck->describe(), stuck->call->peer,
                stuck->call->isSend ? "recv" : "send"));
          departureSeen = true;
          continue;
        }
        if (std::chrono::steady_clock::now() > deadline) failTimeout();
      }
    }
  }

  // The first unfinished transfer of a lane whose peer has left the group, or nullptr.
  const Transfer* pendingOnDepartedPeer() const {
    for (const auto& lane : lanes_)
      if (lane.next < lane.transfers.size() && lane.peer != rank_ &&
          connections_.peerDeparted(lane.peer))
        return &transfers_[lane.transfers[lane.next]];
    return nullptr;
  }

  // Payload bytes of piece `i` of `t` and where they start in the user's buffer.
  std::pair<std::size_t, std::size_t> pieceRange(const Transfer& t, std::size_t i) const {
    const std::size_t slot = t.fifo->slotBytes();
    const std::size_t first = slot - kHeaderBytes;
    if (i == 0) return {0, std::min(t.bytes, first)};
    const std::size_t offset = first + (i - 1) * slot;
    return {offset, std::min(slot, t.bytes - offset)};
  }

  bool pushPieces(Transfer& t) {
    bool progressed = false;
    const auto* src = static_cast<const std::uint8_t*>(t.call->sendbuf);
    while (t.done < t.pieces) {
      std::uint8_t* slot = t.fifo->trySendSlot();
      if (slot == nullptr) break;
      const auto [offset, length] = pieceRange(t, t.done);
      std::size_t header = 0;
      if (t.done == 0) {
        WireHeader h;
        h.sequence = t.sequence;
        h.count = t.call->count;
        h.type = static_cast<std::uint32_t>(t.call->type);
        std::memcpy(slot, &h, sizeof(h));
        header = kHeaderBytes;
      }
      if (length > 0) executor_.copyBytes(slot + header, src + offset, length);
      t.fifo->commitSend(header + length, t.tag);
      ++t.done;
      progressed = true;
    }
    return progressed;
  }

  bool pullPieces(Transfer& t) {
    bool progressed = false;
    auto* dst = static_cast<std::uint8_t*>(t.call->recvbuf);
    while (t.done < t.pieces) {
      transport::RecvSlot slot;
      if (!t.fifo->tryRecvSlot(&slot)) break;
      const auto [offset, length] = pieceRange(t, t.done);
      const std::size_t header = t.done == 0 ? kHeaderBytes : 0;
      if (slot.tag != t.tag || slot.bytes != header + length) failMismatch(t, slot);
      if (length > 0) executor_.copyBytes(dst + offset, slot.data + header, length);
      t.fifo->releaseRecv();
      ++t.done;
      progressed = true;
    }
    return progressed;
  }

  [[noreturn]] void failMismatch(const Transfer& t, const transport::RecvSlot& slot) {
    WireHeader h;
    if (slot.bytes >= kHeaderBytes) std::memcpy(&h, slot.data, sizeof(h));
    const int peer = t.call->peer;
    std::string message;
    if (t.done == 0 && slot.bytes >= kHeaderBytes && h.magic == kHeaderMagic)
      message = fmt::format(
          "rank {}: {} does not match rank {}'s {}; a send and its matching recv must have the "
          "same count and datatype, and each pair must issue them in the same order",
          rank_, t.describe(), peer, describeHeader(h));
    else
      message = fmt::format(
          "rank {}: {} received piece {} of {} with {} bytes that belongs to a different message "
          "from rank {}; the ranks' sends and receives are out of step",
          rank_, t.describe(), t.done + 1, t.pieces, slot.bytes, peer);
    connections_.abort(message);
    throw CommError(message);
  }

  const Transfer& firstPending() const {
    for (const auto& lane : lanes_)
      if (lane.next < lane.transfers.size()) return transfers_[lane.transfers[lane.next]];
    return transfers_.front();
  }

  [[noreturn]] void failTimeout() {
    std::string waits;
    for (const auto& lane : lanes_) {
      if (lane.next == lane.transfers.size()) continue;
      const Transfer& t = transfers_[lane.transfers[lane.next]];
      const std::string theirs = connections_.peerCall(lane.peer);
      waits += fmt::format("; {} has {} of {} pieces {} (rank {} is running {})", t.describe(),
                           t.done, t.pieces, lane.isSend ? "sent" : "received", lane.peer,
                           theirs.empty() ? "nothing yet" : theirs);
    }
    const std::string message = fmt::format(
        "rank {}: point-to-point calls timed out after {} ms{}. The peer may have died or is not "
        "making the matching call; raise CHORUS_TIMEOUT if it is only slow",
        rank_, timeout_.count(), waits);
    connections_.abort(message);
    throw TimeoutError(message);
  }

  transport::ConnectionSet& connections_;
  runtime::Executor& executor_;
  const int rank_;
  const std::chrono::milliseconds timeout_;
  std::vector<std::uint64_t>& sendSequence_;
  std::vector<std::uint64_t>& recvSequence_;
  std::vector<Transfer> transfers_;
  std::vector<Lane> lanes_;
};

}  // namespace

void Communicator::Impl::checkP2p(const api::P2pCall& call) const {
  const char* name = call.isSend ? "send" : "recv";
  if (static_cast<std::size_t>(call.type) >= runtime::allDataTypes().size())
    throw OptionError(fmt::format("rank {}: {}: datatype value {} is not a chorus::DataType", rank_,
                                  name, static_cast<int>(call.type)));
  if (call.peer < 0 || call.peer >= size_)
    throw OptionError(fmt::format("rank {}: {}: peer {} is not a rank of this {}-rank communicator",
                                  rank_, name, call.peer, size_));
  if (call.count > std::numeric_limits<std::size_t>::max() / 2 / runtime::dataTypeSize(call.type))
    throw OptionError(fmt::format("rank {}: {}: count {} of {} overflows the address space", rank_,
                                  name, call.count, runtime::dataTypeName(call.type)));
  checkStream(call.stream, name);
  if (call.count > 0 && (call.isSend ? call.sendbuf == nullptr : call.recvbuf == nullptr))
    throw OptionError(
        fmt::format("rank {}: {}: the buffer is null but count is {}; pass a buffer "
                    "of count elements",
                    rank_, name, call.count));
}

void Communicator::Impl::runP2p(std::span<const api::P2pCall> calls) {
  requireHealthy(calls.size() == 1 ? (calls[0].isSend ? "send" : "recv") : "send/recv");
  try {
    // The host moves the data: the work queued before the calls must have finished.
    executor_->waitForStream(nullptr);
    for (std::size_t i = 0; i < calls.size(); ++i)
      if (calls[i].stream != nullptr &&
          std::none_of(calls.begin(), calls.begin() + static_cast<std::ptrdiff_t>(i),
                       [&](const api::P2pCall& c) { return c.stream == calls[i].stream; }))
        executor_->waitForStream(calls[i].stream);
    P2pBatch(connections(), *executor_, config_.timeout, sendSequence_, recvSequence_).run(calls);
  } catch (const std::exception& e) {
    recordFailure(e);
    throw;
  }
}

}  // namespace chorus
