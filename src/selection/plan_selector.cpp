#include "selection/plan_selector.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "selection/builtin_defaults.h"
#include "selection/plan_cache.h"
#include "support/error.h"
#include "support/log.h"
#include "support/size.h"

namespace chorus::selection {
namespace {

constexpr int kMaxRanks = 256;
constexpr std::size_t kListedSkips = 8;

bool isRooted(ir::CollectiveKind kind) {
  return kind == ir::CollectiveKind::broadcast || kind == ir::CollectiveKind::reduce;
}

}  // namespace

std::string describeSelection(const runtime::PlanRequest& request, const Selection& selection) {
  std::string line = fmt::format(
      "{} {} rank{}{} {} {}: {} ({})", ir::collectiveName(request.collective), request.nranks,
      request.nranks == 1 ? "" : "s",
      isRooted(request.collective) ? fmt::format(" root {}", request.root) : std::string(),
      formatSize(request.bytes), request.inPlace ? "in-place" : "out-of-place", selection.plan.name,
      selection.plan.source);
  for (std::size_t i = 0; i < selection.skipped.size() && i < kListedSkips; ++i)
    line += fmt::format("{}{}", i == 0 ? "; skipped " : "; ", selection.skipped[i]);
  if (selection.skipped.size() > kListedSkips)
    line += fmt::format("; and {} more skipped", selection.skipped.size() - kListedSkips);
  return line;
}

PlanSelector::PlanSelector(const SelectionConfig& config, int ranksPerNode)
    : nranks_(config.nranks), ranksPerNode_(ranksPerNode), fifoSlots_(config.fifoSlots) {
  if (nranks_ < 1 || nranks_ > kMaxRanks) {
    throw OptionError(
        fmt::format("plan selection: {} ranks is out of range; use 1..{}", nranks_, kMaxRanks));
  }
  if (ranksPerNode_ < 0) {
    throw OptionError(
        fmt::format("plan selection: ranks per node {} must be >= 0 (0: one node)", ranksPerNode_));
  }
  for (const auto& [kind, entries] : parseAlgoOverrides(config.algo)) {
    for (const OverrideEntry& entry : entries)
      addOverride(kind, entry);
  }
  if (fifoSlots_ < 1) {
    throw OptionError(
        fmt::format("plan selection: {} FIFO slots per connection; use at least 1", fifoSlots_));
  }
  if (!config.algoDir.empty()) directoryPlans_ = readPlanDirectory(config.algoDir, fifoSlots_);
  addTuningTables(config);
}

void PlanSelector::addTuningTables(const SelectionConfig& config) {
  if (config.tuningFile == "off") return;
  if (!config.tuningFile.empty())
    userTuning_ = std::make_shared<const TuningFile>(readTuningFile(config.tuningFile));
  for (ir::CollectiveKind kind : {ir::CollectiveKind::allreduce, ir::CollectiveKind::allgather,
                                  ir::CollectiveKind::reducescatter, ir::CollectiveKind::alltoall,
                                  ir::CollectiveKind::broadcast, ir::CollectiveKind::reduce}) {
    TunedTable tuned;
    for (const TuningFile* file : {userTuning_.get(), &builtinTuning()}) {
      if (file == nullptr) continue;
      tuned.table = file->find(kind, nranks_, config.transport);
      tuned.source = file->source;
      if (tuned.table != nullptr) break;
    }
    if (tuned.table == nullptr) continue;
    for (const TuningEntry& entry : tuned.table->entries) {
      try {
        compiledPlan(entry.choice.probeRequest(nranks_, ranksPerNode_), fifoSlots_);
      } catch (const UserError& error) {
        throw OptionError(fmt::format(
            "tuning file {}: the {} entry {} ({}) cannot run on this communicator ({} ranks): {}; "
            "rerun chorus tune for this machine",
            tuned.source, ir::collectiveName(kind), entry.choice.describe(), entry.range.describe(),
            nranks_, error.what()));
      }
    }
    tuned_[kind] = tuned;
  }
}

void PlanSelector::addOverride(ir::CollectiveKind kind, const OverrideEntry& entry) {
  Override slot;
  slot.entry = entry;
  const std::string where = fmt::format("CHORUS_ALGO entry '{}'", entry.text);
  if (!entry.file.empty()) {
    std::vector<FilePlan> plans;
    try {
      plans = readPlanFile(entry.file, fifoSlots_);
    } catch (const OptionError& error) {
      throw OptionError(fmt::format("{}: {}", where, error.what()));
    }
    std::vector<int> rankCounts;
    for (FilePlan& plan : plans) {
      if (plan.algorithm->collective != kind) {
        const std::string_view theirs = ir::collectiveName(plan.algorithm->collective);
        throw OptionError(fmt::format(
            "{}: {} holds '{}', a plan for {}, not {}; list it under '{}=' instead", where,
            entry.file, plan.algorithm->name, theirs, ir::collectiveName(kind), theirs));
      }
      rankCounts.push_back(plan.algorithm->nranks);
      if (plan.algorithm->nranks == nranks_) slot.plans.push_back(std::move(plan));
    }
    if (slot.plans.empty()) {
      throw OptionError(fmt::format(
          "{}: {} has plans for {} ranks only, but this communicator has {}; use a plan "
          "compiled for {} ranks or drop the entry",
          where, entry.file, fmt::join(rankCounts, ", "), nranks_, nranks_));
    }
  } else {
    const algorithms::AlgorithmInfo& info = algorithms::findAlgorithm(entry.choice.algorithm);
    slot.takesRoot = takesRoot(info);
    try {
      slot.build = entry.choice.buildRequest(nranks_, ranksPerNode_);
    } catch (const OptionError& error) {
      throw OptionError(fmt::format("{}: {}", where, error.what()));
    }
    try {
      compiledPlan(entry.choice.probeRequest(nranks_, ranksPerNode_), fifoSlots_);
    } catch (const UserError& error) {
      throw OptionError(fmt::format("{}: {} cannot run on this communicator ({} rank{}): {}", where,
                                    info.name, nranks_, nranks_ == 1 ? "" : "s", error.what()));
    }
  }
  overrides_[kind].push_back(std::move(slot));
}

void PlanSelector::checkRequest(const runtime::PlanRequest& request) const {
  if (request.nranks != nranks_) {
    throw OptionError(fmt::format(
        "plan selection: this provider was made for {} ranks but the request has {}; make one "
        "provider per communicator size",
        nranks_, request.nranks));
  }
  if (request.collective == ir::CollectiveKind::custom) {
    throw OptionError(
        "plan selection covers the built-in collectives only; run a custom collective from its "
        "plan file");
  }
  if (isRooted(request.collective) && (request.root < 0 || request.root >= nranks_)) {
    throw OptionError(fmt::format("{} root {} is not a rank of 0..{}",
                                  ir::collectiveName(request.collective), request.root,
                                  nranks_ - 1));
  }
}

bool PlanSelector::chooseOverride(const runtime::PlanRequest& request, bool explain,
                                  Selection& out) const {
  const auto it = overrides_.find(request.collective);
  if (it == overrides_.end()) return false;
  for (const Override& slot : it->second) {
    if (!slot.entry.range.contains(request.bytes)) continue;
    const std::string source = fmt::format("CHORUS_ALGO {}", slot.entry.text);
    if (slot.plans.empty()) {
      algorithms::BuildRequest build = slot.build;
      if (isRooted(request.collective)) {
        if (slot.takesRoot) {
          build.params["root"] = request.root;
        } else if (request.root != 0) {
          if (explain) out.skipped.push_back(fmt::format("{}: root 0 only", source));
          return false;
        }
      }
      out.plan = {compiledPlan(build, fifoSlots_), slot.entry.choice.describe(), source};
      return true;
    }
    for (const bool exact : {true, false}) {
      for (const FilePlan& plan : slot.plans) {
        MatchOptions match;
        match.checkInPlace = exact;
        match.checkBytes = false;  // the entry's range governs
        if (!planMismatch(*plan.algorithm, request, match).empty()) continue;
        out.plan = {plan.algorithm, plan.displayName(),
                    exact ? source : source + ", buffers staged"};
        return true;
      }
    }
    if (explain) {
      for (const FilePlan& plan : slot.plans) {
        MatchOptions match;
        match.checkBytes = false;
        out.skipped.push_back(fmt::format("{} {}: {}", source, plan.displayName(),
                                          planMismatch(*plan.algorithm, request, match)));
      }
    }
    return false;
  }
  if (explain) {
    out.skipped.push_back(fmt::format("CHORUS_ALGO {}: no entry covers {}",
                                      ir::collectiveName(request.collective),
                                      formatSize(request.bytes)));
  }
  return false;
}

bool PlanSelector::chooseFromDirectory(const runtime::PlanRequest& request, bool explain,
                                       Selection& out) const {
  const FilePlan* chosen = nullptr;
  bool exactMatch = true;
  for (const bool exact : {true, false}) {
    for (const FilePlan& plan : directoryPlans_) {
      MatchOptions match;
      match.checkInPlace = exact;
      if (planMismatch(*plan.algorithm, request, match).empty()) {
        chosen = &plan;
        break;
      }
    }
    if (chosen != nullptr) {
      exactMatch = exact;
      break;
    }
  }
  if (explain) {
    for (const FilePlan& plan : directoryPlans_) {
      if (&plan == chosen || plan.algorithm->collective != request.collective) continue;
      const std::string why = planMismatch(*plan.algorithm, request);
      out.skipped.push_back(fmt::format("CHORUS_ALGO_DIR/{}: {}", plan.displayName(),
                                        why.empty() ? "an earlier file matched" : why));
    }
  }
  if (chosen == nullptr) return false;
  out.plan = {chosen->algorithm, chosen->displayName(),
              exactMatch ? "CHORUS_ALGO_DIR"
                         : fmt::format("CHORUS_ALGO_DIR, {} plan with buffers staged",
                                       chosen->algorithm->inPlace ? "in-place" : "out-of-place")};
  return true;
}

bool PlanSelector::chooseTuned(const runtime::PlanRequest& request, bool explain,
                               Selection& out) const {
  const auto it = tuned_.find(request.collective);
  if (it == tuned_.end()) return false;  // no table for this rank count: nothing to explain
  const TuningEntry& entry = it->second.table->entryFor(request.bytes);
  const std::string source =
      fmt::format("tuned for {} in {}", entry.range.describe(), it->second.source);
  algorithms::BuildRequest build = entry.choice.buildRequest(nranks_, ranksPerNode_);
  if (isRooted(request.collective)) {
    if (takesRoot(algorithms::findAlgorithm(entry.choice.algorithm))) {
      build.params["root"] = request.root;
    } else if (request.root != 0) {
      if (explain)
        out.skipped.push_back(fmt::format("{} ({}): root 0 only", entry.choice.describe(), source));
      return false;
    }
  }
  out.plan = {compiledPlan(build, fifoSlots_), entry.choice.describe(), source};
  return true;
}

Selection PlanSelector::chooseWith(const runtime::PlanRequest& request, bool explain) const {
  checkRequest(request);
  Selection selection;
  if (chooseOverride(request, explain, selection)) return selection;
  if (chooseFromDirectory(request, explain, selection)) return selection;
  if (chooseTuned(request, explain, selection)) return selection;
  selection.plan = defaultPlan(request, fifoSlots_);
  return selection;
}

Selection PlanSelector::choose(const runtime::PlanRequest& request) {
  return chooseWith(request, true);
}

runtime::Plan PlanSelector::select(const runtime::PlanRequest& request) {
  const bool explain = logEnabled(LogLevel::info);
  Selection selection = chooseWith(request, explain);
  if (explain) logOnce(request, selection);
  return std::move(selection.plan);
}

void PlanSelector::logOnce(const runtime::PlanRequest& request, const Selection& selection) {
  const std::string key =
      fmt::format("{}|{}|{}|{}|{}|{}", ir::collectiveName(request.collective), request.nranks,
                  request.root, request.inPlace, selection.plan.name, selection.plan.source);
  {
    std::lock_guard lock(logMutex_);
    if (!logged_.insert(key).second) return;
  }
  logLine(LogLevel::info, describeSelection(request, selection));
}

}  // namespace chorus::selection
