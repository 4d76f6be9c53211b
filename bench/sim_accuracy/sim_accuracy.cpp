// Simulator accuracy on this machine (issue 5 acceptance; results in docs/simulator.md).
// For every library algorithm at the default settings (node-shaped ones at every node split),
// each collective and each rank count: measure it with `chorus bench --transport shm` and
// predict it with the simulator on a topology (default: the one `chorus topology detect`
// wrote), then report the relative error per row, its median and worst, and how often the
// predicted ranking of algorithms at a size matches the measured one.
//
//   build/bench/bench_sim_accuracy --ranks 2,4 -b 64K -e 16M --report accuracy.md
//
// `--keep DIR` keeps every run's bench JSON; `--measured DIR` (same sizes and --runs) measures
// nothing and predicts those runs again, e.g. with another calibration.
//
// Needs a topology with at least as many devices as the largest rank count
// (`chorus topology detect --ranks 4`). A benchmark, not a test: it asserts nothing.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "perf/collective.h"
#include "perf/record_json.h"
#include "perf/timing.h"
#include "selection/algorithm_choice.h"
#include "selection/tuning_builder.h"
#include "sim/simulator.h"
#include "support/error.h"
#include "support/size.h"
#include "support/strings.h"
#include "topology/presets.h"

namespace {

using namespace chorus;

struct Options {
  std::string chorus = CHORUS_CLI;
  std::string topology = "local";
  std::string ranks = "2,4";
  std::string collectives = "allreduce,allgather,reducescatter,alltoall,broadcast,reduce";
  std::string minBytes = "64K";
  std::string maxBytes = "16M";
  int factor = 4;
  double budget = 0.05;
  int batches = 20;
  int runs = 3;          // separate bench processes per choice; the fastest run's median counts
  std::string report;    // markdown file; empty = standard output only
  std::string keep;      // directory for the bench JSON files; empty = a temporary one
  std::string measured;  // predict from the JSON files a --keep run left here; no measuring
};

struct Row {
  int ranks = 0;
  std::string collective;
  std::string algorithm;
  std::uint64_t bytes = 0;
  double measuredUs = 0;
  double predictedUs = 0;
  bool scratch = false;  // the plan uses scratch buffers
  bool fitted = false;   // `chorus topology detect` fits the model to this algorithm and rank count
  double error() const { return (predictedUs - measuredUs) / measuredUs; }
};

// The (algorithm, ranks) pairs whose measurements `chorus topology detect` fits the local model
// to (docs/topology.md, "How `chorus topology detect` builds the local topology"): α from
// allreduce.ring at 2 ranks (step 2), the copy and reduce rate curves from allgather.ring and
// reducescatter.ring at 2 ranks (step 6), the wake latency from allreduce.ring at 2 × cores
// ranks (step 7). (Step 1 times broadcast.chain{pipeline=8,64}, not a default-settings row.)
// Their rows are no independent check of the model, so the report also quotes the error on
// the other rows alone.
bool fittedByDetect(const std::string& algorithm, int ranks, int cores) {
  if (ranks == 2)
    return algorithm == "allreduce.ring" || algorithm == "allgather.ring" ||
           algorithm == "reducescatter.ring";
  return algorithm == "allreduce.ring" && ranks == 2 * cores;
}

// The bench JSON file of one choice's run `round`.
std::filesystem::path recordsPath(const std::filesystem::path& dir, const std::string& collective,
                                  const std::string& choice, int ranks, int round) {
  return dir / fmt::format("{}-{}-{}-run{}.json", ranks, collective,
                           std::hash<std::string>{}(choice), round);
}

// Measures one choice over the sweep once; empty when the bench failed.
std::vector<perf::BenchRecord> measureOnce(const Options& o, const std::string& collective,
                                           const std::string& choice, int ranks, int round,
                                           const std::filesystem::path& dir) {
  const std::filesystem::path out = recordsPath(dir, collective, choice, ranks, round);
  const std::string command = fmt::format(
      "'{}' bench {} --algo '{}' --ranks {} --transport shm --bind core -b {} -e {} -f {} "
      "--no-inplace "
      "--no-check --budget {} --batches {} --json '{}' > /dev/null",
      o.chorus, collective, choice, ranks, o.minBytes, o.maxBytes, o.factor, o.budget, o.batches,
      out.string());
  if (std::system(command.c_str()) != 0) {
    fmt::print(stderr, "sim_accuracy: skipped {} at {} ranks: `{}` failed\n", choice, ranks,
               command);
    return {};
  }
  return perf::readRecordsFile(out.string());
}

// Keeps, per size, the record with the lowest median time.
void keepFastest(std::vector<perf::BenchRecord>& best, std::vector<perf::BenchRecord> records) {
  if (best.empty()) {
    best = std::move(records);
    return;
  }
  for (std::size_t i = 0; i < best.size() && i < records.size(); ++i)
    if (records[i].timeUs > 0 && records[i].timeUs < best[i].timeUs) best[i] = records[i];
}

// Share of algorithm pairs at one size that the prediction orders as measured.
struct Ranking {
  int sizes = 0;
  int bestMatches = 0;  // sizes where the predicted fastest is the measured fastest
  int pairs = 0;
  int concordant = 0;
};

void rank(const std::vector<const Row*>& rows, Ranking& ranking) {
  if (rows.size() < 2) return;
  ++ranking.sizes;
  auto byMeasured = std::min_element(
      rows.begin(), rows.end(), [](auto* a, auto* b) { return a->measuredUs < b->measuredUs; });
  auto byPredicted = std::min_element(
      rows.begin(), rows.end(), [](auto* a, auto* b) { return a->predictedUs < b->predictedUs; });
  if (*byMeasured == *byPredicted) ++ranking.bestMatches;
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t j = i + 1; j < rows.size(); ++j) {
      ++ranking.pairs;
      const bool measured = rows[i]->measuredUs < rows[j]->measuredUs;
      const bool predicted = rows[i]->predictedUs < rows[j]->predictedUs;
      if (measured == predicted) ++ranking.concordant;
    }
}

std::string reportMarkdown(const Options& o, const std::vector<Row>& rows,
                           const topology::Topology& topo) {
  std::string md;
  md += fmt::format(
      "Command: `bench_sim_accuracy --topology {} --ranks {} -b {} -e {} -f {} --budget {} "
      "--batches {} --runs {}`; topology `{}` ({}).\n\n",
      o.topology, o.ranks, o.minBytes, o.maxBytes, o.factor, o.budget, o.batches, o.runs, topo.name,
      topo.description);
  md +=
      "| ranks | collective | rows | median abs error | worst abs error | worst row | "
      "best predicted | pairs ordered right |\n|---|---|---|---|---|---|---|---|\n";
  std::map<std::pair<int, std::string>, std::vector<const Row*>> groups;
  for (const Row& r : rows)
    groups[{r.ranks, r.collective}].push_back(&r);
  std::vector<double> all;
  Ranking total;
  for (const auto& [key, group] : groups) {
    std::vector<double> errors;
    const Row* worst = group.front();
    for (const Row* r : group) {
      errors.push_back(std::abs(r->error()));
      all.push_back(std::abs(r->error()));
      if (std::abs(r->error()) > std::abs(worst->error())) worst = r;
    }
    std::map<std::uint64_t, std::vector<const Row*>> bySize;
    for (const Row* r : group)
      bySize[r->bytes].push_back(r);
    Ranking ranking;
    for (const auto& [bytes, at] : bySize)
      rank(at, ranking);
    total.sizes += ranking.sizes;
    total.bestMatches += ranking.bestMatches;
    total.pairs += ranking.pairs;
    total.concordant += ranking.concordant;
    md += fmt::format(
        "| {} | {} | {} | {:.1f}% | {:.1f}% | {} at {} ({:+.0f}%) | {} of {} | {:.0f}% |\n",
        key.first, key.second, group.size(), 100 * perf::medianOf(errors),
        100 * std::abs(worst->error()), worst->algorithm, formatSize(worst->bytes),
        100 * worst->error(), ranking.bestMatches, ranking.sizes,
        ranking.pairs ? 100.0 * ranking.concordant / ranking.pairs : 100.0);
  }
  const double worstAll = all.empty() ? 0 : *std::max_element(all.begin(), all.end());
  md += fmt::format("| all | | {} | **{:.1f}%** | **{:.1f}%** | | **{} of {}** | **{:.0f}%** |\n",
                    all.size(), 100 * perf::medianOf(all), 100 * worstAll, total.bestMatches,
                    total.sizes, total.pairs ? 100.0 * total.concordant / total.pairs : 100.0);
  // A summary row over the rows `keep` selects.
  auto subset = [&](const std::string& label, auto keep) {
    std::vector<double> errors;
    for (const Row& r : rows)
      if (keep(r)) errors.push_back(std::abs(r.error()));
    if (errors.empty()) return;
    md += fmt::format("| all, {} | | {} | {:.1f}% | {:.1f}% | | | |\n", label, errors.size(),
                      100 * perf::medianOf(errors),
                      100 * *std::max_element(errors.begin(), errors.end()));
  };
  subset("plans without scratch", [](const Row& r) { return !r.scratch; });
  subset("plans with scratch", [](const Row& r) { return r.scratch; });
  subset("rows detect fits the model to (*)", [](const Row& r) { return r.fitted; });
  subset("rows not used to fit the model", [](const Row& r) { return !r.fitted; });
  md += "\n";
  md +=
      "(*) `chorus topology detect` fits the local model's rates and latencies to these "
      "(algorithm, ranks) pairs (docs/topology.md), so they are no independent check.\n\n";
  md +=
      "<details><summary>Every row</summary>\n\n| ranks | algorithm | size | measured (us) | "
      "predicted (us) | error |\n|---|---|---|---|---|---|\n";
  for (const Row& r : rows)
    md += fmt::format("| {} | {}{} | {} | {:.1f} | {:.1f} | {:+.1f}% |\n", r.ranks, r.algorithm,
                      r.fitted ? " (*)" : "", formatSize(r.bytes), r.measuredUs, r.predictedUs,
                      100 * r.error());
  md += "\n</details>\n";
  return md;
}

int run(const Options& o) {
  std::vector<int> rankList;
  for (auto r : split(o.ranks, ','))
    rankList.push_back(std::stoi(std::string(r)));
  const int most = *std::max_element(rankList.begin(), rankList.end());
  topology::Fabric fabric(topology::loadTopology(o.topology));
  if (fabric.ranks() < most)
    throw OptionError(fmt::format(
        "topology '{}' has {} devices but --ranks asks for {}; run `chorus topology detect "
        "--ranks {}`",
        o.topology, fabric.ranks(), most, most));
  std::filesystem::path dir = o.measured.empty() ? o.keep : o.measured;
  if (dir.empty()) dir = std::filesystem::temp_directory_path() / "chorus-sim-accuracy";
  std::filesystem::create_directories(dir);

  // Every (ranks, collective, choice) to measure.
  struct Job {
    int ranks = 0;
    std::string collective;
    selection::AlgorithmChoice choice;
    std::vector<perf::BenchRecord> best;
    bool failed = false;
  };
  std::vector<Job> jobs;
  for (const int ranks : rankList) {
    for (const auto part : split(o.collectives, ',')) {
      const std::string collective(part);
      const auto kind = ir::parseCollectiveName(collective);
      if (!kind) throw OptionError(fmt::format("unknown collective '{}'", collective));
      selection::CandidateGrid grid;
      grid.parameterValues = false;
      for (auto& choice : selection::tuningCandidates(*kind, ranks, grid))
        jobs.push_back(Job{ranks, collective, std::move(choice), {}, false});
    }
  }
  // Rounds over every job, so a slow period of the host (docs/simulator.md) hits one round of
  // everything rather than every run of one algorithm; per size the fastest round counts.
  for (int round = 0; round < o.runs; ++round) {
    if (!o.measured.empty()) {  // earlier runs' files; a choice without any is left out
      for (Job& job : jobs) {
        const auto path = recordsPath(dir, job.collective, job.choice.describe(), job.ranks, round);
        if (std::filesystem::exists(path)) keepFastest(job.best, perf::readRecordsFile(path));
      }
      continue;
    }
    fmt::print(stderr, "sim_accuracy: round {} of {} ({} benches)\n", round + 1, o.runs,
               jobs.size());
    for (Job& job : jobs) {
      if (job.failed) continue;
      auto records = measureOnce(o, job.collective, job.choice.describe(), job.ranks, round, dir);
      if (records.empty()) {
        job.failed = true;
        continue;
      }
      keepFastest(job.best, std::move(records));
    }
  }

  std::vector<Row> rows;
  for (const Job& job : jobs) {
    if (job.failed) continue;
    const std::string text = job.choice.describe();
    const ir::Algorithm plan =
        algorithms::compileAlgorithm(job.choice.probeRequest(job.ranks, 0)).algorithm;
    const bool usesScratch = std::any_of(plan.ranks.begin(), plan.ranks.end(),
                                         [](const auto& r) { return r.scratchChunks > 0; });
    for (const auto& record : job.best) {
      if (!record.supported || record.timeUs <= 0) continue;
      sim::SimOptions options;
      options.bytes = record.bytes;
      const sim::SimResult predicted = sim::simulate(plan, fabric, options);
      rows.push_back(Row{job.ranks, job.collective, text, record.bytes, record.timeUs,
                         predicted.seconds * 1e6, usesScratch,
                         fittedByDetect(text, job.ranks, fabric.topology().node.cores)});
      fmt::print(
          "{} ranks {:<40} {:>8}  measured {:>10.1f} us  predicted {:>10.1f} us  {:+6.1f}%\n",
          job.ranks, text, formatSize(record.bytes), record.timeUs, predicted.seconds * 1e6,
          100 * rows.back().error());
      std::fflush(stdout);
    }
  }
  const std::string md = reportMarkdown(o, rows, fabric.topology());
  fmt::print("\n{}", md);
  if (!o.report.empty()) {
    std::ofstream out(o.report);
    out << md;
    if (!out) throw UserError(fmt::format("cannot write {}", o.report));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Predicted (simulator) vs measured (chorus bench, shm) time per algorithm"};
  app.add_option("--chorus", o.chorus, "The chorus CLI")->capture_default_str();
  app.add_option("--topology", o.topology, "Preset or topology JSON (default: local)")
      ->capture_default_str();
  app.add_option("--ranks", o.ranks, "Rank counts, comma separated")->capture_default_str();
  app.add_option("--collectives", o.collectives, "Collectives, comma separated")
      ->capture_default_str();
  app.add_option("-b,--minbytes", o.minBytes, "Smallest size")->capture_default_str();
  app.add_option("-e,--maxbytes", o.maxBytes, "Largest size")->capture_default_str();
  app.add_option("-f,--stepfactor", o.factor, "Size factor")->capture_default_str();
  app.add_option("--budget", o.budget, "Seconds of timed operations per size")
      ->capture_default_str();
  app.add_option("--batches", o.batches, "Most batches per size")->capture_default_str();
  app.add_option("--runs", o.runs, "Bench runs per choice (the fastest counts)")
      ->capture_default_str();
  app.add_option("--report", o.report, "Also write the markdown report to FILE");
  app.add_option("--keep", o.keep, "Keep the bench JSON files in DIR");
  app.add_option("--measured", o.measured,
                 "Measure nothing: predict the runs that --keep DIR kept (same sizes and --runs), "
                 "e.g. after a new `chorus topology detect` or a simulator change");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    fmt::print(stderr, "sim_accuracy: error: {}\n", e.what());
    return 1;
  }
}
