// Internal to src/algorithms/: each algorithm family file contributes its registry entries
// through one of these functions; registry.cpp collects them.
#pragma once

#include <vector>

#include "algorithms/registry.h"

namespace chorus::algorithms {

std::vector<AlgorithmInfo> ringAlgorithms();          // ring.cpp
std::vector<AlgorithmInfo> allPairsAlgorithms();      // allpairs.cpp
std::vector<AlgorithmInfo> hierarchicalAlgorithms();  // hierarchical.cpp
std::vector<AlgorithmInfo> allToAllAlgorithms();      // alltoall.cpp
std::vector<AlgorithmInfo> allToNextAlgorithms();     // alltonext.cpp
std::vector<AlgorithmInfo> treeAlgorithms();          // tree.cpp

}  // namespace chorus::algorithms
