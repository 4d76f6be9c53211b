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

// Runs the 2-rank shm sweeps (forked processes, so it must be called before this process
// starts any thread), then the memory tests (copy and reduce on one thread, copy on
// host.cores threads). Takes a few seconds. Throws chorus::UserError when a sweep fails.
CalibrationReport calibrateShm(const topology::HostInfo& host);

}  // namespace chorus::cli
