// Integer logarithms the algorithm tests use to state expected round counts.
#pragma once

namespace chorus::testing_support {

// ⌈lg value⌉ for value >= 1 (0 for 1).
inline int ceilLog2(int value) {
  int bits = 0;
  while ((1 << bits) < value)
    ++bits;
  return bits;
}

}  // namespace chorus::testing_support
