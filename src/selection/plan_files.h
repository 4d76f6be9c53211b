// Plan files for selection (selection layer): reading and verifying MSCCL XML / chorus JSON /
// text plans (CHORUS_ALGO file entries and CHORUS_ALGO_DIR), and matching a plan to a request.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/pipeline.h"
#include "ir/algorithm.h"
#include "runtime/plan_provider.h"

namespace chorus::selection {

struct FilePlan {
  std::string file;  // the path as read
  std::shared_ptr<const ir::Algorithm> algorithm;
  // "foo.xml [allreduce_ring]": what Plan::name reports for it.
  std::string displayName() const;
};

// Every algorithm in `path`, each verified (postcondition, deadlock with `fifoSlots` slots per
// connection, races). Throws OptionError naming the file when it does not exist, holds no
// algorithm, does not parse (with the parser's message) or fails verification (with the
// findings; a plan that deadlocks only at this depth is named with the depth it needs).
std::vector<FilePlan> readPlanFile(const std::string& path,
                                   int fifoSlots = compiler::kDefaultFifoSlots);

// readPlanFile on every *.xml, *.json and *.txt regular file of `directory`, in name order.
// Throws OptionError when the directory does not exist or a file is bad (as readPlanFile).
std::vector<FilePlan> readPlanDirectory(const std::string& directory,
                                        int fifoSlots = compiler::kDefaultFifoSlots);

struct MatchOptions {
  bool checkInPlace = true;  // false: a plan of either in-place flag fits
  bool checkBytes = true;    // false: the plan's own [minBytes, maxBytes) is ignored
};

// Why `algorithm` cannot serve `request` ("8 ranks", "in-place", "root 2", "sizes 0 B-64 KiB",
// "plan for broadcast"), or "" when it can.
std::string planMismatch(const ir::Algorithm& algorithm, const runtime::PlanRequest& request,
                         const MatchOptions& options = {});

}  // namespace chorus::selection
