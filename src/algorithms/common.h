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

// 0, 1, ..., count-1.
std::vector<int> allRanks(int count);

// The smallest power of two >= size (1 for size <= 1).
int powerOfTwoAtLeast(int size);
// The largest power of two <= size (size >= 1).
int powerOfTwoAtMost(int size);

}  // namespace chorus::algorithms
