#include "transport/fifo.h"

#include "support/error.h"

namespace chorus::transport {

// A transport without single copy answers acceptsRemote() with false, so the interpreter never
// reaches these.

std::uint64_t Fifo::commitRemote(const RemoteRegion&, std::uint64_t) {
  CHORUS_INTERNAL_ASSERT(false, "commitRemote on a FIFO without single copy");
  return 0;
}

bool Fifo::remoteSettled(std::uint64_t) const {
  return true;
}

bool Fifo::evictRemote(std::uint64_t) {
  return true;
}

RemoteClaim Fifo::claimRemote(RecvSlot*) {
  CHORUS_INTERNAL_ASSERT(false, "claimRemote on a FIFO without single copy");
  return RemoteClaim::wait;
}

void Fifo::readRemote(std::uint8_t*, std::size_t, std::size_t) {
  CHORUS_INTERNAL_ASSERT(false, "readRemote on a FIFO without single copy");
}

}  // namespace chorus::transport
