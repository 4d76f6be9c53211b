// `chorus run FILE|ALGO --ranks N ...`: executes a plan file or a library algorithm on real
// ranks (threads of this process for --transport thread, forked processes joined by shared
// memory for --transport shm or by loopback TCP for --transport tcp: transport_option.h) with
// exact integer-valued data and checks every output element against the collective's
// definition.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "api/comm_config.h"
#include "cli.h"
#include "collective_option.h"
#include "ir/collective.h"
#include "ir/formats.h"
#include "runtime/collective_args.h"
#include "runtime/executor.h"
#include "runtime/process_runner.h"
#include "runtime/thread_runner.h"
#include "shape_options.h"
#include "support/error.h"
#include "support/size.h"
#include "transport_option.h"

namespace chorus::cli {
namespace {

struct RunArgs {
  std::string target;
  ShapeOptions shape;
  std::string bytes = "1M";
  std::string dtype = "float32";
  std::string op = "sum";
  std::string transport{transport::defaultTransport(transport::TransportReach::oneProcess).name};
  double timeoutSeconds = 300;
  int iterations = 1;
  std::string collective;  // --collective: the custom collective a plan file implements
  bool strict = false;     // a result left unchecked (unknown custom collective) fails
  std::string executor{runtime::kDefaultExecutor};
};

// A plan file ('-' or an existing path) or else a library algorithm compiled for the shape.
// --collective applies to either.
std::vector<ir::Algorithm> loadPlans(const RunArgs& args) {
  checkCollectiveName(args.collective);
  std::vector<ir::Algorithm> plans;
  if (args.target == "-" || std::filesystem::exists(args.target))
    plans = ir::readAlgorithmsFile(args.target);
  else
    plans = {algorithms::compileAlgorithm(makeBuildRequest(args.target, args.shape)).algorithm};
  for (ir::Algorithm& plan : plans)
    applyCollectiveOption(args.collective, plan, args.target);
  return plans;
}

ExitCode runRun(const RunArgs& args) {
  const transport::TransportEntry& chosen = parseTransportOption(args.transport);
  const auto type = runtime::parseDataType(args.dtype);
  if (!type) throw OptionError(fmt::format("unknown --dtype '{}'", args.dtype));
  const auto op = runtime::parseReduceOp(args.op);
  if (!op)
    throw OptionError(fmt::format("unknown --op '{}'; use sum, prod, min, max or avg", args.op));
  const std::uint64_t bytes = parseSize(args.bytes);
  if (args.iterations < 1) throw OptionError("--iters must be at least 1");
  api::registerExecutors();
  const std::string executor = runtime::requireExecutor(args.executor, "--executor").name;

  bool allCorrect = true;
  for (const ir::Algorithm& plan : loadPlans(args)) {
    if (args.shape.ranks > 0 && plan.nranks != args.shape.ranks)
      throw OptionError(fmt::format("'{}' is a plan for {} ranks, not --ranks {}", plan.name,
                                    plan.nranks, args.shape.ranks));
    // --bytes is the largest buffer per rank (nccl-tests' "size").
    const std::size_t esz = runtime::dataTypeSize(*type);
    const std::size_t perCount =
        std::max(runtime::inputElements(plan, 0, 1), runtime::outputElements(plan, 0, 1));
    runtime::RunOptions options;
    options.transport = chosen.name;
    options.executor = executor;
    options.count = runtime::countForBytes(plan, bytes, esz);
    options.type = *type;
    options.op = *op;
    options.iterations = args.iterations;
    options.timeout = std::chrono::milliseconds(static_cast<long>(args.timeoutSeconds * 1000));
    // A transport that makes its group in one process runs ranks as threads, others fork them.
    const auto report = chosen.makeGroup ? runtime::runOnThreads(plan, options)
                                         : runtime::runOnProcesses(plan, options);
    fmt::print("{} '{}' on {} ranks ({} transport{}): {} per rank, count {}, {} {}: ",
               ir::collectiveName(plan.collective), plan.name, plan.nranks, args.transport,
               executor == runtime::kDefaultExecutor ? "" : ", " + executor + " executor",
               formatSize(options.count * perCount * esz), options.count,
               runtime::dataTypeName(*type), runtime::reduceOpName(*op));
    if (report.ok() && !ir::collectiveOf(plan)->hasPostcondition()) {
      allCorrect = allCorrect && !args.strict;
      fmt::print(
          "ran, NOT checked: chorus does not know what custom collective '{}' computes; name it "
          "with --collective NAME (known: {}), {:.3f} ms{}\n",
          plan.customName.empty() ? plan.name : plan.customName,
          ir::describeCustomCollectiveNames(), report.seconds * 1e3,
          args.strict ? " (--strict: fails)" : "");
    } else if (report.ok()) {
      fmt::print("correct ({} elements checked), {:.3f} ms\n", report.checkedElements,
                 report.seconds * 1e3);
    } else {
      allCorrect = false;
      fmt::print("WRONG: {} of {} elements differ; first: {}\n", report.wrongElements,
                 report.checkedElements, report.firstWrong);
    }
  }
  return allCorrect ? ExitCode::ok : ExitCode::failure;
}

}  // namespace

Command addRunCommand(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "run", "Execute a plan file or library algorithm on real ranks and check the result");
  auto args = std::make_shared<RunArgs>();
  command
      ->add_option("target", args->target,
                   "Plan file (MSCCL XML, JSON, text; '-' = stdin) or algorithm name")
      ->required();
  addShapeOptions(*command, args->shape);
  command->add_option("--bytes", args->bytes, "Largest buffer per rank: 8, 64K, 1M, 1G")
      ->capture_default_str();
  command->add_option("--dtype", args->dtype, "Element type (int8 ... float64, bf16, f16)")
      ->capture_default_str();
  command->add_option("--op", args->op, "Reduction: sum, prod, min, max, avg")
      ->capture_default_str();
  command->add_option("--transport", args->transport, describeTransportOption())
      ->capture_default_str();
  command->add_option("--timeout", args->timeoutSeconds, "Seconds before a stuck rank fails")
      ->capture_default_str();
  command->add_option("--iters", args->iterations, "Runs back to back")->capture_default_str();
  command
      ->add_option("--executor", args->executor,
                   "What runs each rank: cpu (the interpreter) or device (the GPU runtime's "
                   "device interpreter built for the host)")
      ->capture_default_str();
  addCollectiveOption(*command, args->collective);
  command->add_flag("--strict", args->strict,
                    "Fail (exit 1) when the result is not checked because chorus does not know "
                    "the custom collective (name it with --collective)");
  return [args]() { return runRun(*args); };
}

}  // namespace chorus::cli
