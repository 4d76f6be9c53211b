// What the interpreter needs from a transport for one rank: the FIFO of each connection it
// sends or receives on, a shared abort flag so one rank's failure stops every rank, and each
// rank's current call so a mismatch can be reported by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "transport/fifo.h"

namespace chorus::transport {

// Published call texts are cut to this many bytes.
inline constexpr std::size_t kMaxCallTextBytes = 256;

// Writes "<name> #<number> <details>" (publishNumberedCall()) into `out`, cut to `capacity`
// bytes; returns its length.
std::size_t formatNumberedCall(char* out, std::size_t capacity, std::string_view name,
                               std::uint64_t number, std::string_view details);

// Why collective #`current` of `rank` can never complete: `peer` left the group cleanly after
// starting `started` collectives (started <= current). Every transport that can tell says it so.
std::string departedPeerReason(int peer, std::uint64_t started, int rank, std::uint64_t current);

class ConnectionSet {
 public:
  virtual ~ConnectionSet() = default;
  virtual int rank() const = 0;
  virtual int nranks() const = 0;
  // The FIFO this rank sends on to `peer` over `channel` / receives on from `peer`. The
  // reference stays valid for the ConnectionSet's lifetime. Throws CommError if it cannot be set
  // up (peer out of range, shared memory exhausted, peer gone, timeout).
  virtual Fifo& sendFifo(int peer, int channel) = 0;
  virtual Fifo& recvFifo(int peer, int channel) = 0;
  // Marks the group failed (first reason wins) so every rank's waits end with an error.
  virtual void abort(const std::string& reason) = 0;
  // Empty while healthy; otherwise the first failure's description. Transports whose ranks
  // are processes also report a peer process that has exited here. Cheap enough to poll every
  // few microseconds while idle.
  virtual std::string abortReason() const = 0;
  // True once the group is known to have failed, without the slower checks abortReason() may
  // make (a peer process that exited is only noticed there). For the start of every call.
  virtual bool aborted() const { return !abortReason().empty(); }
  // Records what this rank is running now, e.g. "allreduce #12 (count 1024 float32 sum)", for
  // peers' error messages. At most 200 bytes are kept.
  virtual void publishCall(std::string_view description) = 0;
  // The same for call number `number` of a collective: peers read "<name> #<number> <details>".
  // Consecutive calls passing the same non-zero `shapeKey` pass the same name and details, so a
  // transport may store the number alone (this runs on every collective call). The default
  // formats the text and calls publishCall(description).
  virtual void publishNumberedCall(std::uint64_t shapeKey, std::string_view name,
                                   std::uint64_t number, std::string_view details);
  // The description `peer` published last ("" if none).
  virtual std::string peerCall(int peer) const = 0;
  // True once `peer` has left the group cleanly (destroyed its end), where the transport can
  // tell; a wait on it can then never end. The default cannot tell.
  virtual bool peerDeparted(int /*peer*/) const { return false; }
  // Threads the transport runs per rank besides the caller's (tcp's progress thread), so
  // pollers can tell when the host's cores are oversubscribed.
  virtual int progressThreads() const { return 0; }
  // Ranks of this group on this rank's host, itself included, for the same estimate: all of
  // them unless the transport knows where its peers run.
  virtual int ranksOnThisHost() const { return nranks(); }
  // Which host each rank runs on (hosts numbered in order of their lowest rank), when the
  // ranks span several hosts and the transport knows it; empty otherwise.
  virtual std::vector<int> hostOfRank() const { return {}; }
};

}  // namespace chorus::transport
