// The connection primitive every transport provides: one direction of a connection (sender
// threadblock -> receiver threadblock on a channel) as a FIFO of fixed-size slots (seed 000
// §6.1). Non-blocking, so the interpreter's resumable threadblocks never block a thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace chorus::transport {

class Fifo {
 public:
  virtual ~Fifo() = default;
  // Sender side (one thread at a time): a free slot to fill, or nullptr while all are full.
  virtual std::uint8_t* trySendSlot() = 0;
  // Publishes the slot returned by trySendSlot() with `bytes` (<= slotBytes()) of payload.
  virtual void commitSend(std::size_t bytes) = 0;
  // Receiver side (one thread at a time): the oldest filled slot and its payload size, or
  // nullptr while the FIFO is empty.
  virtual const std::uint8_t* tryRecvSlot(std::size_t* bytes) = 0;
  // Returns the slot from tryRecvSlot() to the sender.
  virtual void releaseRecv() = 0;
  virtual std::size_t slotBytes() const = 0;
  virtual int slotCount() const = 0;
};

}  // namespace chorus::transport
