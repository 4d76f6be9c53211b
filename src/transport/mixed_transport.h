// The default transport for ranks in separate processes: shm between ranks that share a
// network namespace on one kernel (one "host"), tcp or ucx between the others, chosen per peer
// from where every rank runs (exchanged through the store). A plan runs unchanged over any mix.
// When every rank is on one host it is exactly the shm transport.
//
// Across hosts (RemoteTransport): ucx where every rank's UCX finds an RDMA device
// (ucx_devices.h), tcp otherwise; CHORUS_REMOTE_TRANSPORT=tcp or ucx decides instead. Every rank
// publishes its wish and all decide alike; ranks that set different values fail naming them.
#pragma once

#include <memory>
#include <string>

#include "transport/connections.h"
#include "transport/remote_choice.h"
#include "transport/shm/shm_transport.h"
#include "transport/store.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/ucx/ucx_transport.h"

namespace chorus::transport {

struct MixedOptions {
  ShmOptions shm;  // its namePrefix also names the tcp group and the store keys
  TcpOptions tcp;  // groupId and peers are filled in here
  UcxOptions ucx;  // likewise
  RemoteTransport remote = RemoteTransport::automatic;
};

// Collective over all ranks of the group. Returns connectShm's view when every rank is on this
// host, else a view that sends to each peer over shm (same host, ranks renumbered within the
// host) or the remote transport. Errors as those; OptionError when ranks set
// CHORUS_REMOTE_TRANSPORT differently (on every rank, naming two of them).
std::unique_ptr<ConnectionSet> connectMixed(Store& store, int rank, int nranks,
                                            const MixedOptions& options);

}  // namespace chorus::transport
