// Runs one chorus benchmark sweep on N ranks (CLI tool): threads of this process over the
// thread transport, or forked processes over shm or tcp (transport_option.h). Shared by
// `chorus bench` and `chorus tune`.
#pragma once

#include <string>

#include "chorus/chorus.h"
#include "cli.h"
#include "perf/bench_args.h"
#include "perf/bench_driver.h"
#include "transport/registry.h"

namespace chorus::cli {

struct SweepJob {
  int ranks = 0;
  // --transport (transport_option.h): "thread" by default.
  std::string transport{transport::defaultTransport(transport::TransportReach::oneProcess).name};
  DataType type = DataType::float32;
  perf::SweepOptions options;  // from perf::makeSweepOptions
  perf::BenchArgs sweep;       // the table, --json and --plot settings
  CommConfig config;           // the communicators' configuration (CHORUS_ALGO, tuning, ...)
  std::string algo = "auto";   // what --algo said, for the title and error messages
  // Forked ranks only: pin rank r to the r-th CPU this process may run on (modulo their
  // number), as Open MPI's --bind-to core does; stabilizes timings on small hosts.
  bool bindCores = false;
  // Bytes past a page boundary where the user buffers start (0 = page aligned; a malloc'd
  // buffer of 128 KiB or more starts 16 bytes past one).
  std::size_t bufferOffset = 0;
  // The user buffers come from chorus::memAlloc (registered memory) instead of the heap.
  bool registered = false;
  // The ranks run on executor "cuda" with device buffers and a stream each (--device cuda);
  // the title then shows the GPU's device-to-device copy rate, the ceiling.
  bool onGpu = false;
};

// Runs the sweep; rank 0 prints the table (unless job.sweep.printTable is off) and writes the
// --json / --plot files. Returns ok when every element was right, failure on wrong results or
// a rank's failure, usage for bad options. Forks (shm, tcp) before any thread exists in this
// process; the parent only waits.
ExitCode runSweepJob(const SweepJob& job);

// Runs the sweep as one rank of `comm` (created by the caller from a launcher's environment);
// rank 0 prints. Returns like runSweepJob.
ExitCode runLaunchedRank(Communicator& comm, const SweepJob& job);

// Pins the calling process to the r-th CPU of its current affinity mask (modulo their count);
// warns on stderr when it cannot.
void bindToCore(int r);

}  // namespace chorus::cli
