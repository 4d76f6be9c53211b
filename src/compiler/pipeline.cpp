#include "compiler/pipeline.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "compiler/assign_channels.h"
#include "compiler/assign_threadblocks.h"
#include "compiler/fuse_instructions.h"
#include "compiler/insert_dependencies.h"
#include "compiler/instr_graph.h"
#include "compiler/lower_dag.h"
#include "compiler/prune_waits.h"
#include "compiler/replicate_instances.h"
#include "ir/text_format.h"
#include "support/error.h"
#include "verify/verify.h"

namespace chorus::compiler {

namespace {

struct PassInfo {
  const char* name;
  bool optional;
};

constexpr PassInfo kPasses[] = {
    {"replicate-instances", false}, {"lower", false},
    {"fuse-instructions", true},    {"assign-channels", false},
    {"assign-threadblocks", false}, {"insert-dependencies", false},
    {"prune-waits", true},          {"verify", true},
};

// Structural invariants of the instruction graph, checked after every graph pass.
void checkInstrGraph(const InstrGraph& graph, const char* pass) {
  for (const auto& in : graph.instrs) {
    if (in.dead) continue;
    for (int p : graph.preds(in))
      CHORUS_INTERNAL_ASSERT(
          p < in.id && !graph.instrs[p].dead && graph.instrs[p].rank == in.rank,
          fmt::format("after {}: bad processing edge %{} -> %{}", pass, p, in.id));
    if (ir::opSends(in.op))
      CHORUS_INTERNAL_ASSERT(in.sendMatch > in.id && graph.instrs[in.sendMatch].recvMatch == in.id,
                             fmt::format("after {}: bad send match at %{}", pass, in.id));
    if (ir::opReceives(in.op))
      CHORUS_INTERNAL_ASSERT(in.recvMatch >= 0 && graph.instrs[in.recvMatch].sendMatch == in.id,
                             fmt::format("after {}: bad receive match at %{}", pass, in.id));
  }
}

std::string printState(const InstrGraph& graph) {
  return printInstrGraph(graph);
}
std::string printState(const ir::Dag& dag) {
  return fmt::format("chunk dag '{}': {} ops\n", dag.name, dag.ops.size());
}
std::string printState(const ir::Algorithm& algorithm) {
  return ir::printText(algorithm);
}

void checkState(const InstrGraph& graph, const char* pass) {
  checkInstrGraph(graph, pass);
}
void checkState(const ir::Dag&, const char*) {}
void checkState(const ir::Algorithm&, const char*) {}

// Runs one pass: skips it when disabled, times it, prints the IR after it when
// CHORUS_DEBUG_PASSES is set, and checks the IR's invariants.
class PassRunner {
 public:
  explicit PassRunner(const CompileOptions& options) : options_(options), context_{options} {
    debug_ = std::getenv("CHORUS_DEBUG_PASSES") != nullptr;
  }

  template <typename In, typename Fn>
  auto run(const char* name, In&& input, Fn&& pass) {
    using Out = decltype(pass(std::forward<In>(input), context_));
    const auto start = std::chrono::steady_clock::now();
    Out out = pass(std::forward<In>(input), context_);
    const auto end = std::chrono::steady_clock::now();
    stats_.push_back({name, std::chrono::duration<double, std::milli>(end - start).count(), false});
    checkState(out, name);
    if (debug_) std::fprintf(stderr, "=== after %s ===\n%s", name, printState(out).c_str());
    return out;
  }

  template <typename T, typename Fn>
  T runOptional(const char* name, T input, Fn&& pass) {
    if (disabled(name)) {
      stats_.push_back({name, 0, true});
      return input;
    }
    return run(name, std::move(input), std::forward<Fn>(pass));
  }

  bool disabled(const char* name) const {
    return std::find(options_.disabledPasses.begin(), options_.disabledPasses.end(), name) !=
           options_.disabledPasses.end();
  }
  std::vector<PassStats> takeStats() { return std::move(stats_); }

 private:
  const CompileOptions& options_;
  PassContext context_;
  bool debug_ = false;
  std::vector<PassStats> stats_;
};

void checkDisabledPasses(const CompileOptions& options) {
  for (const auto& name : options.disabledPasses) {
    auto it = std::find_if(std::begin(kPasses), std::end(kPasses),
                           [&](const PassInfo& p) { return name == p.name; });
    if (it == std::end(kPasses))
      throw OptionError(
          fmt::format("unknown pass '{}'; passes: {}", name, fmt::join(passNames(), ", ")));
    if (!it->optional)
      throw OptionError(fmt::format(
          "pass '{}' cannot be disabled: the program is not executable without it; optional "
          "passes are fuse-instructions, prune-waits and verify",
          name));
  }
}

// Throws the CompileError of the verify pass when `algorithm` fails verification.
void requireVerified(const ir::Algorithm& algorithm, const CompileOptions& options,
                     const std::shared_ptr<const ir::Collective>& collective) {
  verify::VerifyOptions v;
  v.fifoSlots = options.fifoSlots;
  v.collective = collective;
  const auto report = verify::verifyAlgorithm(algorithm, v);
  if (report.ok()) return;
  const bool onlyWritesInput = std::all_of(
      report.findings.begin(), report.findings.end(),
      [](const verify::Finding& f) { return f.kind == verify::FindingKind::writesInput; });
  if (!onlyWritesInput)
    throw CompileError(
        fmt::format("the compiled '{}' failed verification (a chorus bug unless manual channels or "
                    "threadblocks forced it):\n{}",
                    algorithm.name, report.describe()));
  // Writing the input is the program's doing, not the compiler's: say how to fix the program.
  const bool fusionOff = std::find(options.disabledPasses.begin(), options.disabledPasses.end(),
                                   "fuse-instructions") != options.disabledPasses.end();
  throw CompileError(fmt::format(
      "the program '{}' writes its input buffer, but its collective is out-of-place; reduce into "
      "the output or scratch buffer instead, or declare the collective in-place{}:\n{}",
      algorithm.name,
      fusionOff ? " (with fuse-instructions enabled, a receive-reduce into the input followed by "
                  "a copy out becomes one recvReduceCopy that leaves the input alone: drop "
                  "--disable-pass fuse-instructions)"
                : "",
      report.describe()));
}

}  // namespace

const std::vector<std::string>& passNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& p : kPasses)
      out.emplace_back(p.name);
    return out;
  }();
  return names;
}

namespace {

// The passes after replication. Each stage's input is freed once the next stage holds its
// result (a 1024-rank ring's graphs are gigabytes).
CompileResult compileReplicated(ir::Dag replicated, PassRunner& runner,
                                const CompileOptions& options) {
  const auto collective = replicated.collective;
  InstrGraph graph = runner.run("lower", replicated, lowerDag);
  replicated = ir::Dag{};
  graph = runner.runOptional("fuse-instructions", std::move(graph), fuseInstructions);
  // Channel assignment and scheduling iterate when two flows' messages cannot keep their order on
  // one connection (the scheduler names a flow to move to another channel).
  constexpr int kMaxChannelRetries = 256;
  // assignChannels reassigns every communication instruction, and assignThreadblocks leaves the
  // graph alone when it throws, so the retries need no copy of the graph.
  for (int retry = 0;; ++retry) {
    graph = runner.run("assign-channels", std::move(graph), assignChannels);
    try {
      graph = runner.run("assign-threadblocks", std::move(graph), assignThreadblocks);
      break;
    } catch (const ChannelConflict& conflict) {
      if (retry == kMaxChannelRetries)
        throw CompileError(fmt::format(
            "'{}': no channel assignment keeps every connection's messages in order after {} "
            "attempts (last conflict at the transfer traced at {}); add channel hints",
            graph.name, kMaxChannelRetries, graph.whereOf(graph.instrs[conflict.flowStart])));
      graph.avoidChannels[conflict.flowStart].push_back(conflict.replicaChannel);
    }
  }
  ir::Algorithm algorithm = runner.run("insert-dependencies", graph, insertDependencies);
  graph = InstrGraph{};
  algorithm = runner.runOptional("prune-waits", std::move(algorithm), pruneWaits);
  if (options.verify)
    algorithm = runner.runOptional("verify", std::move(algorithm),
                                   [&](ir::Algorithm a, const PassContext&) {
                                     requireVerified(a, options, collective);
                                     return a;
                                   });
  return {std::move(algorithm), runner.takeStats(), collective};
}

}  // namespace

void verifyCompiled(const ir::Algorithm& algorithm,
                    const std::shared_ptr<const ir::Collective>& collective,
                    const CompileOptions& options) {
  requireVerified(algorithm, options, collective);
}

CompileResult compileProgram(const ir::Dag& dag, const CompileOptions& options) {
  checkDisabledPasses(options);
  if (!dag.collective) throw OptionError("compileProgram: the Dag has no collective");
  PassRunner runner(options);
  return compileReplicated(runner.run("replicate-instances", dag, replicateInstances), runner,
                           options);
}

CompileResult compileProgram(ir::Dag&& dag, const CompileOptions& options) {
  checkDisabledPasses(options);
  if (!dag.collective) throw OptionError("compileProgram: the Dag has no collective");
  PassRunner runner(options);
  ir::Dag replicated = runner.run("replicate-instances", dag, replicateInstances);
  dag = ir::Dag{};
  return compileReplicated(std::move(replicated), runner, options);
}

}  // namespace chorus::compiler
