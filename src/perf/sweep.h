// The sizes of a benchmark sweep, nccl-tests style: -b MIN -e MAX -f FACTOR (perf layer).
#pragma once

#include <cstdint>
#include <vector>

namespace chorus::perf {

// MIN, MIN*FACTOR, MIN*FACTOR^2, ... up to and including MAX. Throws OptionError when MIN is 0,
// MIN > MAX, or FACTOR < 2 while MIN < MAX (the sweep would never end).
std::vector<std::uint64_t> sizeSweep(std::uint64_t minBytes, std::uint64_t maxBytes,
                                     std::uint64_t factor);

}  // namespace chorus::perf
