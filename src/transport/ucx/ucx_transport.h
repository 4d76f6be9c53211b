// The ucx transport: ranks on any hosts, every pair over UCX's UCP layer (openucx.org; Debian's
// libucx), so a cluster's RDMA fabric (InfiniBand, RoCE; UCX_TLS picks) carries chorus's
// messages. Each rank has one UCP worker; workers' addresses meet in the rendezvous store, and
// every pair gets an endpoint that reports a peer's failure (UCP_ERR_HANDLING_MODE_PEER).
//
// A connection's FIFO is a ring of `slots` local slots on each side, as on tcp: a commit sends
// the slot as one active message (UCX picks eager or rendezvous by size; the receiver's
// handler writes it into the next receive slot), and the receiver returns credits, so the
// sender never has more than `slots` messages the receiver has not released. Control messages
// carry the sender's call (for error messages), an abort's reason and a clean leave (with how
// many collectives the leaver started, so a peer's collective it never joined fails at once).
// The interpreter drives the worker when it waits (poll, no credit); a progress thread per
// rank covers the rest, sleeping on the worker's event fd when idle.
//
// Messages of at least FifoOptions::singleCopyBytes leave from the sender's buffer (UCP reads
// the region itself) and land where the receiver posted for them. Where UCX finds no RDMA
// device (ucx_devices.h) every message is sent eagerly: the receiver always has a slot for it
// (credits), so a rendezvous would only add a round trip and wait on the receiver's progress
// (measured slower over UCX's tcp and shared-memory transports, docs/multihost.md). There, and
// unless UCX_TCP_TX_SEG_SIZE / UCX_TCP_RX_SEG_SIZE are set, UCX's tcp transport cuts sends at
// 64 KiB and receives 256 KiB at a time instead of 8 and 64 KiB. Where UCX finds an RDMA
// device, or UCX_RNDV_THRESH is set, UCX chooses eager or rendezvous (zero-copy) by size.
//
// Registered memory (chorus::memAlloc) travels with its UCP memory handle (ucx_registrations.h).
// Peers on this host in other processes are watched (pidfd), since UCX's shared-memory transports
// report no peer failure. Not yet: device buffers are not passed to UCX. docs/multihost.md
// "The ucx transport".
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "transport/connections.h"
#include "transport/fifo.h"
#include "transport/store.h"

namespace chorus::transport {

struct UcxOptions {
  FifoOptions fifo;
  std::string groupId;  // unique per communicator, the same on every rank: names store keys
  std::chrono::milliseconds timeout{300'000};  // rendezvous and connection set-up
  // The peers this rank connects to, indexed by rank (empty = every other rank); the same pairs
  // on every rank. The auto transport leaves out the peers it reaches over shm.
  std::vector<bool> peers;
};

// Connects rank `rank` of `nranks` through `store` (collective). Throws CommError when UCX
// cannot start or reach a peer (naming it and UCX's status), TimeoutError when a peer does not
// publish its address within the timeout.
std::unique_ptr<ConnectionSet> connectUcx(Store& store, int rank, int nranks,
                                          const UcxOptions& options);

}  // namespace chorus::transport
