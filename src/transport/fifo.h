// The connection primitive every transport provides: one direction of a connection (sender
// threadblock -> receiver threadblock on a channel) as a FIFO of fixed-size slots (seed 000
// §6.1). Non-blocking, so the interpreter's resumable threadblocks never block a thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace chorus::transport {

// Shape of every FIFO of a group. Compiled plans assume at least 8 slots (NCCL_STEPS).
struct FifoOptions {
  int slots = 8;
  std::size_t slotBytes = 256 << 10;  // payload per slot
};

// A slot as the receiver sees it: payload, its size, and the sender's call tag.
struct RecvSlot {
  const std::uint8_t* data = nullptr;
  std::size_t bytes = 0;
  std::uint64_t tag = 0;
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
};

}  // namespace chorus::transport
