// The FIFO depth a plan needs (verify stage): the smallest number of slots per connection at
// which the deadlock check finds nothing, for messages that tell the user what to set.
#pragma once

#include <optional>

#include "ir/algorithm.h"

namespace chorus::verify {

// The smallest depth at which `algorithm` cannot deadlock; nullopt when it deadlocks at every
// depth (a cycle of waits that no FIFO breaks) or is malformed. Deadlock freedom is monotone in
// the depth, and a depth of the most messages one connection carries per tile can no longer
// block within a tile (docs/compiler.md "Deadlock freedom at the runtime's FIFO depth"), so this
// is a binary search of deadlock checks up to that depth. Never throws on a bad algorithm.
std::optional<int> minimumFifoSlots(const ir::Algorithm& algorithm);

}  // namespace chorus::verify
