// How `chorus tune` turns measurements into a tuning table (selection layer): the candidate
// settings of every applicable library algorithm, and the per-size winner with ties going to
// the simpler plan, merged into contiguous size ranges.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "selection/algorithm_choice.h"
#include "selection/tuning_table.h"

namespace chorus::selection {

// Which settings to try beyond each algorithm's defaults.
struct CandidateGrid {
  std::vector<ir::Protocol> protocols = {ir::Protocol::simple};
  std::vector<int> instances = {1};
  bool parameterValues = true;  // also try a few values of each integer parameter (not root)
};

// Every library algorithm of `collective` that runs on `nranks` ranks, with the settings of
// `grid`: integer parameters at their default and a few other values (channels 1, 2, 4; other
// parameters default/2 and default*2 within range; at most 6 combinations per algorithm);
// node-shaped algorithms at every nodes count N with N >= 2 and nranks/N >= 2 (none when
// nranks is prime). Each choice compiles for `nranks`; ordered by name.
std::vector<AlgorithmChoice> tuningCandidates(ir::CollectiveKind collective, int nranks,
                                              const CandidateGrid& grid = {});

// One candidate's measurements: time per size (absent sizes failed or were not run).
struct CandidateMeasurements {
  AlgorithmChoice choice;
  std::size_t steps = 0;  // ir::stepCount of its plan: lower is simpler
  struct Point {
    std::uint64_t bytes = 0;
    double timeUs = 0;
    double busbwGbps = 0;
  };
  std::vector<Point> points;
};

// The table for (collective, nranks, transport): at each measured size the fastest candidate,
// except that any candidate within `tie` (0.05 = 5%) of the fastest time counts as tied and
// ties go to the fewest steps (then the name). Sizes with the same winner merge; a boundary
// between two measured sizes a < b lies at their geometric mean, so the table covers 0 to no
// bound. Throws OptionError when no candidate has any measurement.
TuningTable buildTuningTable(ir::CollectiveKind collective, int nranks, std::string transport,
                             const std::vector<CandidateMeasurements>& candidates,
                             double tie = 0.05);

}  // namespace chorus::selection
