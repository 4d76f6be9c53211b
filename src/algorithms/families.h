// Internal to src/algorithms/: each algorithm family file contributes its registry entries
// through one of these functions; registry.cpp collects them.
#pragma once

#include <vector>

#include "algorithms/registry.h"

namespace chorus::algorithms {

std::vector<AlgorithmInfo> ringAlgorithms();                   // ring.cpp
std::vector<AlgorithmInfo> allPairsAlgorithms();               // allpairs.cpp
std::vector<AlgorithmInfo> hierarchicalAlgorithms();           // hierarchical.cpp
std::vector<AlgorithmInfo> allToAllAlgorithms();               // alltoall.cpp
std::vector<AlgorithmInfo> allToNextAlgorithms();              // alltonext.cpp
std::vector<AlgorithmInfo> treeAlgorithms();                   // tree.cpp
std::vector<AlgorithmInfo> halvingDoublingAlgorithms();        // halving_doubling.cpp
std::vector<AlgorithmInfo> directAlgorithms();                 // direct.cpp
std::vector<AlgorithmInfo> doubleBinaryTreeAlgorithms();       // double_binary_tree.cpp
std::vector<AlgorithmInfo> twoDimensionalAlgorithms();         // two_dimensional.cpp
std::vector<AlgorithmInfo> broadcastAlgorithms();              // broadcast.cpp
std::vector<AlgorithmInfo> bruckAlgorithms();                  // bruck.cpp
std::vector<AlgorithmInfo> hierarchicalAllToAllAlgorithms();   // alltoall_hierarchical.cpp
std::vector<AlgorithmInfo> hierarchicalAllGatherAlgorithms();  // allgather_hierarchical.cpp

}  // namespace chorus::algorithms
