// Registered memory (chorus::memAlloc, transport/shm/registered_memory.h) registered with UCP
// (ucp_mem_map), so that a rendezvous on an RDMA device needs no registration of its own: the
// ucx transport passes the handle with each message from or into such memory
// (UCP_OP_ATTR_FIELD_MEMH). One handle per allocation, keyed by its id (ids are never reused,
// so memory freed and allocated again at the same address gets a new handle), mapped at first
// use. At most kMaxUcxRegistrations stay mapped: the least recently used one not in use by a
// message in flight is unmapped to make room; if all are in use the message goes without one.
// Not thread-safe: the ucx transport calls it under its worker lock.
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "transport/fifo.h"

namespace chorus::transport {

inline constexpr std::size_t kMaxUcxRegistrations = 64;

class UcxRegistrations {
 public:
  explicit UcxRegistrations(ucp_context_h context) : context_(context) {}
  UcxRegistrations(const UcxRegistrations&) = delete;
  UcxRegistrations& operator=(const UcxRegistrations&) = delete;
  ~UcxRegistrations();  // unmaps every handle

  // The handle of the registered allocation that holds all of `region`, mapped now if it was
  // not, or nullptr (not registered memory, every slot in use, or UCP refused to map it). A
  // handle returned is in use until release(*use); *use is 0 when none was returned.
  ucp_mem_h acquire(const RemoteRegion& region, std::uint64_t* use);
  // The message that acquired `use` is done (0 is ignored).
  void release(std::uint64_t use);
  // Handles mapped now.
  std::size_t mapped() const { return entries_.size(); }

 private:
  struct Entry {
    std::uint64_t id = 0;  // the allocation's (RegisteredRange::id)
    ucp_mem_h memh = nullptr;
    std::uint64_t lastUse = 0;
    int inUse = 0;
  };
  // Unmaps the least recently used entry not in use; false if every entry is in use.
  bool evictOne();

  ucp_context_h context_;
  std::vector<Entry> entries_;
  std::uint64_t clock_ = 0;
};

}  // namespace chorus::transport
