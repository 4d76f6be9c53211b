#include "selection/plan_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "chorus/lang.h"
#include "compiler/pipeline.h"
#include "support/error.h"

namespace chorus::selection {
namespace {

// One key's slot: `mutex` serializes its compilation, so a plan is built at most once.
struct CacheSlot {
  std::mutex mutex;
  std::shared_ptr<const ir::Algorithm> plan;
};

class PlanCache {
 public:
  std::shared_ptr<const ir::Algorithm> find(const std::string& key,
                                            const std::function<ir::Algorithm()>& build) {
    CacheSlot* slot = nullptr;
    {
      std::lock_guard lock(mutex_);
      std::unique_ptr<CacheSlot>& entry = slots_[key];
      if (!entry) entry = std::make_unique<CacheSlot>();
      slot = entry.get();
    }
    std::lock_guard lock(slot->mutex);
    if (!slot->plan) slot->plan = std::make_shared<const ir::Algorithm>(build());
    return slot->plan;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<CacheSlot>> slots_;  // slots never move or go away
};

PlanCache& cache() {
  static PlanCache instance;
  return instance;
}

std::string keyOf(const algorithms::BuildRequest& request) {
  std::string key =
      fmt::format("{}|r{}|n{}x{}|i{}|{}", request.algorithm, request.ranks, request.nodes,
                  request.gpusPerNode, request.instances, ir::protocolName(request.protocol));
  for (const auto& [name, value] : request.params)
    key += fmt::format("|{}={}", name, value);
  return key;
}

ir::Algorithm buildSingleRank(ir::CollectiveKind kind, bool inPlace) {
  ir::CollectiveOptions options;
  options.nranks = 1;
  options.inPlace = inPlace;
  const std::string name = fmt::format("{}.self", ir::collectiveName(kind));
  lang::Program program(name, ir::makeCollective(kind, options));
  if (!inPlace) program.chunk(0, lang::Buffer::input, 0).copy(0, lang::Buffer::output, 0);
  algorithms::requirePostcondition(program, name);
  ir::Algorithm algorithm = compiler::compileProgram(program.dag()).algorithm;
  algorithm.name = name;
  return algorithm;
}

}  // namespace

std::shared_ptr<const ir::Algorithm> compiledPlan(const algorithms::BuildRequest& request,
                                                  int fifoSlots) {
  // A schedule for the default depth is deadlock-free at any greater depth (monotone), so
  // deeper FIFOs share it; shallower ones get a schedule of their own.
  const int slots = std::clamp(fifoSlots, 1, compiler::kDefaultFifoSlots);
  return cache().find(fmt::format("{}|slots{}", keyOf(request), slots), [&] {
    compiler::CompileOptions options;
    options.fifoSlots = slots;
    try {
      return algorithms::compileAlgorithm(request, options).algorithm;
    } catch (const CompileError& error) {
      if (slots == compiler::kDefaultFifoSlots) throw;
      // The scheduler is a heuristic, so the first deeper FIFO that compiles is what to ask for.
      for (int deeper = slots + 1; deeper <= compiler::kDefaultFifoSlots; ++deeper) {
        options.fifoSlots = deeper;
        try {
          algorithms::compileAlgorithm(request, options);
        } catch (const CompileError&) {
          continue;
        }
        throw CompileError(fmt::format(
            "{} cannot be scheduled with {} FIFO slot(s) per connection, the depth this "
            "communicator runs at; the smallest depth that works for it is {}: set "
            "CHORUS_SLOTS={} or more (CommConfig.slots in code), or choose another algorithm. "
            "The compiler said: {}",
            request.algorithm, slots, deeper, deeper, error.what()));
      }
      throw;
    }
  });
}

std::shared_ptr<const ir::Algorithm> singleRankPlan(ir::CollectiveKind kind, bool inPlace) {
  CHORUS_INTERNAL_ASSERT(kind != ir::CollectiveKind::custom,
                         "single-rank plans exist for the built-in collectives only");
  const std::string key =
      fmt::format("{}.self|{}", ir::collectiveName(kind), inPlace ? "in-place" : "out-of-place");
  return cache().find(key, [&] { return buildSingleRank(kind, inPlace); });
}

}  // namespace chorus::selection
