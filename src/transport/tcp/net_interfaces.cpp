#include "transport/tcp/net_interfaces.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include "chorus/error.h"

namespace chorus::transport {
namespace {

bool startsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool dockerLike(std::string_view name) {
  return startsWith(name, "docker") || startsWith(name, "virbr");
}

}  // namespace

std::vector<NetInterface> listInterfaces() {
  std::vector<NetInterface> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (const ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr || (it->ifa_flags & IFF_UP) == 0) continue;
    const int family = it->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(it->ifa_addr);
      ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    } else {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(it->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr)) continue;  // needs a scope id to connect
      ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
    }
    out.push_back({it->ifa_name, text, family == AF_INET6, (it->ifa_flags & IFF_LOOPBACK) != 0});
  }
  ::freeifaddrs(list);
  return out;
}

IfnameFilter parseIfnameFilter(std::string_view spec) {
  IfnameFilter filter;
  if (!spec.empty() && spec.front() == '^') {
    filter.exclude = true;
    spec.remove_prefix(1);
  }
  if (!spec.empty() && spec.front() == '=') {
    filter.exact = true;
    spec.remove_prefix(1);
  }
  while (!spec.empty()) {
    const auto comma = spec.find(',');
    const std::string_view name = spec.substr(0, comma);
    if (!name.empty()) filter.names.emplace_back(name);
    if (comma == std::string_view::npos) break;
    spec.remove_prefix(comma + 1);
  }
  return filter;
}

bool matchesFilter(const IfnameFilter& filter, std::string_view name) {
  bool listed = false;
  for (const std::string& entry : filter.names)
    listed = listed || (filter.exact ? name == entry : startsWith(name, entry));
  return filter.exclude ? !listed : listed;
}

NetInterface chooseInterface(const std::vector<NetInterface>& candidates, std::string_view spec,
                             bool peersOnOtherHosts) {
  const IfnameFilter filter = parseIfnameFilter(spec);
  std::vector<std::string> skipped;
  const NetInterface* chosen = nullptr;
  for (const NetInterface& c : candidates) {
    std::string why;
    if (!spec.empty() && !matchesFilter(filter, c.name))
      why = fmt::format("not selected by CHORUS_SOCKET_IFNAME={}", spec);
    else if (spec.empty() && peersOnOtherHosts && c.loopback)
      why = "loopback, and peers are on other hosts";
    else if (spec.empty() && peersOnOtherHosts && dockerLike(c.name))
      why = "docker-like bridge";
    else if (spec.empty() && !peersOnOtherHosts && !c.loopback)
      why = "every rank is on this host: loopback is used";
    if (!why.empty()) {
      skipped.push_back(fmt::format("{} {} ({})", c.name, c.address, why));
      continue;
    }
    if (chosen == nullptr || (chosen->ipv6 && !c.ipv6)) chosen = &c;
  }
  if (chosen != nullptr) return *chosen;
  std::string list;
  for (const std::string& s : skipped)
    list += "\n  " + s;
  throw CommError(fmt::format(
      "tcp transport: no usable network interface{}; candidates tried:{}\nset "
      "CHORUS_SOCKET_IFNAME to the interface that reaches the other hosts (e.g. =eth0, or "
      "^docker,lo to exclude)",
      spec.empty() ? "" : fmt::format(" matches CHORUS_SOCKET_IFNAME={}", spec),
      list.empty() ? "\n  (none: no interface is up with an address)" : list));
}

}  // namespace chorus::transport
