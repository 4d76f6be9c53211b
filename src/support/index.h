// A vector index from an int rank, level or position the caller has already range-checked.
#pragma once

#include <cstddef>

namespace chorus {

inline std::size_t ix(int i) {
  return static_cast<std::size_t>(i);
}

}  // namespace chorus
