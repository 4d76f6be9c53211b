// How the auto transport reaches ranks on other hosts: tcp or ucx (mixed_transport.h). Every
// rank states its wish (CHORUS_REMOTE_TRANSPORT, and whether its UCX finds an RDMA device);
// decideRemote() turns all ranks' wishes into one choice, the same on every rank.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace chorus::transport {

enum class RemoteTransport { automatic, tcp, ucx };

// "auto", "tcp" or "ucx"; OptionError naming `what` (e.g. "CHORUS_REMOTE_TRANSPORT") otherwise.
RemoteTransport parseRemoteTransport(std::string_view text, std::string_view what);
const char* remoteTransportName(RemoteTransport remote);

// One rank's wish: what it was asked for, and for `automatic` whether UCX finds an RDMA device
// there (`rdmaDevices` names them, "rc_mlx5/mlx5_0:1,..."; empty: none).
struct RemoteWish {
  RemoteTransport asked = RemoteTransport::automatic;
  std::string rdmaDevices;
};
std::string encodeRemoteWish(const RemoteWish& wish);
// Throws CommError when `text` is not one (a peer of another chorus version).
RemoteWish decodeRemoteWish(std::string_view text, int rank);

struct RemoteDecision {
  bool ucx = false;
  std::string why;  // for CHORUS_DEBUG=INFO: "every rank's UCX finds an RDMA device (...)"
};
// wishes[r] is rank r's. An explicit tcp or ucx wins over auto; ucx for auto only where every
// rank found an RDMA device. OptionError when two ranks asked for different transports.
RemoteDecision decideRemote(const std::vector<RemoteWish>& wishes);

}  // namespace chorus::transport
