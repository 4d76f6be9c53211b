#include "transport/ucx/ucx_devices.h"

#include <uct/api/uct.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "support/env.h"

namespace chorus::transport {
namespace {

// UCX 1.13's UCX_TLS aliases of its RDMA transports (ucp_context.c, ucp_tl_aliases); the
// auxiliary ud transports an alias adds for wire-up do not count.
struct Alias {
  std::string_view name;
  std::array<std::string_view, 5> transports;
};
constexpr std::array<Alias, 9> kAliases{{
    {"ib", {"rc_verbs", "ud_verbs", "rc_mlx5", "ud_mlx5", "dc_mlx5"}},
    {"ud_v", {"ud_verbs"}},
    {"ud_x", {"ud_mlx5"}},
    {"ud", {"ud_mlx5", "ud_verbs"}},
    {"rc_v", {"rc_verbs"}},
    {"rc_x", {"rc_mlx5"}},
    {"rc", {"rc_mlx5", "rc_verbs"}},
    {"dc", {"dc_mlx5"}},
    {"dc_x", {"dc_mlx5"}},
}};

// Whether the UCX_TLS entry `entry` names `transport`, itself or through an alias.
bool names(std::string_view entry, std::string_view transport) {
  if (entry == transport || entry == "all") return true;
  for (const Alias& alias : kAliases)
    if (alias.name == entry)
      return std::find(alias.transports.begin(), alias.transports.end(), transport) !=
             alias.transports.end();
  return false;
}

// The network transports other than tcp on memory domain `md`.
void rdmaTransportsOf(uct_md_h md, std::string_view tls, std::vector<UcxDevice>* out) {
  uct_tl_resource_desc_t* resources = nullptr;
  unsigned count = 0;
  if (uct_md_query_tl_resources(md, &resources, &count) != UCS_OK) return;
  for (unsigned i = 0; i < count; ++i) {
    const uct_tl_resource_desc_t& r = resources[i];
    if (r.dev_type != UCT_DEVICE_TYPE_NET || std::strcmp(r.tl_name, "tcp") == 0) continue;
    if (ucxTlsAllows(tls, r.tl_name)) out->push_back({r.tl_name, r.dev_name});
  }
  uct_release_tl_resource_list(resources);
}

}  // namespace

bool ucxTlsAllows(std::string_view tls, std::string_view transport) {
  if (tls.empty()) return true;
  const bool leaveOut = tls.front() == '^';
  if (leaveOut) tls.remove_prefix(1);
  bool named = false;
  while (!tls.empty() && !named) {
    const std::size_t comma = tls.find(',');
    named = names(tls.substr(0, comma), transport);
    tls = comma == std::string_view::npos ? std::string_view() : tls.substr(comma + 1);
  }
  return named != leaveOut;
}

std::vector<UcxDevice> ucxRdmaDevices(std::string_view tls) {
  std::vector<UcxDevice> found;
  uct_component_h* components = nullptr;
  unsigned componentCount = 0;
  if (uct_query_components(&components, &componentCount) != UCS_OK) return found;
  for (unsigned c = 0; c < componentCount; ++c) {
    uct_component_attr_t attr{};
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    if (uct_component_query(components[c], &attr) != UCS_OK) continue;
    std::vector<uct_md_resource_desc_t> mds(attr.md_resource_count);
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = mds.data();
    if (uct_component_query(components[c], &attr) != UCS_OK) continue;
    for (const uct_md_resource_desc_t& resource : mds) {
      uct_md_config_t* config = nullptr;
      if (uct_md_config_read(components[c], nullptr, nullptr, &config) != UCS_OK) continue;
      uct_md_h md = nullptr;
      const ucs_status_t opened = uct_md_open(components[c], resource.md_name, config, &md);
      uct_config_release(config);
      if (opened != UCS_OK) continue;
      rdmaTransportsOf(md, tls, &found);
      uct_md_close(md);
    }
  }
  uct_release_component_list(components);
  return found;
}

std::vector<UcxDevice> ucxRdmaDevicesHere() {
  return ucxRdmaDevices(envString("UCX_TLS").value_or(""));
}

}  // namespace chorus::transport
