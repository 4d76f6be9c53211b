// Internal to src/algorithms/: parameters and small helpers several algorithm families share.
#pragma once

#include <string>
#include <vector>

#include "algorithms/registry.h"

namespace chorus::algorithms {

// The `root` parameter (0..255 declared; checked against the rank count by rootOf).
ParamInfo rootParam();
// The root parameter's value; OptionError naming the valid range when root >= ranks.
int rootOf(const std::string& name, const BuildArgs& args);

// The `channels` parameter of the ring algorithms (1..32, default 1; see ring.cpp).
ParamInfo channelsParam();
// The `channels` parameter of the node-shaped algorithms that run k instances (1..16, default
// 1), with the algorithm's own description of what an instance is.
ParamInfo instanceChannelsParam(std::string description);
// The `forward` parameter of MVAPICH all-to-all's hierarchical algorithms: 0 aggregated, 1 chunk
// (the paper's form, the default), with the algorithm's own description.
ParamInfo forwardParam(std::string description);

// Chunk parts of one node under k instances: the node's G GPUs hold k parts each, numbered
// GPU-major (GPU i's part p is position i·k + p of the node's G·k), and instance c owns the G
// positions [c·G, (c+1)·G). The parts [first, first + count) of GPU `gpu` that instance
// `instance` owns; count is 0 when it owns none.
struct PartRange {
  int first = 0;
  int count = 0;
};
PartRange partsOfInstance(int gpu, int instance, int gpus, int parts);
// The GPU holding the first position of instance c's share: floor(c·G / k). Instances
// 0..k-1 get k distinct GPUs when k <= G and every GPU k/G times when G divides k.
int instanceLeader(int instance, int gpus, int parts);

// 0, 1, ..., count-1.
std::vector<int> allRanks(int count);

// The smallest power of two >= size (1 for size <= 1).
int powerOfTwoAtLeast(int size);
// The largest power of two <= size (size >= 1).
int powerOfTwoAtMost(int size);

}  // namespace chorus::algorithms
