#include "verify/verify.h"

#include <algorithm>
#include <climits>
#include <exception>

#include <fmt/format.h>

#include "ir/step_endpoints.h"
#include "support/error.h"
#include "verify/check_deadlock.h"
#include "verify/check_one_sided.h"
#include "verify/check_postcondition.h"
#include "verify/check_races.h"
#include "verify/check_structure.h"
#include "verify/check_writes_input.h"
#include "verify/findings.h"
#include "verify/program_model.h"
#include "verify/simulate.h"

namespace chorus::verify {

namespace {

// One-sided plans (MSCCL++ execution plans): their own structure check and model.
void runOneSidedChecks(const ir::Algorithm& algorithm,
                       std::shared_ptr<const ir::Collective> collective,
                       const VerifyOptions& options, VerifyReport& report, FindingSink& sink) {
  if (!checkOneSidedStructure(algorithm, *collective, sink)) return;
  std::unique_ptr<ProgramModel> model = buildProgramModel(algorithm, collective, sink);
  if (!model) return;
  report.oneSided = true;
  OneSidedResult result = simulateOneSided(*model, options, sink);
  report.deadlockChecked = options.checkDeadlock;
  report.racesChecked = options.checkRaces;
  if (!options.checkPostcondition) {
    report.postconditionSkipped = "disabled";
  } else if (!collective->hasPostcondition()) {
    report.postconditionSkipped = fmt::format(
        "custom collective '{}' is unknown to chorus; name the collective it implements with "
        "--collective NAME (known: {})",
        collective->name(), ir::describeCustomCollectiveNames());
  } else if (!result.finished) {
    report.postconditionSkipped = "the plan deadlocks before its launch ends";
  } else {
    checkPostcondition(*model, result.slots, sink);
    report.postconditionChecked = true;
    report.postconditionSkipped.clear();
  }
}

// Runs the checks in order; each later check needs the structure the earlier ones vouched for.
void runChecks(const ir::Algorithm& algorithm, const VerifyOptions& options, VerifyReport& report,
               FindingSink& sink) {
  std::shared_ptr<const ir::Collective> collective = options.collective;
  if (!collective) {
    try {
      collective = ir::collectiveOf(algorithm);
    } catch (const UserError& error) {
      sink.add(FindingKind::malformed, -1, -1, -1,
               fmt::format("cannot tell which collective '{}' implements: {}", algorithm.name,
                           error.what()));
      report.postconditionSkipped = "the collective is unknown";
      return;
    }
  }
  report.postconditionSkipped = "the program is malformed";
  if (ir::hasOneSidedOps(algorithm)) {
    runOneSidedChecks(algorithm, collective, options, report, sink);
    return;
  }
  if (!checkStructure(algorithm, *collective, sink)) return;
  if (options.checkWritesInput) checkWritesInput(algorithm, *collective, sink);
  std::unique_ptr<ProgramModel> model = buildProgramModel(algorithm, collective, sink);
  if (!model) return;

  const bool wantPostcondition = options.checkPostcondition && collective->hasPostcondition();
  if (!options.checkPostcondition)
    report.postconditionSkipped = "disabled";
  else if (!collective->hasPostcondition())
    report.postconditionSkipped = fmt::format(
        "custom collective '{}' is unknown to chorus; name the collective it implements with "
        "--collective NAME (known: {}), or register it with ir::registerCustomCollective",
        collective->name(), ir::describeCustomCollectiveNames());
  if (options.checkDeadlock || wantPostcondition) {
    SimOptions sim;
    sim.fifoSlots = options.checkDeadlock ? report.fifoSlots : INT_MAX;
    sim.iterations = options.checkDeadlock ? report.iterations : 1;
    sim.trackData = true;
    SimResult result = simulateProgram(*model, sim, sink);
    if (!result.finished) reportDeadlock(*model, result, sim, sink);
    report.deadlockChecked = options.checkDeadlock;
    if (wantPostcondition) {
      if (result.firstIterationComplete) {
        checkPostcondition(*model, result.slots, sink);
        report.postconditionChecked = true;
        report.postconditionSkipped.clear();
      } else {
        report.postconditionSkipped = "the program deadlocks before its first iteration ends";
      }
    }
  }
  if (options.checkRaces && !sink.full()) {
    report.racesChecked = checkRaces(*model, sink);
    if (!report.racesChecked && !sink.has(FindingKind::deadlock))
      sink.add(FindingKind::deadlock, -1, -1, -1,
               "deadlock: program order, dependencies and send/receive matching form a cycle, so "
               "some step waits for itself whatever the FIFO size; run the deadlock check for "
               "the threadblocks involved");
  }
}

std::string joinWithAnd(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += i + 1 == items.size() ? " and " : ", ";
    out += items[i];
  }
  return out;
}

}  // namespace

VerifyReport verifyAlgorithm(const ir::Algorithm& algorithm, const VerifyOptions& options) {
  VerifyReport report;
  report.nranks = algorithm.nranks;
  report.fifoSlots = std::max(1, options.fifoSlots);
  report.iterations = std::max(1, options.iterations);
  FindingSink sink(options.maxFindings);
  try {
    runChecks(algorithm, options, report, sink);
  } catch (const std::exception& error) {
    // Defensive: a check tripped over something the structural checks did not anticipate.
    sink.add(FindingKind::malformed, -1, -1, -1,
             fmt::format("the verifier could not analyse '{}': {}", algorithm.name, error.what()));
  }
  report.truncated = sink.truncated();
  report.findings = sink.take();
  return report;
}

std::string VerifyReport::describe() const {
  if (ok()) {
    std::vector<std::string> checked;
    if (postconditionChecked) checked.push_back("postcondition");
    if (deadlockChecked && oneSided)
      checked.push_back("deadlock freedom (one launch: signals, waits, barriers, semaphores)");
    else if (deadlockChecked)
      checked.push_back(fmt::format("deadlock freedom (fifo={}, {} iteration{})", fifoSlots,
                                    iterations, iterations == 1 ? "" : "s"));
    if (racesChecked) checked.push_back("races");
    std::string out = checked.empty()
                          ? fmt::format("ok: structure checked on {} ranks", nranks)
                          : fmt::format("ok: {} checked on {} ranks", joinWithAnd(checked), nranks);
    if (!postconditionChecked && !postconditionSkipped.empty())
      out += fmt::format("; postcondition not checked: {}", postconditionSkipped);
    return out;
  }
  std::string out;
  for (const Finding& finding : findings)
    out += fmt::format("{}: {}\n", findingKindName(finding.kind), finding.message);
  if (truncated)
    out +=
        fmt::format("(stopped after {} findings; raise VerifyOptions::maxFindings to see more)\n",
                    findings.size());
  if (!out.empty()) out.pop_back();
  return out;
}

std::string_view findingKindName(FindingKind kind) {
  switch (kind) {
    case FindingKind::malformed:
      return "malformed";
    case FindingKind::uninitialized:
      return "uninitialized";
    case FindingKind::postcondition:
      return "postcondition";
    case FindingKind::deadlock:
      return "deadlock";
    case FindingKind::race:
      return "race";
    case FindingKind::writesInput:
      return "writes-input";
  }
  return "?";
}

}  // namespace chorus::verify
