// Topology-aware ring order for the rings P² lowering builds (p2_lower.h): the order NCCL's
// ring search would pick, along the fastest direct links (NVLink) where such a ring exists.
// Part of the third stage of `chorus synth reduction`; pure functions, plain data.
#pragma once

#include <span>
#include <vector>

#include "synth/link_matrix.h"

namespace chorus::synth {

// The members of one group in ring order. `nodeLinks` is the link matrix of ONE node
// (linkMatrixFromTopology of a one-node topology); member m is device m % nodeLinks.size of
// node m / nodeLinks.size. An empty matrix keeps `members` as given. The first member stays
// first; the result is a permutation of `members`.
//
// Algorithm (NCCL's ring search, src/graph/search.cc, reduced to the link matrix):
//  1. Split the members by node, nodes in order of first appearance; the ring visits each
//     node's members contiguously and crosses the network once per node, as NCCL's rings do.
//  2. Inside a node, for each distinct weight w of the node's members' pairs, largest first:
//     look for a Hamiltonian cycle through the node's members that uses only pairs of weight
//     >= w (depth-first from the node's first member, neighbours in the given order, at most
//     kRingSearchBudget expansions; skipped when some member has fewer than two such pairs).
//     The first cycle found, read from the node's first member, is the node's order.
//  3. With every weight allowed a cycle always exists and the search returns the given order,
//     so a uniform topology (every pair alike) keeps rank order.
std::vector<int> orderRing(const LinkMatrix& nodeLinks, std::span<const int> members);

// Expansions of the depth-first search per weight threshold before it gives up on that one.
inline constexpr int kRingSearchBudget = 200000;

}  // namespace chorus::synth
