// Plan selection (selection layer): a runtime::PlanProvider over, in order of precedence,
// CHORUS_ALGO overrides, plan files from CHORUS_ALGO_DIR, and the compiled algorithm library's
// built-in default for every collective at every rank count and size. Compiled plans are
// cached process-wide. With CHORUS_DEBUG=INFO each distinct choice is logged once with the
// reasons other candidates were skipped.
#pragma once

#include <memory>
#include <string>

#include "runtime/plan_provider.h"

namespace chorus::selection {

struct SelectionConfig {
  int nranks = 0;
  // CHORUS_ALGO syntax, e.g. "allreduce=allpairs:0-64K,ring:64K-max;alltoall=two-step".
  // Empty: no overrides.
  std::string algo;
  // Directory of MSCCL XML / chorus JSON / text plans; empty: none.
  std::string algoDir;
};

// nranks plus CHORUS_ALGO and CHORUS_ALGO_DIR from the process environment.
SelectionConfig selectionConfigFromEnvironment(int nranks);

// Parses and checks the configuration now (OptionError naming the bad entry or file), so a
// communicator fails at creation rather than at its first call: CHORUS_ALGO's library entries
// are compiled (root 0 for broadcast/reduce) and its files and CHORUS_ALGO_DIR are read and
// verified. Built-in defaults compile lazily, on the first request that needs them, into the
// process-wide cache. The provider is a selection::PlanSelector (plan_selector.h).
std::shared_ptr<runtime::PlanProvider> makePlanProvider(const SelectionConfig& config);

}  // namespace chorus::selection
