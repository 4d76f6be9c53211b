// What UCX finds on this host for the transport choices: its RDMA devices (InfiniBand, RoCE:
// UCX's rc, ud and dc transports), as UCX_TLS allows them. The `auto` transport goes across
// hosts over ucx only where every rank has one, and the ucx transport sends every message
// eagerly where it has none (over UCX's tcp a rendezvous only adds a round trip).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace chorus::transport {

// One transport on one device, as ucx_info -d lists it: "rc_mlx5/mlx5_0:1".
struct UcxDevice {
  std::string transport;
  std::string device;
  std::string name() const { return transport + "/" + device; }
};

// Whether UCX_TLS=`tls` (a comma-separated list, "all", or "^" and the transports to leave out;
// empty: unset) lets UCX use `transport`. Knows UCX 1.13's aliases for the RDMA transports:
// ib, rc, rc_v, rc_x, ud, ud_v, ud_x, dc, dc_x.
bool ucxTlsAllows(std::string_view tls, std::string_view transport);

// UCX's network transports on this host other than tcp (through UCT's component query), those
// UCX_TLS (`tls`) allows. Empty where UCX finds none or cannot be queried.
std::vector<UcxDevice> ucxRdmaDevices(std::string_view tls);

// ucxRdmaDevices() with this process's UCX_TLS.
std::vector<UcxDevice> ucxRdmaDevicesHere();

}  // namespace chorus::transport
