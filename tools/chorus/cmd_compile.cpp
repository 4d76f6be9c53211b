// `chorus compile ALGO ...`: builds a library algorithm for a shape, checks its traced
// postcondition, compiles it (verifying the result unless --no-verify) and writes the IR in
// the chosen format.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "cli.h"
#include "compiler/pipeline.h"
#include "ir/dot_format.h"
#include "ir/formats.h"
#include "msccl_options.h"
#include "shape_options.h"
#include "support/error.h"

namespace chorus::cli {
namespace {

struct CompileArgs {
  std::string algorithm;
  ShapeOptions shape;
  std::string protocol = "simple";
  std::string format = "xml";
  std::string output = "-";
  std::vector<std::string> disabledPasses;
  int fifoSlots = compiler::kDefaultFifoSlots;
  int waitCost = compiler::CompileOptions{}.waitCost;
  bool noVerify = false;
  bool stats = false;
  std::string dagDot;
  ir::MscclWriteOptions xml;
};

ir::Format formatFromName(const std::string& name) {
  if (const auto format = ir::parseFormatName(name)) return *format;
  throw OptionError(
      fmt::format("unknown --format '{}'; use xml, json, text, dot or mscclpp-json", name));
}

void checkPassNames(const std::vector<std::string>& names) {
  const std::vector<std::string>& known = compiler::passNames();
  for (const std::string& name : names) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      throw OptionError(fmt::format("unknown pass '{}' for --disable-pass; passes: {}", name,
                                    fmt::join(known, ", ")));
    }
  }
}

void printStats(std::size_t dagOps, const compiler::CompileResult& result) {
  const ir::Algorithm& algorithm = result.algorithm;
  fmt::print(stderr, "pass                        time (ms)\n");
  double total = 0;
  for (const compiler::PassStats& pass : result.passes) {
    total += pass.milliseconds;
    fmt::print(stderr, "  {:<26}{}\n", pass.name,
               pass.skipped ? std::string("skipped") : fmt::format("{:.3f}", pass.milliseconds));
  }
  fmt::print(stderr, "  {:<26}{:.3f}\n", "total", total);
  fmt::print(stderr,
             "dag ops {}, ranks {}, channels {}, threadblocks {}, steps {}, dependencies {}\n",
             dagOps, algorithm.nranks, ir::channelCount(algorithm), ir::threadblockCount(algorithm),
             ir::stepCount(algorithm), ir::dependencyCount(algorithm));
}

ExitCode runCompile(const CompileArgs& args) {
  algorithms::BuildRequest request = makeBuildRequest(args.algorithm, args.shape);
  const auto protocol = ir::parseProtocolName(args.protocol);
  if (!protocol) {
    throw OptionError(
        fmt::format("unknown --protocol '{}'; use simple, ll or ll128", args.protocol));
  }
  request.protocol = *protocol;
  const ir::Format format = formatFromName(args.format);
  checkPassNames(args.disabledPasses);
  if (args.fifoSlots < 1) {
    throw OptionError(fmt::format("--fifo-slots {} must be at least 1", args.fifoSlots));
  }

  compiler::CompileOptions options;
  options.fifoSlots = args.fifoSlots;
  if (args.waitCost < 0)
    throw OptionError(fmt::format("--wait-cost {} must be at least 0", args.waitCost));
  options.waitCost = args.waitCost;
  options.verify = !args.noVerify;
  options.disabledPasses = args.disabledPasses;

  std::unique_ptr<lang::Program> program = algorithms::buildProgram(request);
  if (!args.dagDot.empty()) writeTextOutput(args.dagDot, ir::writeDagDot(program->dag()));
  const std::size_t dagOps = program->dag().ops.size();
  const compiler::CompileResult result =
      algorithms::compileTraced(std::move(program), request.algorithm, options);
  if (args.stats) printStats(dagOps, result);
  writeTextOutput(args.output, ir::writeAlgorithm(result.algorithm, format, args.xml));
  return ExitCode::ok;
}

}  // namespace

Command addCompileCommand(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "compile", "Build a library algorithm for a shape, compile and verify it, print its IR");
  auto args = std::make_shared<CompileArgs>();
  command->add_option("algorithm", args->algorithm, "Algorithm name (see 'chorus algorithms')")
      ->required();
  addShapeOptions(*command, args->shape);
  command->add_option("--protocol", args->protocol, "Protocol: simple, ll or ll128")
      ->check(CLI::IsMember({"simple", "ll", "ll128"}, CLI::ignore_case))
      ->capture_default_str();
  command
      ->add_option("--format", args->format,
                   "Output format: xml, json, text, dot or mscclpp-json (MSCCL++'s execution "
                   "plan)")
      ->check(CLI::IsMember({"xml", "json", "text", "dot", "mscclpp-json"}))
      ->capture_default_str();
  command->add_option("-o,--output", args->output, "Output file ('-' = standard output)")
      ->capture_default_str();
  addMscclWriteOptions(*command, args->xml);
  command
      ->add_option("--disable-pass", args->disabledPasses,
                   fmt::format("Skip a compiler pass by name (repeatable): {}",
                               fmt::join(compiler::passNames(), ", ")))
      ->type_name("NAME")
      ->allow_extra_args(false);
  command->add_option("--fifo-slots", args->fifoSlots, "Slots per connection FIFO")
      ->capture_default_str();
  command
      ->add_option("--wait-cost", args->waitCost,
                   "Threadblock choice for local ops: schedule positions one extra "
                   "cross-threadblock wait is worth (0 = balance load as GC3 does)")
      ->capture_default_str();
  command->add_flag("--no-verify", args->noVerify, "Do not verify the compiled IR");
  command->add_flag("--stats", args->stats,
                    "Print per-pass timings and step/threadblock/dependency counts to stderr");
  command->add_option("--dag-dot", args->dagDot, "Also write the chunk DAG as DOT to FILE")
      ->type_name("FILE");
  return [args]() { return runCompile(*args); };
}

}  // namespace chorus::cli
