// TCP transport: the ranks of a group are processes on any hosts that can reach each other.
// Every pair of ranks shares one TCP connection (or several: TcpOptions::socketsPerPeer)
// carrying their channels as frames (tcp_frame.h); a progress thread per rank drives the
// non-blocking sockets, and each
// connection direction on a channel is a FIFO of local slots with credit-based flow control
// (tcp_fifo.h), so plans run unchanged over tcp and shm.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "transport/connections.h"
#include "transport/fifo.h"
#include "transport/store.h"

namespace chorus::transport {

inline constexpr int kMaxSocketsPerPeer = 16;

struct TcpOptions {
  FifoOptions fifo;
  // Unique per communicator and the same on every rank; names its store keys and is checked
  // in every connection's hello, so connections of another group or job are refused.
  std::string groupId;
  std::chrono::milliseconds timeout{300'000};  // rendezvous and connection set-up
  // A shared secret every peer must present (CHORUS_AUTH_TOKEN); empty = none.
  std::string authToken;
  // CHORUS_SOCKET_IFNAME (net_interfaces.h); empty = the default choice.
  std::string ifname;
  // Connections per peer pair (CHORUS_SOCKETS_PER_PEER, 1..kMaxSocketsPerPeer); channel c
  // travels on connection c % socketsPerPeer, so plans with several channels spread over
  // several TCP streams. The same on every rank.
  int socketsPerPeer = 1;
  // SO_SNDBUF and SO_RCVBUF of every connection (0 = the kernel's, which grows them as
  // needed). Small buffers make sends wait for the receiver sooner (tests use that).
  int socketBufferBytes = 0;
  // The peers this rank connects to over tcp, indexed by rank (empty = every other rank); the
  // same pairs on every rank. The mixed transport leaves out peers it reaches over shm;
  // asking for the FIFO of a peer left out is a CommError.
  std::vector<bool> peers;
};

// Collective: every rank of the group calls it with the same store namespace and options.
// Publishes where this rank listens (the interface chosen by net_interfaces.h: loopback when
// every rank is on this host), connects to every lower rank and accepts every higher one,
// refusing connections whose hello is garbage, of another group or without the token (they
// are named in the error if a rank never connects). Throws CommError (no usable interface,
// a peer unreachable) or TimeoutError (a rank never publishes or connects) within
// options.timeout. The returned view is used by one thread at a time; a peer that closes its
// connection without leaving, resets it, or sends a malformed frame fails the group on this
// rank with a message naming the peer and its host. Destroying the view sends a clean
// goodbye after everything already sent, so peers do not report it.
std::unique_ptr<ConnectionSet> connectTcp(Store& store, int rank, int nranks,
                                          const TcpOptions& options);

}  // namespace chorus::transport
