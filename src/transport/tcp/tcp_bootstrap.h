// Set-up of the TCP transport's connections through the store (tcp_transport.h's connectTcp):
// choose and listen on an address, publish it, connect to lower ranks, accept higher ones and
// check every connection's hello.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "transport/socket_io.h"
#include "transport/store.h"
#include "transport/tcp/tcp_transport.h"

namespace chorus::transport {

struct TcpPeerLink {
  std::vector<SocketFd> sockets;  // options.socketsPerPeer; empty for this rank and non-peers
  std::string where;              // "rank 2 on host (10.0.0.2:40123 via eth0)", for messages
  bool sameHost = false;          // in this rank's network namespace on this kernel
};

// Collective. Returns the connected sockets of every peer (options.peers), socket i of a pair
// being the same connection on both ranks.
std::vector<TcpPeerLink> establishTcpLinks(Store& store, int rank, int nranks,
                                           const TcpOptions& options);

// The hello's tag for a group id (FNV-1a 64).
std::uint64_t groupTag(const std::string& groupId);

}  // namespace chorus::transport
