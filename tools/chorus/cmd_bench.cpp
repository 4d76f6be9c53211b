// `chorus bench COLL --ranks N ...`: nccl-tests style sweep of one collective through the public
// API (chorus::Communicator): time, algbw, busbw and #wrong per size, out of place and in place,
// with the timing method of bench/peers (see src/perf/). Ranks are threads of this process
// (--transport thread), forked processes (--transport shm or tcp: transport_option.h), or, with
// --launched, the processes a launcher started (chorus launch, mpirun, torchrun variables), one
// per rank.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "bench_launch.h"
#include "chorus/chorus.h"
#include "cli.h"
#include "collective_option.h"
#include "gpu_buffers.h"
#include "ir/algorithm.h"
#include "ir/formats.h"
#include "perf/bench_args.h"
#include "perf/collective.h"
#include "runtime/datatype.h"
#include "support/env.h"
#include "support/error.h"
#include "transport/registry.h"
#include "transport_option.h"

namespace chorus::cli {
namespace {

struct BenchCommandArgs {
  perf::BenchArgs sweep;
  int ranks = 0;
  std::string algo = "auto";
  std::string transport;  // empty: thread, or with --launched CHORUS_TRANSPORT / auto
  std::string bind = "none";
  std::size_t bufferOffset = 0;
  bool registered = false;
  bool launched = false;
  std::string device = "cpu";  // --device: cpu (host buffers) or cuda
  std::string collective;      // --collective: must agree with COLL and with an --algo plan file
};

// "shm, tcp or auto": the transports ranks a launcher started may use.
std::string launchedTransportNames() {
  return transport::transportNames(
      [](const transport::TransportEntry& e) { return e.runsProcesses(); });
}

// --algo NAME|FILE becomes a CHORUS_ALGO override for this collective; auto keeps the default
// selection.
CommConfig makeConfig(const BenchCommandArgs& args, perf::Collective collective) {
  CommConfig config;
  config.transport = args.transport;
  if (args.device == "cuda") config.executor = "cuda";
  if (args.algo != "auto")
    config.algo = fmt::format("{}={}", perf::collectiveName(collective), args.algo);
  return config;
}

// chorus bench measures a built-in collective (COLL) through the Communicator, so
// --collective can only confirm it: NAME must be COLL, and a plan file given by --algo must not
// say otherwise.
void checkCollectiveOption(const BenchCommandArgs& args) {
  if (args.collective.empty()) return;
  checkCollectiveName(args.collective);
  const auto named = ir::parseCollectiveName(args.collective);
  const auto measured = perf::parseCollective(args.sweep.collective);
  if (measured && (!named || ir::collectiveName(*named) != perf::collectiveName(*measured)))
    throw OptionError(fmt::format(
        "--collective {} contradicts the benchmarked collective {}: chorus bench measures "
        "built-in collectives; run a custom collective's plan with 'chorus run FILE "
        "--collective {}'",
        args.collective, perf::collectiveName(*measured), args.collective));
  std::error_code error;
  if (!std::filesystem::is_regular_file(args.algo, error)) return;
  for (ir::Algorithm& algorithm : ir::readAlgorithmsFile(args.algo))
    applyCollectiveOption(args.collective, algorithm, args.algo);
}

ExitCode runBench(const BenchCommandArgs& given) {
  BenchCommandArgs args = given;
  checkCollectiveOption(args);
  if (args.device == "cuda") {
    requireGpuBench();
    if (args.registered)
      throw OptionError(
          "--registered allocates host memory that local peers map; with --device cuda the "
          "buffers are GPU memory already: leave --registered out");
  }
  if (args.launched) {
    if (args.bind != "none")
      throw OptionError(
          "--bind pins the ranks chorus bench forks; with --launched, bind with "
          "the launcher (e.g. mpirun --bind-to core)");
    if (const transport::TransportEntry* named = transport::findTransport(args.transport);
        named != nullptr && !named->runsProcesses())
      throw OptionError(fmt::format(
          "--transport {} makes every rank in one process ({}); with --launched use {} (or leave "
          "it out for CHORUS_TRANSPORT, else {})",
          args.transport, named->description, launchedTransportNames(),
          transport::defaultTransport(transport::TransportReach::anyHosts).name));
  } else if (args.ranks < 1) {
    throw OptionError(
        "--ranks must be at least 1, e.g. --ranks 2 (or --launched under a "
        "launcher)");
  }
  if (args.transport.empty())
    args.transport =
        args.launched
            ? envString("CHORUS_TRANSPORT")
                  .value_or(transport::defaultTransport(transport::TransportReach::anyHosts).name)
            : transport::defaultTransport(transport::TransportReach::oneProcess).name;
  const auto type = runtime::parseDataType(args.sweep.dtype);
  if (!type)
    throw OptionError(fmt::format(
        "unknown --dtype '{}'; use int8, uint8, int32, uint32, int64, uint64, float16, bfloat16, "
        "float32 or float64",
        args.sweep.dtype));
  std::optional<Communicator> launched;
  if (args.launched) {
    const perf::Collective collective =
        perf::makeSweepOptions(args.sweep, 1, runtime::dataTypeSize(*type)).collective;
    launched.emplace(Communicator::initFromEnvironment(makeConfig(args, collective)));
    if (args.ranks > 0 && args.ranks != launched->size())
      throw OptionError(
          fmt::format("--ranks {} but the launcher started {} ranks; leave --ranks "
                      "out with --launched",
                      args.ranks, launched->size()));
    args.ranks = launched->size();
  }
  perf::SweepOptions options =
      perf::makeSweepOptions(args.sweep, args.ranks, runtime::dataTypeSize(*type));
  options.library = "chorus";
  options.transport = args.transport;
  options.dtype = std::string(runtime::dataTypeName(*type));
  SweepJob job;
  job.ranks = args.ranks;
  job.transport = args.transport;
  job.type = *type;
  job.options = options;
  job.sweep = args.sweep;
  job.config = makeConfig(args, options.collective);
  job.algo = args.algo;
  job.bindCores = args.bind == "core";
  if (args.bufferOffset % runtime::dataTypeSize(*type) != 0)
    throw OptionError(fmt::format(
        "--buffer-offset {} is not a multiple of the {}-byte {} element; chorus needs buffers "
        "aligned to their element type, as C++ does",
        args.bufferOffset, runtime::dataTypeSize(*type), runtime::dataTypeName(*type)));
  job.bufferOffset = args.bufferOffset;
  job.registered = args.registered;
  job.onGpu = args.device == "cuda";
  if (launched) return runLaunchedRank(*launched, job);
  return runSweepJob(job);
}

}  // namespace

Command addBenchCommand(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "bench", "Measure a collective over a size sweep (nccl-tests style: time, algbw, busbw)");
  auto args = std::make_shared<BenchCommandArgs>();
  perf::addBenchArgs(*command, args->sweep);
  command->add_option("-n,--ranks", args->ranks,
                      "Number of ranks (required unless --launched: then the launcher's)");
  command
      ->add_option("--algo", args->algo,
                   "auto (the selection: CHORUS_TUNING_FILE, then the shipped tuning table), a "
                   "library algorithm with optional settings (ring{channels=2}) or a plan file")
      ->capture_default_str();
  const transport::TransportEntry& launchedDefault =
      transport::defaultTransport(transport::TransportReach::anyHosts);
  command
      ->add_option(
          "--transport", args->transport,
          fmt::format("{}; with --launched: {} (default {}: {})", describeTransportOption(),
                      launchedTransportNames(), launchedDefault.name, launchedDefault.description))
      ->capture_default_str();
  command->add_flag("--launched", args->launched,
                    "This process is one rank started by a launcher (chorus launch, mpirun, "
                    "torchrun variables); rank 0 prints the table");
  command
      ->add_option("--bind", args->bind,
                   "core: pin rank r to CPU r (modulo the CPUs allowed), as mpirun --bind-to "
                   "core; none: let the OS place ranks (shm only)")
      ->check(CLI::IsMember({"none", "core"}))
      ->capture_default_str();
  command
      ->add_option("--buffer-offset", args->bufferOffset,
                   "Start the send and receive buffers this many bytes past a page boundary, "
                   "as malloc'd ones are (16); 0 = page aligned")
      ->check(CLI::Range(0, 4095))
      ->capture_default_str();
  command->add_flag("--registered", args->registered,
                    "Allocate the send and receive buffers with chorus::memAlloc (registered "
                    "memory, which local peers map: single copy on shm) instead of the heap");
  command
      ->add_option("--device", args->device,
                   "cpu: host buffers on the default executor; cuda: executor cuda, buffers in "
                   "GPU memory, calls on a stream per rank, beside the GPU's copy rate "
                   "(chorus built with CUDA; docs/gpu.md)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  command
      ->add_option("--collective", args->collective,
                   "Confirms the collective of COLL and of an --algo plan file (a usage error "
                   "when they disagree); custom collectives run with 'chorus run FILE "
                   "--collective NAME'")
      ->type_name("NAME");
  return [args]() { return runBench(*args); };
}

}  // namespace chorus::cli
