// Algorithm (docs/topology.md "How detect calibrates"):
//   1. Step overhead o: broadcast.chain at 2 ranks and 4 KiB with pipeline 8 and 64. Back to
//      back calls are limited by the busier rank's steps (the root sends P pieces and copies
//      once), so the time per call grows by o per piece: o = (T64 - T8) / 56.
//   2. Message latency α: allreduce.ring at 2 ranks, 8..512 B. Back to back calls form a
//      cycle of 2 messages and 3 steps (send, recvReduceCopySend, recv), the same as one call
//      alone: α = (T - 3o) / 2. The per-call cost of the API is folded into α.
//   3. (Run before 4, in the calling thread.) Copy rate: one thread memcpy of 256 KiB tiles between
//   two 64 MiB buffers (larger than
//      any last-level cache), median of 5 runs. Memory bandwidth: the same on host.cores
//      threads at once, each with its own buffers, aggregate bytes over the slowest thread's
//      time. Reduce rate: one thread float32 sum (runtime::reduceElements) of two 64 MiB
//      buffers into a third, bytes of the output per second. These flat rates are used only
//      where the curves of step 4 are absent.
//   4. Rate curves: allgather.ring and reducescatter.ring at 2 ranks (bound to cores), 64 KiB
//      to 64 MiB, median batch, fastest of 6 alternating sweeps (CalibrationEffort). For each size,
//      bisection finds the flat copy rate at which the simulator predicts the measured allgather
//      time, then (with the copy curve in place) the reduce rate for reducescatter; each point is
//      keyed by the node's working set, so caches show up as faster small calls. If the
//      64 KiB point copies slower than 3/4 of one thread's DRAM rate (step 3), the host was
//      in a slow period: the sweeps run again, up to 3 times, and the report says so.
//   5. Wake latency: allreduce.ring at 2 x cores ranks (bound to cores, so every core runs
//      two), 512 B and 4 KiB, median batch, fastest of 3 sweeps. The simulator's time grows
//      linearly with NodeModel::wakeLatency w (each message waits w with probability 1/2), so
//      w = (T - T(0)) / (T(1 us) - T(0)) us, the median over the sizes.
// Each latency sweep's time is its best batch (the least disturbed by other processes), the
// median over 3 repeats. `--quick` (CalibrationEffort::quick) sweeps and fits once.
#include "calibrate_shm.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/registry.h"
#include "bench_launch.h"
#include "perf/aligned_buffer.h"
#include "perf/record_json.h"
#include "perf/timing.h"
#include "runtime/reduce_kernels.h"
#include "sim/simulator.h"
#include "support/error.h"
#include "topology/fabric.h"
#include "transport/registry.h"

namespace chorus::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kShortPipeline = 8;
constexpr int kLongPipeline = 64;
constexpr std::size_t kTileBytes = 256 << 10;
constexpr std::size_t kBufferBytes = 64 << 20;
constexpr int kMemoryRuns = 5;
// The rate-curve sweeps (step 4) and the bisection's range.
constexpr const char* kCurveMin = "64K";
constexpr const char* kCurveMax = "64M";
constexpr unsigned kCurveFactor = 4;
constexpr double kMinFitRate = 1e8;   // 0.1 GB/s
constexpr double kMaxFitRate = 2e11;  // 200 GB/s
// Step 4's check against slow periods: the smallest working set's fitted copy rate must reach
// this share of one thread's DRAM copy rate, else the sweeps run again (at most
// CalibrationEffort::curveAttempts times, kCurveRetryPauseSeconds apart).
constexpr double kDisturbedShare = 0.75;
constexpr int kCurveRetryPauseSeconds = 5;
// The wake-latency sweep (step 5).
constexpr const char* kWakeMin = "512";
constexpr const char* kWakeMax = "4K";
constexpr int kMaxWakeRanks = 256;

// Four significant digits: what the measurements can tell apart.
double significant(double value) {
  return value > 0 ? std::stod(fmt::format("{:.4g}", value)) : value;
}

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A private temporary file for one sweep's records.
class TempFile {
 public:
  TempFile() {
    char name[] = "/tmp/chorus-detect-XXXXXX";
    const int fd = mkstemp(name);
    if (fd < 0)
      throw UserError("cannot create a temporary file in /tmp for chorus topology detect");
    close(fd);
    path_ = name;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The records of one shm sweep of `algorithm` at `ranks` ranks (bound to cores).
std::vector<perf::BenchRecord> sweepRecords(perf::Collective collective,
                                            const std::string& algorithm,
                                            const std::string& minBytes,
                                            const std::string& maxBytes, int maxBatches,
                                            unsigned factor = 8, int ranks = 2) {
  const std::string name(perf::collectiveName(collective));
  perf::BenchArgs sweep;
  sweep.collective = name;
  sweep.minBytes = minBytes;
  sweep.maxBytes = maxBytes;
  sweep.factor = factor;
  sweep.inplace = false;
  sweep.check = true;
  sweep.budgetSeconds = 0.03;
  sweep.maxBatches = maxBatches;
  sweep.printTable = false;
  TempFile json;
  sweep.jsonPath = json.path();
  // The transport processes on one host use: shared memory.
  const std::string& shm = transport::defaultTransport(transport::TransportReach::oneHost).name;
  SweepJob job;
  job.ranks = ranks;
  job.transport = shm;
  job.type = DataType::float32;
  job.options = perf::makeSweepOptions(sweep, job.ranks, 4);
  job.options.library = "chorus";
  job.options.transport = shm;
  job.options.progress = false;
  job.sweep = sweep;
  job.config.transport = shm;
  job.config.algo = fmt::format("{}={}", name, algorithm);
  job.config.tuningFile = "off";
  job.algo = algorithm;
  job.bindCores = true;
  std::fflush(stdout);
  const ExitCode code = runSweepJob(job);
  std::vector<perf::BenchRecord> records;
  if (code == ExitCode::ok && std::filesystem::exists(json.path()) &&
      std::filesystem::file_size(json.path()) > 0) {
    for (const perf::BenchRecord& record : perf::readRecordsFile(json.path()))
      if (!record.inplace && record.supported && record.wrong == 0 && record.minUs > 0)
        records.push_back(record);
  }
  if (records.empty()) {
    throw UserError(fmt::format(
        "calibration failed: the {}-rank shm sweep of {} did not complete; check /dev/shm, or "
        "run `chorus topology detect --no-calibrate` for the defaults",
        ranks, algorithm));
  }
  return records;
}

// Best-batch µs per call of each size of one 2-rank shm sweep of `algorithm`.
std::vector<double> sweepMinUs(perf::Collective collective, const std::string& algorithm,
                               const std::string& minBytes, const std::string& maxBytes,
                               int maxBatches) {
  std::vector<double> times;
  for (const auto& record : sweepRecords(collective, algorithm, minBytes, maxBytes, maxBatches))
    times.push_back(record.minUs);
  return times;
}

// One sweep's median-batch seconds per size, folded into `fastest` (per size, the fastest
// so far; a shared host has slow periods, docs/simulator.md); the sizes go to `sizes`.
void foldFastestSweep(std::vector<perf::BenchRecord> records, std::vector<std::uint64_t>& sizes,
                      std::vector<double>& fastest) {
  if (fastest.empty()) {
    fastest.assign(records.size(), std::numeric_limits<double>::infinity());
    sizes.clear();
    for (const auto& record : records)
      sizes.push_back(record.bytes);
  }
  for (std::size_t i = 0; i < records.size() && i < fastest.size(); ++i)
    fastest[i] = std::min(fastest[i], records[i].timeUs * 1e-6);
}

// The flat rate (bytes/s) at which the simulator predicts `seconds` for `plan` at `bytes` on a
// 2-rank local topology built from `trial` (bisection in log space; time falls as the rate
// rises). `setRate` stores a candidate into the trial calibration.
template <typename SetRate>
double fitRate(const topology::HostInfo& host, topology::Calibration trial,
               const ir::Algorithm& plan, std::uint64_t bytes, double seconds, SetRate setRate) {
  double lo = kMinFitRate;
  double hi = kMaxFitRate;
  for (int i = 0; i < 60; ++i) {
    const double mid = std::sqrt(lo * hi);
    setRate(trial, mid);
    topology::Fabric fabric(topology::localTopology(host, trial, 2));
    sim::SimOptions options;
    options.bytes = bytes;
    if (sim::simulate(plan, fabric, options).seconds > seconds)
      lo = mid;
    else
      hi = mid;
  }
  return std::sqrt(lo * hi);
}

ir::Algorithm compileAt(const std::string& name, int ranks) {
  algorithms::BuildRequest request;
  request.algorithm = name;
  request.ranks = ranks;
  return algorithms::compileAlgorithm(request).algorithm;
}

double workingSetOf(const ir::Algorithm& plan, std::uint64_t bytes, topology::Fabric& fabric) {
  sim::SimOptions options;
  options.bytes = bytes;
  return sim::simulate(plan, fabric, options).workingSet;
}

// Step 4: copy and reduce rate curves fitted to allgather.ring and reducescatter.ring.
void fitCurves(const topology::HostInfo& host, const CalibrationEffort& effort,
               topology::Calibration& c, CalibrationReport& report) {
  // The two sweeps alternate, so a slow period of the host hits both alike.
  std::vector<std::uint64_t> copySizes, reduceSizes;
  std::vector<double> copyTimes, reduceTimes;
  for (int repeat = 0; repeat < effort.curveRepeats; ++repeat) {
    foldFastestSweep(sweepRecords(perf::Collective::allgather, "allgather.ring", kCurveMin,
                                  kCurveMax, effort.maxBatches, kCurveFactor),
                     copySizes, copyTimes);
    foldFastestSweep(sweepRecords(perf::Collective::reducescatter, "reducescatter.ring", kCurveMin,
                                  kCurveMax, effort.maxBatches, kCurveFactor),
                     reduceSizes, reduceTimes);
  }
  const ir::Algorithm allgather = compileAt("allgather.ring", 2);
  const ir::Algorithm reducescatter = compileAt("reducescatter.ring", 2);
  // The trial's flat rates only matter for the rate not being fitted; the bus must not bind
  // (the fit measures what it allows).
  topology::Calibration trial = topology::defaultCalibration();
  trial.messageLatency = c.messageLatency;
  trial.stepOverhead = c.stepOverhead;
  trial.memoryBandwidth = kMaxFitRate * 4;
  topology::Fabric fabric(topology::localTopology(host, trial, 2));
  for (std::size_t i = 0; i < copyTimes.size(); ++i) {
    const double rate = fitRate(host, trial, allgather, copySizes[i], copyTimes[i],
                                [](topology::Calibration& t, double r) { t.copyRate = r; });
    c.copyCurve.push_back({workingSetOf(allgather, copySizes[i], fabric), significant(rate)});
    report.curveSizes.push_back(copySizes[i]);
    report.copyUs.push_back(copyTimes[i] * 1e6);
  }
  trial.copyCurve = c.copyCurve;
  for (std::size_t i = 0; i < reduceTimes.size(); ++i) {
    const double rate = fitRate(host, trial, reducescatter, reduceSizes[i], reduceTimes[i],
                                [](topology::Calibration& t, double r) { t.reduceRate = r; });
    c.reduceCurve.push_back(
        {workingSetOf(reducescatter, reduceSizes[i], fabric), significant(rate)});
    report.reduceUs.push_back(reduceTimes[i] * 1e6);
  }
}

// Step 5: NodeModel::wakeLatency from allreduce.ring at 2 x cores ranks; 0 when the host has
// too many cores to oversubscribe within the registry's rank limit.
double fitWakeLatency(const topology::HostInfo& host, const CalibrationEffort& effort,
                      const topology::Calibration& c, CalibrationReport& report) {
  const int ranks = 2 * std::max(1, host.cores);
  if (ranks > kMaxWakeRanks) return 0;
  std::vector<double> fastest;
  std::vector<std::uint64_t> sizes;
  for (int repeat = 0; repeat < effort.repeats; ++repeat)
    foldFastestSweep(sweepRecords(perf::Collective::allreduce, "allreduce.ring", kWakeMin, kWakeMax,
                                  effort.maxBatches, 8, ranks),
                     sizes, fastest);
  const ir::Algorithm plan = compileAt("allreduce.ring", ranks);
  // Steps 1-4 so far; the flat rates (measured later) do not matter next to the curves.
  topology::Calibration trial = topology::defaultCalibration();
  trial.messageLatency = c.messageLatency;
  trial.stepOverhead = c.stepOverhead;
  trial.copyCurve = c.copyCurve;
  trial.reduceCurve = c.reduceCurve;
  const auto predict = [&](double wake, std::uint64_t bytes) {
    topology::Topology topo = topology::localTopology(host, trial, ranks);
    topo.node.wakeLatency = wake;
    topology::Fabric fabric(topo);
    sim::SimOptions options;
    options.bytes = bytes;
    return sim::simulate(plan, fabric, options).seconds;
  };
  std::vector<double> fits;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const double base = predict(0, sizes[i]);
    const double slope = (predict(1e-6, sizes[i]) - base) / 1e-6;
    if (slope > 0) fits.push_back(std::max(0.0, (fastest[i] - base) / slope));
  }
  report.wakeRanks = ranks;
  report.wakeUs.clear();
  for (double seconds : fastest)
    report.wakeUs.push_back(seconds * 1e6);
  return fits.empty() ? 0 : perf::medianOf(fits);
}

// Copies src to dst in 256 KiB tiles.
void copyTiles(std::byte* dst, const std::byte* src, std::size_t bytes) {
  for (std::size_t offset = 0; offset < bytes; offset += kTileBytes)
    std::memcpy(dst + offset, src + offset, std::min(kTileBytes, bytes - offset));
}

double copyRate() {
  perf::AlignedBuffer src(kBufferBytes), dst(kBufferBytes);
  copyTiles(dst.data(), src.data(), kBufferBytes);  // warm up
  std::vector<double> rates;
  for (int run = 0; run < kMemoryRuns; ++run) {
    const auto start = Clock::now();
    copyTiles(dst.data(), src.data(), kBufferBytes);
    rates.push_back(static_cast<double>(kBufferBytes) / secondsSince(start));
  }
  return perf::medianOf(rates);
}

double reduceRate() {
  perf::AlignedBuffer a(kBufferBytes), b(kBufferBytes), out(kBufferBytes);
  constexpr std::size_t kTileElements = kTileBytes / sizeof(float);
  const auto reduceAll = [&] {
    for (std::size_t offset = 0; offset < kBufferBytes; offset += kTileBytes)
      runtime::reduceElements(DataType::float32, ReduceOp::sum, out.data() + offset,
                              a.data() + offset, b.data() + offset, kTileElements);
  };
  reduceAll();
  std::vector<double> rates;
  for (int run = 0; run < kMemoryRuns; ++run) {
    const auto start = Clock::now();
    reduceAll();
    rates.push_back(static_cast<double>(kBufferBytes) / secondsSince(start));
  }
  return perf::medianOf(rates);
}

// Aggregate copy bandwidth of `threads` threads copying their own buffers at once.
double memoryBandwidth(int threads) {
  const std::size_t bytes =
      std::clamp<std::size_t>((512u << 20) / static_cast<std::size_t>(threads), 8u << 20,
                              kBufferBytes) /
      kTileBytes * kTileBytes;
  std::vector<perf::AlignedBuffer> src, dst;
  for (int t = 0; t < threads; ++t) {
    src.emplace_back(bytes);
    dst.emplace_back(bytes);
  }
  std::vector<double> rates;
  for (int run = 0; run <= kMemoryRuns; ++run) {  // run 0 warms up
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire))
          std::this_thread::yield();
        copyTiles(dst[static_cast<std::size_t>(t)].data(), src[static_cast<std::size_t>(t)].data(),
                  bytes);
      });
    }
    while (ready.load() < threads)
      std::this_thread::yield();
    const auto start = Clock::now();
    go.store(true, std::memory_order_release);
    for (std::thread& worker : workers)
      worker.join();
    const double seconds = secondsSince(start);
    if (run > 0) rates.push_back(static_cast<double>(bytes) * threads / seconds);
  }
  return perf::medianOf(rates);
}

}  // namespace

CalibrationReport calibrateShm(const topology::HostInfo& host, const CalibrationEffort& effort) {
  CalibrationReport report;
  report.shortPipeline = kShortPipeline;
  report.longPipeline = kLongPipeline;
  // 1-2: the forked sweeps, before any thread exists in this process.
  std::vector<double> ring, chainShort, chainLong;
  for (int repeat = 0; repeat < effort.repeats; ++repeat) {
    for (double us :
         sweepMinUs(perf::Collective::allreduce, "allreduce.ring", "8", "512", effort.maxBatches))
      ring.push_back(us);
    chainShort.push_back(sweepMinUs(perf::Collective::broadcast,
                                    fmt::format("broadcast.chain{{pipeline={}}}", kShortPipeline),
                                    "4K", "4K", effort.maxBatches)
                             .front());
    chainLong.push_back(sweepMinUs(perf::Collective::broadcast,
                                   fmt::format("broadcast.chain{{pipeline={}}}", kLongPipeline),
                                   "4K", "4K", effort.maxBatches)
                            .front());
  }
  report.ringUs = perf::medianOf(ring);
  report.chainShortUs = perf::medianOf(chainShort);
  report.chainLongUs = perf::medianOf(chainLong);
  topology::Calibration& c = report.calibration;
  c.stepOverhead = std::max(
      0.0, (report.chainLongUs - report.chainShortUs) / (kLongPipeline - kShortPipeline) * 1e-6);
  c.messageLatency = std::max(0.0, (report.ringUs * 1e-6 - 3 * c.stepOverhead) / 2);
  // 3 (one thread, the calling one: forking stays safe).
  c.copyRate = copyRate();
  c.reduceRate = reduceRate();
  // 4-5 (still before any thread): the rate curves, then the wake latency. A cache-resident
  // 2-rank copy slower than one thread's DRAM copy means the host was in a slow period
  // (docs/topology.md): fit again, up to effort.curveAttempts times.
  for (report.curveAttempts = 1;; ++report.curveAttempts) {
    fitCurves(host, effort, c, report);
    report.curvesDisturbed =
        c.copyCurve.empty() || c.copyCurve.front().rate < kDisturbedShare * c.copyRate;
    if (!report.curvesDisturbed || report.curveAttempts >= effort.curveAttempts) break;
    c.copyCurve.clear();
    c.reduceCurve.clear();
    report.curveSizes.clear();
    report.copyUs.clear();
    report.reduceUs.clear();
    std::this_thread::sleep_for(std::chrono::seconds(kCurveRetryPauseSeconds));
  }
  c.wakeLatency = fitWakeLatency(host, effort, c, report);
  report.threads = std::max(1, host.cores);
  c.memoryBandwidth = memoryBandwidth(report.threads);
  for (double* value : {&c.messageLatency, &c.stepOverhead, &c.copyRate, &c.reduceRate,
                        &c.memoryBandwidth, &c.wakeLatency})
    *value = significant(*value);
  return report;
}

}  // namespace chorus::cli
