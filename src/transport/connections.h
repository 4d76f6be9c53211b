// What the interpreter needs from a transport for one rank: the FIFO of each connection it
// sends or receives on, and a shared abort flag so one rank's failure stops every rank.
#pragma once

#include <string>

#include "transport/fifo.h"

namespace chorus::transport {

class ConnectionSet {
 public:
  virtual ~ConnectionSet() = default;
  virtual int rank() const = 0;
  virtual int nranks() const = 0;
  // The FIFO this rank sends on to `peer` over `channel` / receives on from `peer`. The
  // reference stays valid for the ConnectionSet's lifetime. Throws CommError if it cannot be set
  // up.
  virtual Fifo& sendFifo(int peer, int channel) = 0;
  virtual Fifo& recvFifo(int peer, int channel) = 0;
  // Marks the group failed (first reason wins) so every rank's waits end with an error.
  virtual void abort(const std::string& reason) = 0;
  // Empty while healthy; otherwise the first failure's description.
  virtual std::string abortReason() const = 0;
};

}  // namespace chorus::transport
