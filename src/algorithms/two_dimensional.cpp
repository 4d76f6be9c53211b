// PLACEHOLDER: filled in by issue 4's work on this family.
#include <vector>

#include "algorithms/families.h"

namespace chorus::algorithms {

std::vector<AlgorithmInfo> twoDimensionalAlgorithms() {
  return {};
}

}  // namespace chorus::algorithms
