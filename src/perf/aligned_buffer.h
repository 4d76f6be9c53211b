// Page-aligned, pre-touched byte buffers for benchmark data (perf layer).
#pragma once

#include <cstddef>
#include <memory>
#include <span>

namespace chorus::perf {

// Owns `bytes` bytes aligned to 4096, zero-filled (so every page is faulted in before timing).
// Movable, not copyable.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t bytes);

  std::byte* data() { return data_.get(); }
  const std::byte* data() const { return data_.get(); }
  std::size_t size() const { return size_; }

  // The first `count` elements viewed as T (count * sizeof(T) <= size()).
  template <class T>
  std::span<T> as(std::size_t count) {
    return {reinterpret_cast<T*>(data_.get()), count};
  }

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, Free> data_;
  std::size_t size_ = 0;
};

}  // namespace chorus::perf
