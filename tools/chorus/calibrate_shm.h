// Calibration of chorus's shm transport and this host's memory for `chorus topology detect`
// (CLI tool); the method is in docs/topology.md "How detect calibrates".
#pragma once

#include <cstdint>
#include <vector>

#include "topology/detect.h"

namespace chorus::cli {

struct CalibrationReport {
  topology::Calibration calibration;
  // The raw measurements behind it: µs per call of 2-rank shm sweeps (best batch of each
  // sweep, median over repeats).
  double ringUs = 0;        // allreduce.ring at 8..512 B
  double chainShortUs = 0;  // broadcast.chain{pipeline=shortPipeline} at 4 KiB
  double chainLongUs = 0;   // broadcast.chain{pipeline=longPipeline} at 4 KiB
  int shortPipeline = 0;
  int longPipeline = 0;
  int threads = 0;  // threads of the memory-bandwidth test
  // Step 4: sizes of the curve sweeps and µs per call of allgather.ring / reducescatter.ring
  // there (median batch, fastest of the repeats).
  std::vector<std::uint64_t> curveSizes;
  std::vector<double> copyUs;
  std::vector<double> reduceUs;
  int curveAttempts = 0;         // fits of step 4 (more than 1: earlier ones were disturbed)
  bool curvesDisturbed = false;  // the last fit still looked disturbed
  // Step 5: ranks of the wake-latency sweep (0: not run) and its µs per call of allreduce.ring
  // at 512 B and 4 KiB.
  int wakeRanks = 0;
  std::vector<double> wakeUs;
};

// How much calibrateShm measures. The defaults take about half a minute on 2 idle cores;
// quick() sweeps each kind once and fits once (a few seconds: coarser numbers, for a first
// look and for tests, where sanitizers make every sweep many times slower).
struct CalibrationEffort {
  int repeats = 3;        // latency sweeps of steps 1, 2 and 5 (median, resp. fastest)
  int curveRepeats = 6;   // alternating rate-curve sweeps of step 4 (fastest of them)
  int curveAttempts = 3;  // fits of step 4 while the host looks disturbed
  int maxBatches = 15;    // timed batches per size in each sweep
  static CalibrationEffort quick() { return {1, 1, 1, 3}; }
};

// Runs the 2-rank shm sweeps (forked processes, so it must be called before this process
// starts any thread), then the memory tests (copy and reduce on one thread, copy on
// host.cores threads). Throws chorus::UserError when a sweep fails.
CalibrationReport calibrateShm(const topology::HostInfo& host,
                               const CalibrationEffort& effort = {});

}  // namespace chorus::cli
