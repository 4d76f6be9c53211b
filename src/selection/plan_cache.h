// The process-wide cache of compiled plans (selection layer): library algorithms compiled once
// per (name, shape, parameters, instances, protocol), and the single-rank plans.
#pragma once

#include <memory>

#include "algorithms/registry.h"
#include "compiler/pipeline.h"
#include "ir/algorithm.h"

namespace chorus::selection {

// The compiled (and verified) algorithm for `request`, scheduled and verified for FIFOs of
// `fifoSlots` slots per connection (depths above compiler::kDefaultFifoSlots share the default
// schedule, which is deadlock-free at any greater depth). The first caller for a key compiles it
// outside the cache's lock while later callers of the same key wait for it; other keys are not
// blocked. A failed compile (OptionError, CompileError) is rethrown and not cached; one that
// fails only for a shallow FIFO names the smallest depth that works.
// Thread-safe; plans live for the rest of the process.
std::shared_ptr<const ir::Algorithm> compiledPlan(const algorithms::BuildRequest& request,
                                                  int fifoSlots = compiler::kDefaultFifoSlots);

// The plan of `kind` on one rank: a local copy of the input to the output when out of place,
// nothing at all when in place. Named "<collective>.self". Cached like compiledPlan.
std::shared_ptr<const ir::Algorithm> singleRankPlan(ir::CollectiveKind kind, bool inPlace);

}  // namespace chorus::selection
