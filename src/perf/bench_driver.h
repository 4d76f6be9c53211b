// The size sweep every benchmark program runs (perf layer): for each size, out-of-place then
// in-place, warm up and time (timing.h), then re-initialise the inputs, run once and count the
// wrong elements on every rank (wrong outputs, and changed inputs out of place). A library
// plugs in through RankRunner.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "chorus/types.h"
#include "perf/collective.h"
#include "perf/pattern.h"
#include "perf/record.h"
#include "perf/timing.h"

namespace chorus::perf {

// One variant of one row: the data it computes and whether it runs in place.
struct BenchCase {
  DataCase data;
  bool inplace = false;
};

// One rank's side of a library under test. Every rank of a sweep gets the same calls in the
// same order; each call may communicate.
class RankRunner {
 public:
  virtual ~RankRunner() = default;
  virtual int rank() const = 0;
  virtual int nranks() const = 0;
  // Empty when the library can run `benchCase`; otherwise why not. The same on every rank.
  virtual std::string unsupportedReason(const BenchCase& benchCase) const;
  // Untimed set-up: inputs of fill round `seed` (inputValue) and sentinel outputs.
  virtual void prepare(const BenchCase& benchCase, int seed) = 0;
  // Runs the collective `iterations` times back to back.
  virtual void run(const BenchCase& benchCase, std::int64_t iterations) = 0;
  // Wrong elements of this rank's output, plus, out of place, the elements of its input that
  // changed (countChangedInput in pattern.h), after prepare(benchCase, seed) and one run().
  virtual std::int64_t countWrong(const BenchCase& benchCase, int seed) = 0;
  // Elementwise maximum / sum of `values` over all ranks, in place (untimed helpers).
  virtual void allReduceMax(std::span<double> values) = 0;
  virtual void allReduceSum(std::span<double> values) = 0;
  // The algorithm that ran for `benchCase` (called after run()).
  virtual std::string algorithmName(const BenchCase& benchCase) = 0;
};

struct SweepOptions {
  Collective collective = Collective::allreduce;
  std::vector<std::uint64_t> sizes;  // requested bytes (sizeSweep)
  std::size_t elementSize = 4;
  ReduceOp op = ReduceOp::sum;
  int root = 0;
  bool check = true;    // count wrong elements after each size
  bool inplace = true;  // also run the in-place variant
  TimingOptions timing;
  // Copied into every record.
  std::string library;
  std::string transport;
  std::string dtype = "float32";
  bool progress = true;  // rank 0 shows a progress line when stderr is a terminal
};

// Called on rank 0 as each size finishes (inPlace.supported is false when not run).
using RowCallback = std::function<void(const BenchRecord& outOfPlace, const BenchRecord& inPlace)>;

// Runs the sweep on this rank. Returns the records (out-of-place then in-place per size); only
// rank 0's are complete (wrong counts are summed over ranks on every rank). A failure in the
// first call of a variant on any rank marks that variant unsupported with the message (rank 0's,
// when it failed there); later failures propagate.
std::vector<BenchRecord> runSweep(RankRunner& runner, const SweepOptions& options,
                                  const RowCallback& onRow);

}  // namespace chorus::perf
