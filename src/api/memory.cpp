// chorus::memAlloc / memFree (chorus.h): registered memory from the shm transport's registry.
#include "chorus/chorus.h"
#include "transport/shm/registered_memory.h"

namespace chorus {

void* memAlloc(std::size_t bytes) {
  return transport::allocateRegistered(bytes);
}

void memFree(void* ptr) {
  transport::freeRegistered(ptr);
}

}  // namespace chorus
