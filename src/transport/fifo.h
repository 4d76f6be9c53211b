// The connection primitive every transport provides: one direction of a connection (sender
// threadblock -> receiver threadblock on a channel) as a FIFO of fixed-size slots (GC3
// §6.1). Non-blocking, so the interpreter's resumable threadblocks never block a thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace chorus::transport {

// Shape of every FIFO of a group. Compiled plans assume at least 8 slots (NCCL_STEPS).
struct FifoOptions {
  int slots = 8;
  std::size_t slotBytes = 256 << 10;  // payload per slot
  // Messages of at least this many bytes may travel by reference (single copy: the receiver
  // copies them straight out of the sender's memory) where the transport supports it; 0 never.
  std::size_t singleCopyBytes = 64 << 10;
};

// How a connection lays a message out in shared memory: the plan's protocol (GC3 §6.1).
// simple: payload, then a per-slot sequence word published with release ordering. ll: 8-byte
// words of 4 data bytes + a 4-byte flag stored as one word; ll128: 64-byte lines of 56 data bytes
// + an 8-byte flag stored last. Flagged formats need no separate signal: the receiver polls the
// flags in the data itself. Only transports with shared memory (shm) implement them.
enum class LineFormat : std::uint8_t { simple, ll, ll128 };

inline const char* lineFormatName(LineFormat format) {
  return format == LineFormat::ll ? "LL" : format == LineFormat::ll128 ? "LL128" : "Simple";
}

// The largest message each flagged format carries (ir::protocolMessageCap must agree: the
// runtime cuts a plan's messages at that size).
inline constexpr std::size_t kLlMaxMessageBytes = std::size_t{8} << 10;
inline constexpr std::size_t kLl128MaxMessageBytes = std::size_t{64} << 10;

// A message left in the sender's memory for the receiver to copy out (single copy): `pieces`
// runs of `pieceBytes` bytes, `stride` bytes apart, from `address` in the sender's address space.
struct RemoteRegion {
  std::uint64_t address = 0;
  std::uint64_t pieceBytes = 0;
  std::uint64_t stride = 0;
  std::uint32_t pieces = 0;
  std::size_t bytes() const { return static_cast<std::size_t>(pieceBytes) * pieces; }
};

// A slot as the receiver sees it: payload, its size, and the sender's call tag. `remote`: the
// payload is still in the sender's memory (data is nullptr); claimRemote() it, then readRemote().
// What claimRemote() found: `read` the message with readRemote(); the sender `evicted` it into
// the slot (RecvSlot now describes the local payload); or `wait`, the sender is evicting it.
enum class RemoteClaim { read, evicted, wait };

// `delivered`: the transport already wrote the payload where postRecv() asked (data is nullptr).
struct RecvSlot {
  const std::uint8_t* data = nullptr;
  std::size_t bytes = 0;
  std::uint64_t tag = 0;
  bool remote = false;
  bool delivered = false;
};

class Fifo {
 public:
  virtual ~Fifo() = default;
  // Sender side (one thread at a time): a free slot to fill, or nullptr while all are full.
  virtual std::uint8_t* trySendSlot() = 0;
  // Publishes the slot returned by trySendSlot() with `bytes` (<= slotBytes()) of payload.
  // `tag` identifies the call that sent it (collective, sequence number, count, type), so a
  // receiver running a different call notices instead of misreading the data.
  virtual void commitSend(std::size_t bytes, std::uint64_t tag) = 0;
  // Receiver side (one thread at a time): the oldest filled slot, or false while the FIFO is
  // empty.
  virtual bool tryRecvSlot(RecvSlot* slot) = 0;
  // Returns the slot from tryRecvSlot() to the sender.
  virtual void releaseRecv() = 0;
  virtual std::size_t slotBytes() const = 0;
  virtual int slotCount() const = 0;

  // ---- Line format (optional) ------------------------------------------------------------------
  // The format of the messages this end sends or receives from now on; both ends must use the
  // same format for each message (they run the same plan). Call between messages only (not
  // between trySendSlot() and commitSend(), nor tryRecvSlot() and releaseRecv()). A flagged
  // message is at most min(slotBytes(), k*MaxMessageBytes) and never goes by reference.
  // Transports without flagged formats ignore the call and keep Simple (thread, tcp: their
  // messages carry no in-band flags); lineFormat() says which one applies.
  virtual void setLineFormat(LineFormat /*format*/) {}
  virtual LineFormat lineFormat() const { return LineFormat::simple; }

  // ---- Single copy (optional): a message by reference --------------------------------------
  // Sender: whether a message of `bytes` may go by reference on this connection (the transport
  // supports it, the receiver can read this process's memory, and `bytes` reaches the
  // threshold). The defaults say no, and then no other single-copy call is made.
  virtual bool acceptsRemote(std::size_t /*bytes*/) const { return false; }
  // Sender: whether a message by reference always costs less than one through a slot, so it
  // should go by reference whenever acceptsRemote() says it may: true where the transport
  // itself sends the region (tcp writes it to the socket), false where the receiver copies it
  // out of this process's memory (which measured slower than a slot for some calls).
  virtual bool remoteSavesACopy() const { return false; }
  // Sender: whether the receiver would read a message by reference in `region` with plain
  // loads, because the memory is mapped in both processes (shm and registered memory,
  // chorus::memAlloc). Such a message costs one user-space copy, or none before a reduction,
  // so it beats a slot for every plan.
  virtual bool mapsRemote(const RemoteRegion& /*region*/) const { return false; }
  // Sender: publishes the slot from trySendSlot() as a reference to `region` (at most
  // slotBytes() in all). The region must stay unchanged until remoteSettled(ticket) or
  // evictRemote(ticket) returns true for the returned ticket.
  virtual std::uint64_t commitRemote(const RemoteRegion& region, std::uint64_t tag);
  // Sender: whether the receiver is done with the message (or it was evicted).
  virtual bool remoteSettled(std::uint64_t ticket) const;
  // Sender: copies the message into its slot so its region may change. False while the
  // receiver is copying it (it will settle soon without further help). May run on another
  // thread than the one sending, as long as one thread at a time evicts.
  virtual bool evictRemote(std::uint64_t ticket);
  // Receiver: for a slot tryRecvSlot() returned with `remote`, right before reading it (see
  // RemoteClaim; after `wait`, call it again later).
  virtual RemoteClaim claimRemote(RecvSlot* slot);
  // Receiver: copies bytes [offset, offset + bytes) of the claimed message into `dst`. Throws
  // CommError if the sender's memory cannot be read (the sender died).
  virtual void readRemote(std::uint8_t* dst, std::size_t offset, std::size_t bytes);
  // Receiver, after claimRemote() said `read`: the claimed message's bytes [offset, offset +
  // bytes) where this process can load them itself (mapped memory, one contiguous run), valid
  // until releaseRecv(); nullptr otherwise, and then readRemote() copies them.
  virtual const std::uint8_t* remoteData(std::size_t /*offset*/, std::size_t /*bytes*/) {
    return nullptr;
  }

  // ---- Posted receives (optional): the transport lands a message in its destination --------
  // Receiver: whether a message of `bytes` may be posted for. The default says no, and then no
  // other posting call is made.
  virtual bool acceptsPost(std::size_t /*bytes*/) const { return false; }
  // Receiver, before tryRecvSlot() returns the next message (the interpreter posts before its
  // first poll, since a poll may read a waiting message into its slot): the message `ahead`
  // places after the next one to be received (0: the next; at most slotCount() - 1), if it
  // carries `tag` and exactly region.bytes(), may be written straight into `region` (pieces of
  // this rank's memory, which nobody may read or write until that message is received or
  // unpost() returns); tryRecvSlot() then returns it `delivered`. A message that does not
  // match, had started to arrive or had arrived already lands in its slot as usual. False when the
  // post could not be made now (try again later). Replaces an earlier post for the same message.
  virtual bool postRecv(const RemoteRegion& /*region*/, std::uint64_t /*tag*/,
                        std::size_t /*ahead*/) {
    return false;
  }
  // Receiver: withdraws every post; once it returns the transport writes those regions no more
  // (a message partly written there goes on into its slot). For calls that end early.
  virtual void unpost() {}
};

}  // namespace chorus::transport
