#include "perf/aligned_buffer.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace chorus::perf {

namespace {
constexpr std::size_t kPageBytes = 4096;
}

AlignedBuffer::AlignedBuffer(std::size_t bytes) : size_(bytes) {
  const std::size_t rounded = (bytes + kPageBytes - 1) / kPageBytes * kPageBytes;
  void* p = std::aligned_alloc(kPageBytes, rounded == 0 ? kPageBytes : rounded);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  data_.reset(static_cast<std::byte*>(p));
}

void AlignedBuffer::Free::operator()(std::byte* p) const {
  std::free(p);
}

}  // namespace chorus::perf
