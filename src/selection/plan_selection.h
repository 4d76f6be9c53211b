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

// Parses and checks the configuration now (OptionError naming the bad entry or file), so a
// communicator fails at creation rather than at its first call.
std::shared_ptr<runtime::PlanProvider> makePlanProvider(const SelectionConfig& config);

}  // namespace chorus::selection
