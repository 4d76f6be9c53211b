// Rail-aware ring layouts for N nodes x G GPUs: one ring per channel, each crossing node
// boundaries through another GPU and so through another NIC (NCCL's per-channel rings).
#pragma once

#include <vector>

#include "algorithms/registry.h"

namespace chorus::algorithms {

// True when a ring algorithm lays out one ring per channel (rail rings): the request gave a
// node shape with several nodes and channels > 1. Otherwise the one logical ring of the flat
// layout runs, unchanged.
bool usesRailRings(const BuildArgs& args);

// Channel c's ring over rank = node*G + gpu: on every node the GPUs in the rotation
// c, c+1, ..., c+G-1 (mod G), nodes in order. The ring enters each node at local GPU c mod G
// and leaves it from GPU (c-1) mod G, so for c < G every channel sends across nodes from a
// distinct GPU (NIC). Channel 0 is the flat ring 0, 1, ..., N*G-1.
std::vector<int> railRing(int channel, int nodes, int gpusPerNode);

}  // namespace chorus::algorithms
