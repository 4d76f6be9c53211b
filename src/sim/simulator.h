// The event-driven simulator (docs/design.md "Layers"): executes an ir::Algorithm on a topology
// with the runtime's semantics and predicts its time. Threadblocks run their steps in order,
// once per tile (chunks are cut to the FIFO slot as in the interpreter, GC3 §6.2); a
// connection is a FIFO of `slots` messages; a message occupies every resource on its route,
// sharing bandwidth with the flows there (congestion), and arrives α after it is sent; local
// work (copies out of a slot, reductions at γ) runs on the device's engines. On a device that
// moves steps in slices (DeviceModel::slices > 1, the GPU presets) engine and wire pipeline
// and a receiver starts on a message's first slice (docs/simulator.md "Passes").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/algorithm.h"
#include "perf/collective.h"
#include "topology/fabric.h"

namespace chorus::sim {

struct SimOptions {
  std::uint64_t bytes = 0;      // the call's size, nccl-tests convention (chorus bench's "size")
  std::size_t elementSize = 4;  // float32
  int slots = 8;                // FIFO depth (CHORUS_SLOTS)
  std::size_t slotBytes = 256 << 10;  // FIFO slot payload (CHORUS_SLOT_BYTES)
  bool tiling = true;  // false: one tile per chunk, unbounded slots (closed-form checks)
  // Steady state: once the finish time of the call cut to its first M, M + K, M + 2K, ...
  // tiles grows by the same period 3 times in a row (every tile repeats the one K tiles
  // before), the remaining tiles are extrapolated instead of simulated (docs/simulator.md
  // "Steady state"). false: simulate every tile. Never used with criticalPath or trace.
  bool extrapolate = true;
  bool criticalPath = false;  // record the chain of steps that decided the finish time
  bool trace = false;         // record every step for a Chrome trace
};

struct LinkUse {
  std::string name;        // the Fabric resource's name
  double bytes = 0;        // carried during the call
  double busy = 0;         // seconds with at least one flow on it
  double utilization = 0;  // bytes / (bandwidth * predicted time)
};

// One executed step (a tile of it): what it was and when it ran.
struct StepRecord {
  int rank = 0;
  int tb = 0;
  int step = 0;
  int tile = 0;
  ir::OpKind op = ir::OpKind::nop;
  int peer = -1;  // the rank it received from or sent to, -1 for local steps
  std::uint64_t bytes = 0;
  double ready = 0;  // all its inputs were there (dependencies, data, a free slot)
  double start = 0;  // its work started
  double end = 0;    // finished (its message left, or its local work ended)
  // Critical path only: why it could not start earlier.
  std::string waitedFor;  // "previous step", "data from rank 3", "tb 2 step 5", "free slot"
};

struct SimResult {
  std::uint64_t bytes = 0;        // as requested
  double seconds = 0;             // predicted time of the call
  double algbw = 0;               // bytes / seconds
  double busbw = 0;               // algbw * nccl-tests bus factor
  int tiles = 1;                  // times each threadblock ran its steps
  int tilesSimulated = 1;         // tiles simulated step by step (< tiles when extrapolated)
  bool extrapolated = false;      // the tiles after tilesSimulated were extrapolated
  double workingSet = 0;          // bytes of the busiest node's input, output and scratch buffers
  std::size_t stepsExecuted = 0;  // step-tiles simulated (the steady-state checks' included)
  std::size_t events = 0;         // events simulated (likewise)
  double simSeconds = 0;          // wall time the simulation took
  std::vector<LinkUse> links;     // resources that carried data, busiest first
  std::vector<StepRecord> criticalPath;  // first to last, when SimOptions::criticalPath
  std::vector<StepRecord> trace;         // every step-tile, when SimOptions::trace
};

// Predicts one call. The algorithm's ranks map to the fabric's ranks 0..nranks-1 in order.
// Throws chorus::OptionError when the algorithm has more ranks than the fabric or bytes is 0,
// and chorus::SimulationError naming the blocked steps when the program deadlocks.
SimResult simulate(const ir::Algorithm& algorithm, topology::Fabric& fabric,
                   const SimOptions& options);

// The nccl-tests collective whose size convention and bus factor a plan of `kind` follows;
// nullopt for custom collectives (their size is the whole buffer, bus factor 1).
std::optional<perf::Collective> benchCollective(ir::CollectiveKind kind);

// Chrome trace-event JSON (chrome://tracing, Perfetto) of a result recorded with trace = true:
// one process per rank, one thread per threadblock, one slice per step-tile.
std::string chromeTraceJson(const ir::Algorithm& algorithm, const SimResult& result);

}  // namespace chorus::sim
