#include "selection/builtin_defaults.h"

#include <fmt/format.h>

#include <string>
#include <utility>

#include "algorithms/registry.h"
#include "selection/plan_cache.h"
#include "support/error.h"
#include "support/size.h"

namespace chorus::selection {
namespace {

[[noreturn]] void throwNoCustomDefault() {
  throw OptionError(
      "there is no built-in plan for a custom collective; give one with CHORUS_ALGO_DIR or run "
      "a plan file");
}

// The library algorithm for `request` (nranks >= 2) and why it was chosen.
std::pair<std::string, std::string> chooseAlgorithm(const runtime::PlanRequest& request) {
  switch (request.collective) {
    case ir::CollectiveKind::allreduce:
      if (request.nranks > kAllPairsMaxRanks)
        return {"allreduce.ring", fmt::format("> {} ranks", kAllPairsMaxRanks)};
      if (request.nranks <= kOneShotMaxRanks && request.bytes <= kAllReduceOneShotBytes)
        return {"allreduce.oneshot", fmt::format("<= {}", formatSize(kAllReduceOneShotBytes))};
      if (request.bytes < kAllReduceRingBytes)
        return {"allreduce.allpairs", fmt::format("< {}", formatSize(kAllReduceRingBytes))};
      return {"allreduce.ring", fmt::format(">= {}", formatSize(kAllReduceRingBytes))};
    case ir::CollectiveKind::allgather:
      return {"allgather.ring", "every size"};
    case ir::CollectiveKind::reducescatter:
      return {"reducescatter.ring", "every size"};
    case ir::CollectiveKind::alltoall:
      return {"alltoall.direct", "every size"};
    case ir::CollectiveKind::broadcast:
      return {"broadcast.binomial", fmt::format("root {}", request.root)};
    case ir::CollectiveKind::reduce:
      return {"reduce.binomial", fmt::format("root {}", request.root)};
    case ir::CollectiveKind::custom:
      break;
  }
  throwNoCustomDefault();
}

}  // namespace

runtime::Plan defaultPlan(const runtime::PlanRequest& request, int fifoSlots) {
  if (request.collective == ir::CollectiveKind::custom) throwNoCustomDefault();
  if (request.nranks == 1) {
    auto plan = singleRankPlan(request.collective, request.inPlace);
    return {plan, plan->name, "built-in default: 1 rank"};
  }
  const auto [name, reason] = chooseAlgorithm(request);
  algorithms::BuildRequest build;
  build.algorithm = name;
  build.ranks = request.nranks;
  if (request.collective == ir::CollectiveKind::broadcast ||
      request.collective == ir::CollectiveKind::reduce)
    build.params["root"] = request.root;
  return {compiledPlan(build, fifoSlots), name, fmt::format("built-in default: {}", reason)};
}

}  // namespace chorus::selection
