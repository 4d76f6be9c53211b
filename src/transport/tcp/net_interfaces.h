// Which network interface the TCP transport listens on. CHORUS_SOCKET_IFNAME takes NCCL's
// NCCL_SOCKET_IFNAME syntax: comma-separated name prefixes ("eth,ens"); a leading '^' excludes
// them instead ("^docker,lo"); a leading '=' makes the names exact ("=eth0"). Without it the
// default skips loopback and docker-like bridges (docker*, virbr*) when peers are on other
// hosts, and uses loopback when every rank is on this host.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace chorus::transport {

struct NetInterface {
  std::string name;     // "eth0"
  std::string address;  // numeric, "10.0.0.2" or "fd00::2"
  bool ipv6 = false;
  bool loopback = false;
};

// The up interfaces with an IPv4 or IPv6 address (link-local IPv6 left out), in getifaddrs
// order. Empty if getifaddrs fails.
std::vector<NetInterface> listInterfaces();

struct IfnameFilter {
  bool exclude = false;  // '^': the names are excluded
  bool exact = false;    // '=': whole names, not prefixes
  std::vector<std::string> names;
};

IfnameFilter parseIfnameFilter(std::string_view spec);
bool matchesFilter(const IfnameFilter& filter, std::string_view name);

// The interface to listen on, IPv4 preferred: the first of `candidates` that `spec` (when not
// empty) accepts, else the default above. Throws chorus::CommError listing every candidate and
// why each was skipped when none fits.
NetInterface chooseInterface(const std::vector<NetInterface>& candidates, std::string_view spec,
                             bool peersOnOtherHosts);

}  // namespace chorus::transport
