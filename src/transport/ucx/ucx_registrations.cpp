#include "transport/ucx/ucx_registrations.h"

#include <algorithm>

#include "transport/shm/registered_memory.h"

namespace chorus::transport {

UcxRegistrations::~UcxRegistrations() {
  for (Entry& entry : entries_)
    ucp_mem_unmap(context_, entry.memh);
}

ucp_mem_h UcxRegistrations::acquire(const RemoteRegion& region, std::uint64_t* use) {
  *use = 0;
  if (region.pieces == 0) return nullptr;
  const std::uint64_t span = (region.pieces - 1) * region.stride + region.pieceBytes;
  const std::optional<RegisteredRange> range = findRegistered(region.address, span);
  if (!range) return nullptr;
  auto entry = std::find_if(entries_.begin(), entries_.end(),
                            [&](const Entry& e) { return e.id == range->id; });
  if (entry == entries_.end()) {
    if (entries_.size() >= kMaxUcxRegistrations && !evictOne()) return nullptr;
    ucp_mem_map_params_t params{};
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    params.address = reinterpret_cast<void*>(range->base);
    params.length = range->bytes;
    ucp_mem_h memh = nullptr;
    if (ucp_mem_map(context_, &params, &memh) != UCS_OK) return nullptr;
    entries_.push_back({range->id, memh, 0, 0});
    entry = entries_.end() - 1;
  }
  entry->lastUse = ++clock_;
  ++entry->inUse;
  *use = entry->id;
  return entry->memh;
}

void UcxRegistrations::release(std::uint64_t use) {
  if (use == 0) return;
  for (Entry& entry : entries_)
    if (entry.id == use && entry.inUse > 0) {
      --entry.inUse;
      return;
    }
}

bool UcxRegistrations::evictOne() {
  auto oldest = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->inUse == 0 && (oldest == entries_.end() || it->lastUse < oldest->lastUse)) oldest = it;
  if (oldest == entries_.end()) return false;
  ucp_mem_unmap(context_, oldest->memh);
  entries_.erase(oldest);
  return true;
}

}  // namespace chorus::transport
