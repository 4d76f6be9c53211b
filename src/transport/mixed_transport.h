// The default transport for ranks in separate processes: shm between ranks that share a
// network namespace on one kernel (one "host"), tcp between the others, chosen per peer from
// where every rank runs (exchanged through the store). A plan runs unchanged over any mix.
// When every rank is on one host it is exactly the shm transport.
#pragma once

#include <memory>
#include <string>

#include "transport/connections.h"
#include "transport/shm/shm_transport.h"
#include "transport/store.h"
#include "transport/tcp/tcp_transport.h"

namespace chorus::transport {

struct MixedOptions {
  ShmOptions shm;  // its namePrefix also names the tcp group and the store keys
  TcpOptions tcp;  // groupId and peers are filled in here
};

// Collective over all ranks of the group. Returns connectShm's view when every rank is on this
// host, connectTcp's when every rank is on its own host, else a view that sends to each peer
// over shm (same host, ranks renumbered within the host) or tcp. Errors as those two.
std::unique_ptr<ConnectionSet> connectMixed(Store& store, int rank, int nranks,
                                            const MixedOptions& options);

}  // namespace chorus::transport
