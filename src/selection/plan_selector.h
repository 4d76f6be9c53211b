// PlanSelector (selection layer): the PlanProvider behind makePlanProvider. Chooses, in order,
// a CHORUS_ALGO entry whose range covers the size, a CHORUS_ALGO_DIR plan, the tuning table's
// entry (CHORUS_TUNING_FILE, then the shipped table), the built-in default; remembers why other
// candidates were passed over and logs each distinct choice once.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "selection/algo_overrides.h"
#include "selection/plan_files.h"
#include "selection/plan_selection.h"
#include "selection/tuning_table.h"

namespace chorus::selection {

// A choice and the candidates passed over, each "WHERE: why" (e.g. "CHORUS_ALGO_DIR/foo.xml
// [ring8]: 8 ranks").
struct Selection {
  runtime::Plan plan;
  std::vector<std::string> skipped;
};

// The CHORUS_DEBUG=INFO line for a choice: "allreduce 4 ranks 1 MiB out-of-place:
// allreduce.ring (built-in default: >= 256 KiB); skipped ...".
std::string describeSelection(const runtime::PlanRequest& request, const Selection& selection);

class PlanSelector : public runtime::PlanProvider {
 public:
  // Throws OptionError for a bad configuration (see makePlanProvider). `ranksPerNode` shapes
  // the node-shaped library algorithms named in CHORUS_ALGO (alltoall.two-step,
  // allreduce.hierarchical): nodes = nranks / ranksPerNode; 0 puts all ranks on one node.
  explicit PlanSelector(const SelectionConfig& config, int ranksPerNode = 0);

  // Thread-safe. Throws OptionError when the request does not fit this provider (another rank
  // count, a root outside the ranks, a custom collective with no plan).
  runtime::Plan select(const runtime::PlanRequest& request) override;
  // select() plus the skipped candidates (what the log line lists).
  Selection choose(const runtime::PlanRequest& request);

 private:
  struct Override {
    OverrideEntry entry;
    algorithms::BuildRequest build;  // library entries: shape set, root left to the request
    bool takesRoot = false;          // the library algorithm has a "root" parameter
    std::vector<FilePlan> plans;     // file entries: this rank count's plans of the file
  };

  void addOverride(ir::CollectiveKind kind, const OverrideEntry& entry);
  // Picks this communicator's table per collective (the user's file first) and compiles its
  // entries; OptionError naming the file and entry when one cannot run here.
  void addTuningTables(const SelectionConfig& config);
  void checkRequest(const runtime::PlanRequest& request) const;
  // The override covering the request, or false (reasons appended to `skipped`).
  bool chooseOverride(const runtime::PlanRequest& request, bool explain, Selection& out) const;
  bool chooseFromDirectory(const runtime::PlanRequest& request, bool explain, Selection& out) const;
  bool chooseTuned(const runtime::PlanRequest& request, bool explain, Selection& out) const;
  Selection chooseWith(const runtime::PlanRequest& request, bool explain) const;
  void logOnce(const runtime::PlanRequest& request, const Selection& selection);

  int nranks_ = 0;
  int ranksPerNode_ = 0;
  int fifoSlots_ = 0;  // SelectionConfig::fifoSlots
  std::map<ir::CollectiveKind, std::vector<Override>> overrides_;
  std::vector<FilePlan> directoryPlans_;
  std::shared_ptr<const TuningFile> userTuning_;  // CHORUS_TUNING_FILE, when set
  struct TunedTable {
    const TuningTable* table = nullptr;  // in *userTuning_ or builtinTuning()
    std::string source;                  // the file, for Plan::source
  };
  std::map<ir::CollectiveKind, TunedTable> tuned_;
  std::mutex logMutex_;
  std::set<std::string> logged_;  // (collective, ranks, in-place, plan) already logged
};

}  // namespace chorus::selection
