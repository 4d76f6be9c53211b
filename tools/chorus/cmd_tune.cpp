// `chorus tune --ranks N [--transport shm|tcp|thread]` (transport_option.h): measures every
// applicable library algorithm and setting of each collective over a size sweep on this machine,
// writes the per-size winners as a tuning table (selection/tuning_table.h) that communicators load
// through CHORUS_TUNING_FILE, and checks that `--algo auto` with the new table tracks the best
// algorithm. Each candidate runs as one `chorus bench` sweep (bench_launch.h), out of place,
// with every result checked; a candidate that fails or computes a wrong element is dropped.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_launch.h"
#include "perf/progress.h"
#include "perf/record_json.h"
#include "perf/timing.h"
#include "runtime/datatype.h"
#include "selection/plan_cache.h"
#include "selection/tuning_builder.h"
#include "support/error.h"
#include "support/size.h"
#include "transport/registry.h"
#include "transport_option.h"

namespace chorus::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct TuneArgs {
  int ranks = 0;
  // The transport processes on one host use by default (whose tables the default transport
  // consults there).
  std::string transport{transport::defaultTransport(transport::TransportReach::oneHost).name};
  std::vector<std::string> collectives = {"allreduce", "allgather", "reducescatter",
                                          "alltoall",  "broadcast", "reduce"};
  std::string minBytes = "8";
  std::string maxBytes = "64M";
  std::uint64_t factor = 4;
  double budgetSeconds = 0.05;
  int maxBatches = 10;
  std::string dtype = "float32";
  // LL and LL128 only up to flaggedMax: they are latency protocols (GC3 §6.1), their
  // messages at most 8 KiB / 64 KiB; on shm their messages travel as flagged lines.
  std::vector<std::string> protocols = {"simple", "ll", "ll128"};
  std::string flaggedMax = "64K";
  std::vector<int> instances = {1};
  bool exploreParams = true;
  double tie = 0.05;
  std::string output = "chorus-tuning.json";
  std::string report;
  int verifyRounds = 3;  // 0: no closing check of --algo auto
};

// A private temporary file name for one sweep's records.
class TempJson {
 public:
  TempJson() {
    char name[] = "/tmp/chorus-tune-XXXXXX";
    const int fd = mkstemp(name);
    if (fd < 0) throw UserError("cannot create a temporary file in /tmp for chorus tune");
    close(fd);
    path_ = name;
  }
  ~TempJson() { std::remove(path_.c_str()); }
  TempJson(const TempJson&) = delete;
  TempJson& operator=(const TempJson&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// "[#######.............] 35%  allreduce.ring{channels=2}  eta 1m20s"
std::string progressLabel(int done, int total, const std::string& what, Clock::time_point start) {
  constexpr int kWidth = 24;
  const int filled = total == 0 ? kWidth : done * kWidth / total;
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(kWidth, '.');
  std::string eta;
  if (done > 0) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    const int left = static_cast<int>(elapsed / done * (total - done));
    eta = fmt::format("  eta {}m{:02}s", left / 60, left % 60);
  }
  return fmt::format("[{}] {:3}%  {}{}", bar, total == 0 ? 100 : done * 100 / total, what, eta);
}

struct SweepResult {
  bool ok = false;
  std::vector<perf::BenchRecord> records;  // out of place, checked
};

// One out-of-place, checked sweep of `collective` with `config`; records of sizes that ran.
// `maxBytes`: the sweep's largest size when not args.maxBytes.
SweepResult runSweep(const TuneArgs& args, perf::Collective collective, const CommConfig& config,
                     const std::string& algo, const std::string& maxBytes = {}) {
  const auto type = runtime::parseDataType(args.dtype);
  perf::BenchArgs sweep;
  sweep.collective = std::string(perf::collectiveName(collective));
  sweep.minBytes = args.minBytes;
  sweep.maxBytes = maxBytes.empty() ? args.maxBytes : maxBytes;
  sweep.factor = args.factor;
  sweep.dtype = args.dtype;
  sweep.inplace = false;
  sweep.check = true;
  sweep.budgetSeconds = args.budgetSeconds;
  sweep.maxBatches = args.maxBatches;
  sweep.printTable = false;
  TempJson json;
  sweep.jsonPath = json.path();
  SweepJob job;
  job.ranks = args.ranks;
  job.transport = args.transport;
  job.type = *type;
  job.options = perf::makeSweepOptions(sweep, args.ranks, runtime::dataTypeSize(*type));
  job.options.library = "chorus";
  job.options.transport = args.transport;
  job.options.dtype = args.dtype;
  job.options.progress = false;
  job.sweep = sweep;
  job.config = config;
  job.algo = algo;
  SweepResult result;
  std::fflush(stdout);
  try {
    result.ok = runSweepJob(job) == ExitCode::ok;
  } catch (const UserError& error) {
    printError(fmt::format("{}: {}", algo, error.what()));
    return result;
  }
  if (!std::filesystem::exists(json.path()) || std::filesystem::file_size(json.path()) == 0)
    return result;
  for (perf::BenchRecord& record : perf::readRecordsFile(json.path()))
    if (!record.inplace && record.supported && record.wrong == 0 && record.timeUs > 0)
      result.records.push_back(std::move(record));
  return result;
}

std::vector<selection::CandidateMeasurements> measureCandidates(
    const TuneArgs& args, perf::Collective collective,
    const std::vector<selection::AlgorithmChoice>& choices, int& done, int total,
    Clock::time_point start, perf::Progress& progress) {
  const std::string name(perf::collectiveName(collective));
  std::vector<selection::CandidateMeasurements> measured;
  for (const selection::AlgorithmChoice& choice : choices) {
    progress.show(done, progressLabel(done, total, choice.describe(), start));
    CommConfig config;
    config.transport = args.transport;
    config.algo = fmt::format("{}={}", name, choice.describe());
    config.tuningFile = "off";
    std::string maxBytes = args.maxBytes;
    if (choice.protocol != ir::Protocol::simple) {  // flagged protocols: small sizes only
      const std::uint64_t cap = parseSize(args.flaggedMax);
      if (cap < parseSize(args.minBytes)) {
        ++done;
        continue;
      }
      if (cap < parseSize(args.maxBytes)) maxBytes = args.flaggedMax;
    }
    const SweepResult result = runSweep(args, collective, config, choice.describe(), maxBytes);
    ++done;
    if (!result.ok) {
      progress.clear();
      fmt::print("  {:<44} dropped: it failed or computed a wrong element\n", choice.describe());
      continue;
    }
    selection::CandidateMeasurements m;
    m.choice = choice;
    m.steps = ir::stepCount(*selection::compiledPlan(choice.probeRequest(args.ranks, 0)));
    for (const perf::BenchRecord& record : result.records)
      m.points.push_back({record.bytes, record.timeUs, record.busbwGbps});
    measured.push_back(std::move(m));
  }
  return measured;
}

// `--algo auto` with the new table next to the per-size winners, measured in the same window:
// `rounds` times an auto sweep followed by a sweep of each distinct winner; medians per size.
// (Run-to-run drift on a shared machine is far larger than the gaps between close
// candidates, so auto is compared with the winner re-measured beside it, not with the
// tuning-time number.)
struct AutoCheck {
  std::map<std::uint64_t, double> autoUs;
  std::map<std::uint64_t, double> autoBusbw;
  std::map<std::uint64_t, std::string> autoAlgorithm;
  std::map<std::uint64_t, double> bestUs;  // the size's winner, re-measured
  bool empty() const { return autoUs.empty(); }
  // auto's time over the winner's at `bytes`, or 0 when either is missing.
  double ratio(std::uint64_t bytes) const {
    const auto a = autoUs.find(bytes);
    const auto b = bestUs.find(bytes);
    return a == autoUs.end() || b == bestUs.end() ? 0 : a->second / b->second;
  }
};

std::vector<std::string> distinctWinners(const selection::TuningTable& table) {
  std::vector<std::string> winners;
  for (const selection::TuningEntry& entry : table.entries)
    if (std::find(winners.begin(), winners.end(), entry.choice.describe()) == winners.end())
      winners.push_back(entry.choice.describe());
  return winners;
}

AutoCheck checkAuto(const TuneArgs& args, perf::Collective collective,
                    const selection::TuningTable& table, int& done, int total,
                    Clock::time_point start, perf::Progress& progress) {
  const std::string name(perf::collectiveName(collective));
  const std::vector<std::string> winners = distinctWinners(table);
  std::map<std::uint64_t, std::vector<double>> autoTimes, autoBusbw;
  std::map<std::string, std::map<std::uint64_t, std::vector<double>>> winnerTimes;
  AutoCheck check;
  for (int round = 0; round < args.verifyRounds; ++round) {
    progress.show(done, progressLabel(done, total, name + " --algo auto", start));
    CommConfig autoConfig;
    autoConfig.transport = args.transport;
    autoConfig.tuningFile = args.output;
    for (const perf::BenchRecord& record : runSweep(args, collective, autoConfig, "auto").records) {
      autoTimes[record.bytes].push_back(record.timeUs);
      autoBusbw[record.bytes].push_back(record.busbwGbps);
      check.autoAlgorithm[record.bytes] = record.algorithm;
    }
    ++done;
    for (const std::string& winner : winners) {
      progress.show(done, progressLabel(done, total, winner + " (again)", start));
      CommConfig config;
      config.transport = args.transport;
      config.algo = fmt::format("{}={}", name, winner);
      config.tuningFile = "off";
      for (const perf::BenchRecord& record : runSweep(args, collective, config, winner).records)
        winnerTimes[winner][record.bytes].push_back(record.timeUs);
      ++done;
    }
  }
  for (const auto& [bytes, times] : autoTimes) {
    check.autoUs[bytes] = perf::medianOf(times);
    check.autoBusbw[bytes] = perf::medianOf(autoBusbw[bytes]);
  }
  for (const selection::TuningMeasurement& m : table.measured) {
    const auto& times = winnerTimes[m.algorithm][m.bytes];
    if (!times.empty()) check.bestUs[m.bytes] = perf::medianOf(times);
  }
  return check;
}

// The markdown report of one collective: busbw (GB/s) of every candidate per size, the
// winner, and `--algo auto` with the new table next to the best.
std::string markdownReport(const TuneArgs& args, const std::string& collective,
                           const std::vector<selection::CandidateMeasurements>& measured,
                           const selection::TuningTable& table, const AutoCheck& check) {
  std::string text = fmt::format("#### {} — {} ranks, {} (busbw GB/s, out of place)\n\n",
                                 collective, args.ranks, args.transport);
  text += "| size |";
  for (const auto& m : measured)
    text += fmt::format(" `{}` |", m.choice.describe());
  text += " best | auto busbw (plan) | auto/best time |\n|---|";
  for (std::size_t i = 0; i < measured.size() + 3; ++i)
    text += "---|";
  text += "\n";
  for (const selection::TuningMeasurement& best : table.measured) {
    text += fmt::format("| {} |", formatSize(best.bytes));
    for (const auto& m : measured) {
      std::string cell = "–";
      for (const auto& point : m.points)
        if (point.bytes == best.bytes) cell = fmt::format("{:.3g}", point.busbwGbps);
      text += fmt::format(" {} |", cell);
    }
    std::string autoCell = "–";
    std::string ratio = "–";
    if (check.autoUs.count(best.bytes) != 0) {
      autoCell = fmt::format("{:.3g} (`{}`)", check.autoBusbw.at(best.bytes),
                             check.autoAlgorithm.at(best.bytes));
    }
    if (check.ratio(best.bytes) > 0) ratio = fmt::format("{:.2f}", check.ratio(best.bytes));
    text += fmt::format(" `{}` | {} | {} |\n", best.algorithm, autoCell, ratio);
  }
  return text + "\n";
}

void printSummary(const selection::TuningTable& table, const AutoCheck& check) {
  fmt::print("  {:>9}  {:<40} {:>10} {:>9}  {:<36} {:>7}{}\n", "size", "best", "time(us)", "busbw",
             "runner-up", "slower", check.empty() ? "" : "   auto/best");
  for (const selection::TuningMeasurement& m : table.measured) {
    std::string autoRatio;
    if (check.ratio(m.bytes) > 0) autoRatio = fmt::format("   {:.2f}", check.ratio(m.bytes));
    fmt::print("  {:>9}  {:<40} {:>10.2f} {:>9.2f}  {:<36} {:>6}{}\n", formatSize(m.bytes),
               m.algorithm, m.timeUs, m.busbwGbps, m.runnerUp.empty() ? "-" : m.runnerUp,
               m.runnerUp.empty() ? "-" : fmt::format("{:.2f}x", m.runnerUpTimeUs / m.timeUs),
               autoRatio);
  }
  fmt::print("  table:");
  for (const selection::TuningEntry& entry : table.entries)
    fmt::print(" {} {};", entry.range.describe(), entry.choice.describe());
  fmt::print("\n\n");
}

selection::CandidateGrid candidateGrid(const TuneArgs& args) {
  selection::CandidateGrid grid;
  grid.protocols.clear();
  for (const std::string& name : args.protocols) {
    const auto protocol = ir::parseProtocolName(name);
    if (!protocol)
      throw OptionError(fmt::format("--protocols: '{}' is unknown; use simple, ll, ll128", name));
    grid.protocols.push_back(*protocol);
  }
  grid.instances = args.instances;
  for (int instances : grid.instances)
    if (instances < 1 || instances > 32)
      throw OptionError(fmt::format("--instances {} is out of range; use 1..32", instances));
  grid.parameterValues = args.exploreParams;
  try {
    parseSize(args.flaggedMax);
  } catch (const OptionError& error) {
    throw OptionError(fmt::format("--flagged-max: {}", error.what()));
  }
  return grid;
}

// The existing output file, to add this run's tables to; a new one when there is none.
selection::TuningFile startingFile(const TuneArgs& args) {
  if (!std::filesystem::exists(args.output)) return {};
  try {
    return selection::readTuningFile(args.output);
  } catch (const UserError& error) {
    throw OptionError(fmt::format(
        "--output {} exists but is not a tuning file ({}); remove it or choose another path",
        args.output, error.what()));
  }
}

std::string hostDescription() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::string cpu;
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);) {
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  }
  return fmt::format("{}: {} x {}", host, std::thread::hardware_concurrency(),
                     cpu.empty() ? "cpu" : cpu);
}

// The command that reproduces this run, every setting spelled out (for the file and report).
std::string commandLineOf(const TuneArgs& args) {
  std::vector<std::string> instances;
  for (int count : args.instances)
    instances.push_back(std::to_string(count));
  return fmt::format(
      "chorus tune --ranks {} --transport {} --collectives {} -b {} -e {} -f {} --budget {} "
      "--batches {} --dtype {} --protocols {} --flagged-max {} --instances {}{} --tie {} "
      "--verify-rounds {}",
      args.ranks, args.transport, fmt::join(args.collectives, ","), args.minBytes, args.maxBytes,
      args.factor, args.budgetSeconds, args.maxBatches, args.dtype, fmt::join(args.protocols, ","),
      args.flaggedMax, fmt::join(instances, ","), args.exploreParams ? "" : " --no-params",
      args.tie, args.verifyRounds);
}

ExitCode runTune(const TuneArgs& args, const std::string& commandLine) {
  if (args.ranks < 2) throw OptionError("--ranks must be at least 2, e.g. --ranks 4");
  parseTransportOption(args.transport);
  if (!runtime::parseDataType(args.dtype))
    throw OptionError(fmt::format("unknown --dtype '{}'", args.dtype));
  if (args.tie < 0 || args.tie > 1)
    throw OptionError(fmt::format("--tie {} must be in 0..1 (0.05 = 5%)", args.tie));
  const selection::CandidateGrid grid = candidateGrid(args);
  selection::TuningFile file = startingFile(args);
  file.machine = hostDescription();
  file.command = commandLine;

  std::vector<std::pair<perf::Collective, std::vector<selection::AlgorithmChoice>>> plan;
  int total = 0;
  for (const std::string& name : args.collectives) {
    const auto collective = perf::parseCollective(name);
    if (!collective)
      throw OptionError(
          fmt::format("--collectives: unknown collective '{}'; use allreduce, "
                      "allgather, reducescatter, alltoall, broadcast, reduce",
                      name));
    const auto kind = *ir::parseCollectiveName(perf::collectiveName(*collective));
    auto choices = selection::tuningCandidates(kind, args.ranks, grid);
    total += static_cast<int>(choices.size());
    plan.emplace_back(*collective, std::move(choices));
  }
  fmt::print("chorus tune: {} ranks on {}, {} to {} x{}, {} candidate sweeps{}; writing {}\n\n",
             args.ranks, args.transport, args.minBytes, args.maxBytes, args.factor, total,
             args.verifyRounds > 0 ? fmt::format(" and {} rounds of --algo auto beside the winners",
                                                 args.verifyRounds)
                                   : std::string(),
             args.output);
  std::string report;
  const Clock::time_point start = Clock::now();
  perf::Progress progress(true, total);
  int done = 0;
  for (const auto& [collective, choices] : plan) {
    const std::string name(perf::collectiveName(collective));
    fmt::print("{}: {} candidates\n", name, choices.size());
    const auto measured =
        measureCandidates(args, collective, choices, done, total, start, progress);
    const auto kind = *ir::parseCollectiveName(name);
    selection::TuningTable table =
        selection::buildTuningTable(kind, args.ranks, args.transport, measured, args.tie);
    file.put(table);
    std::ofstream(args.output) << selection::tuningFileToJson(file);
    AutoCheck check;
    if (args.verifyRounds > 0) {
      total += args.verifyRounds * (1 + static_cast<int>(distinctWinners(table).size()));
      progress.setTotal(total);
      check = checkAuto(args, collective, table, done, total, start, progress);
    }
    progress.clear();
    printSummary(table, check);
    report += markdownReport(args, name, measured, table, check);
  }
  fmt::print("wrote {} ({} tables); use it with CHORUS_TUNING_FILE={}\n", args.output,
             file.tables.size(), args.output);
  if (!args.report.empty()) {
    std::ofstream out(args.report);
    out << fmt::format("Measured with `{}` on {}.\n\n", commandLine, file.machine) << report;
    if (!out) throw UserError(fmt::format("cannot write --report {}", args.report));
    fmt::print("wrote {}\n", args.report);
  }
  return ExitCode::ok;
}

}  // namespace

Command addTuneCommand(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "tune",
      "Measure every applicable algorithm and setting per size and write a selection table");
  auto args = std::make_shared<TuneArgs>();
  command->add_option("-n,--ranks", args->ranks, "Number of ranks")->required();
  command->add_option("--transport", args->transport, describeTransportOption())
      ->capture_default_str();
  command->add_option("--collectives", args->collectives, "Collectives to tune")
      ->delimiter(',')
      ->capture_default_str();
  command->add_option("-b,--minbytes", args->minBytes, "Smallest size")->capture_default_str();
  command->add_option("-e,--maxbytes", args->maxBytes, "Largest size")->capture_default_str();
  command->add_option("-f,--stepfactor", args->factor, "Size multiplier per step")
      ->capture_default_str();
  command->add_option("--budget", args->budgetSeconds, "Seconds of timed operations per size")
      ->capture_default_str();
  command->add_option("--batches", args->maxBatches, "Most batches per size (median)")
      ->capture_default_str();
  command->add_option("--dtype", args->dtype, "Element type")->capture_default_str();
  command->add_option("--protocols", args->protocols, "Protocols to try: simple, ll, ll128")
      ->delimiter(',')
      ->capture_default_str();
  command
      ->add_option("--flagged-max", args->flaggedMax,
                   "Largest size at which LL and LL128 are tried (latency protocols)")
      ->capture_default_str();
  command->add_option("--instances", args->instances, "Instance counts to try, e.g. 1,2")
      ->delimiter(',')
      ->capture_default_str();
  command->add_flag("!--no-params", args->exploreParams,
                    "Only each algorithm's default parameters (default: a few values each)");
  command
      ->add_option("--tie", args->tie,
                   "Times within this fraction of the best tie; ties go to the plan with "
                   "the fewest steps")
      ->capture_default_str();
  command
      ->add_option("-o,--output", args->output,
                   "Tuning file to write (tables of other sizes in it are kept)")
      ->capture_default_str();
  command->add_option("--report", args->report,
                      "Also write a markdown report: busbw per algorithm and size, auto vs best");
  command
      ->add_option("--verify-rounds", args->verifyRounds,
                   "Rounds of --algo auto (with the new table) beside each re-measured "
                   "winner; 0 skips the check")
      ->capture_default_str();
  return [args]() { return runTune(*args, commandLineOf(*args)); };
}

}  // namespace chorus::cli
