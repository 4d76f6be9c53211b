// Bus bandwidth versus size as a hand-written SVG line chart (perf layer): log2 size axis, one
// line per series, series = (library, out-of-place/in-place), plus collective and rank count
// when the records mix several.
#pragma once

#include <span>
#include <string>

#include "perf/record.h"

namespace chorus::perf {

struct PlotOptions {
  std::string title = "bus bandwidth";
  int width = 900;
  int height = 540;
};

// A complete SVG document; records that did not run are left out. Deterministic output.
std::string busbwPlotSvg(std::span<const BenchRecord> records, const PlotOptions& options);
// Throws UserError when the file cannot be written.
void writePlotFile(const std::string& path, std::span<const BenchRecord> records,
                   const PlotOptions& options);

}  // namespace chorus::perf
