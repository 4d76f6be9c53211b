// Registered memory's UCP handles (transport/ucx/ucx_registrations.h) on a real UCP context:
// only registered memory gets one, one per allocation, reused; at most kMaxUcxRegistrations
// stay mapped, never one in use; a freed allocation's successor gets its own.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <vector>

#include "transport/shm/registered_memory.h"
#include "transport/ucx/ucx_registrations.h"

namespace chorus::transport::ucx_registrations_test {

class UcpContext {
 public:
  UcpContext() {
    ::setenv("UCX_TLS", "tcp,sm,self", 0);
    ucp_config_t* config = nullptr;
    EXPECT_EQ(ucp_config_read(nullptr, nullptr, &config), UCS_OK);
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_AM;
    EXPECT_EQ(ucp_init(&params, config, &context), UCS_OK);
    ucp_config_release(config);
  }
  ~UcpContext() { ucp_cleanup(context); }
  ucp_context_h context = nullptr;
};

RemoteRegion regionOf(const void* address, std::size_t bytes) {
  return {reinterpret_cast<std::uint64_t>(address), bytes, bytes, 1};
}

TEST(UcxRegistrations, OnlyRegisteredMemoryGetsAHandleAndKeepsIt) {
  UcpContext ucp;
  {
    UcxRegistrations registrations(ucp.context);
    std::vector<std::uint8_t> heap(4096);
    std::uint64_t use = 99;
    EXPECT_EQ(registrations.acquire(regionOf(heap.data(), heap.size()), &use), nullptr);
    EXPECT_EQ(use, 0u);
    auto* memory = static_cast<std::uint8_t*>(allocateRegistered(1 << 20));
    std::uint64_t first = 0, second = 0;
    const ucp_mem_h a = registrations.acquire(regionOf(memory + 4096, 8192), &first);
    const ucp_mem_h b =
        registrations.acquire({reinterpret_cast<std::uint64_t>(memory), 100, 4096, 200}, &second);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a, b) << "one handle per allocation";
    EXPECT_NE(first, 0u);
    EXPECT_EQ(registrations.mapped(), 1u);
    std::uint64_t beyond = 0;
    EXPECT_EQ(registrations.acquire(regionOf(memory + (1 << 20) - 10, 20), &beyond), nullptr)
        << "a region reaching past the allocation is not covered";
    registrations.release(first);
    registrations.release(second);
    freeRegistered(memory);
  }
}

TEST(UcxRegistrations, AtMostTheLimitStayMappedAndHandlesInUseStay) {
  UcpContext ucp;
  UcxRegistrations registrations(ucp.context);
  std::vector<void*> memory;
  std::vector<std::uint64_t> uses;
  for (std::size_t i = 0; i < kMaxUcxRegistrations; ++i) {
    memory.push_back(allocateRegistered(4096));
    std::uint64_t use = 0;
    ASSERT_NE(registrations.acquire(regionOf(memory.back(), 64), &use), nullptr);
    uses.push_back(use);
  }
  EXPECT_EQ(registrations.mapped(), kMaxUcxRegistrations);
  void* extra = allocateRegistered(4096);
  std::uint64_t use = 0;
  EXPECT_EQ(registrations.acquire(regionOf(extra, 64), &use), nullptr)
      << "every handle is in use: the message goes without one";
  registrations.release(uses[3]);
  EXPECT_NE(registrations.acquire(regionOf(extra, 64), &use), nullptr)
      << "the one released made room";
  EXPECT_EQ(registrations.mapped(), kMaxUcxRegistrations);
  registrations.release(use);
  for (std::size_t i = 0; i < uses.size(); ++i)
    if (i != 3) registrations.release(uses[i]);
  for (void* m : memory)
    freeRegistered(m);
  freeRegistered(extra);
}

}  // namespace chorus::transport::ucx_registrations_test
