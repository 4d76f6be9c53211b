// Plan selection (selection layer): a runtime::PlanProvider over, in order of precedence,
// CHORUS_ALGO overrides, plan files from CHORUS_ALGO_DIR, the tuning table for the rank count
// and transport (CHORUS_TUNING_FILE, then the table shipped with chorus; tuning_table.h), and
// the compiled algorithm library's built-in default for every collective at every rank count
// and size. Compiled plans are
// cached process-wide. With CHORUS_DEBUG=INFO each distinct choice is logged once with the
// reasons other candidates were skipped.
#pragma once

#include <memory>
#include <string>

#include "compiler/pipeline.h"
#include "runtime/plan_provider.h"
#include "transport/registry.h"

namespace chorus::selection {

struct SelectionConfig {
  int nranks = 0;
  // CHORUS_ALGO syntax, e.g. "allreduce=allpairs:0-64K,ring:64K-max;alltoall=two-step".
  // Empty: no overrides.
  std::string algo;
  // Directory of MSCCL XML / chorus JSON / text plans; empty: none.
  std::string algoDir;
  // A `chorus tune` file consulted before the shipped table; empty: the shipped table only;
  // "off": no tuning tables at all (built-in defaults).
  std::string tuningFile;
  // Whose tuning tables apply (transport::TuningTables, e.g. "shm"); by default those of the
  // transport ranks that are threads of one process use.
  std::string transport =
      transport::defaultTransport(transport::TransportReach::oneProcess).tuning.withinHost;
  // Slots per connection FIFO of the communicator (CHORUS_SLOTS): every plan it may select is
  // verified deadlock-free at this depth, and library plans are scheduled for it.
  int fifoSlots = compiler::kDefaultFifoSlots;
};

// nranks plus CHORUS_ALGO, CHORUS_ALGO_DIR and CHORUS_TUNING_FILE from the process
// environment (the default transport's tables).
SelectionConfig selectionConfigFromEnvironment(int nranks);

// Parses and checks the configuration now (OptionError naming the bad entry or file), so a
// communicator fails at creation rather than at its first call: CHORUS_ALGO's library entries
// are compiled (root 0 for broadcast/reduce) and its files and CHORUS_ALGO_DIR are read and
// verified. Built-in defaults compile lazily, on the first request that needs them, into the
// process-wide cache. The tuning tables for this rank count are read and their entries compiled
// at creation too. The provider is a selection::PlanSelector (plan_selector.h).
std::shared_ptr<runtime::PlanProvider> makePlanProvider(const SelectionConfig& config);

}  // namespace chorus::selection
