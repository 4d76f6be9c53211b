#include "perf/svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <vector>

#include "support/error.h"
#include "support/size.h"
#include "support/strings.h"

namespace chorus::perf {

namespace {

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                   "#9467bd", "#8c564b", "#e377c2", "#17becf"};
constexpr double kLeft = 70, kRight = 230, kTop = 40, kBottom = 60;

std::string escapeXml(std::string_view text) {
  std::string out;
  appendXmlEscaped(out, text);
  return out;
}

// The smallest 1, 2, 2.5 or 5 times a power of ten that is >= value (> 0).
double niceCeiling(double value) {
  const double power = std::pow(10.0, std::floor(std::log10(value)));
  for (double step : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (step * power >= value * (1 - 1e-12)) return step * power;
  return 10 * power;
}

struct Series {
  std::string label;
  bool inplace = false;
  std::string library;
  std::vector<std::pair<double, double>> points;  // (log2 bytes, busbw)
};

// Groups the records that ran into labelled series, in order of first appearance.
std::vector<Series> groupSeries(std::span<const BenchRecord> records) {
  std::set<std::string> collectives;
  std::set<int> ranks;
  for (const BenchRecord& record : records) {
    collectives.insert(record.collective);
    ranks.insert(record.ranks);
  }
  std::vector<Series> series;
  std::map<std::string, std::size_t> index;
  for (const BenchRecord& record : records) {
    if (!record.supported || record.bytes == 0) continue;
    std::string label = record.library;
    if (collectives.size() > 1) label += " " + record.collective;
    if (ranks.size() > 1) label += fmt::format(" {}r", record.ranks);
    label += record.inplace ? " in-place" : " out-of-place";
    auto [it, added] = index.emplace(label, series.size());
    if (added) series.push_back(Series{label, record.inplace, record.library, {}});
    series[it->second].points.emplace_back(std::log2(static_cast<double>(record.bytes)),
                                           record.busbwGbps);
  }
  for (Series& s : series)
    std::sort(s.points.begin(), s.points.end());
  return series;
}

}  // namespace

std::string busbwPlotSvg(std::span<const BenchRecord> records, const PlotOptions& options) {
  const std::vector<Series> series = groupSeries(records);
  double xMin = 0, xMax = 1, yMax = 0;
  bool first = true;
  for (const Series& s : series)
    for (const auto& [x, y] : s.points) {
      xMin = first ? x : std::min(xMin, x);
      xMax = first ? x : std::max(xMax, x);
      yMax = std::max(yMax, y);
      first = false;
    }
  xMin = std::floor(xMin);
  xMax = std::ceil(xMax);
  if (xMax <= xMin) xMax = xMin + 1;
  yMax = yMax > 0 ? niceCeiling(yMax) : 1.0;

  const double w = options.width, h = options.height;
  const double plotW = w - kLeft - kRight, plotH = h - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - xMin) / (xMax - xMin) * plotW; };
  auto py = [&](double y) { return kTop + plotH - y / yMax * plotH; };

  std::string out = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"24\" font-size=\"16\" text-anchor=\"middle\">{3}</text>\n",
      w, h, kLeft + plotW / 2, escapeXml(options.title));

  // Grid, ticks and axis labels.
  const int xStep = std::max(1, static_cast<int>(std::ceil((xMax - xMin) / 12)));
  // Ticks on multiples of the step (powers of 4 for a step of 2: 16 B, 64 B, ... 1 MiB).
  const double firstTick = std::ceil(xMin / xStep) * xStep;
  for (double x = firstTick; x <= xMax + 1e-9; x += xStep) {
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>\n"
        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
        px(x), kTop, kTop + plotH, kTop + plotH + 16,
        escapeXml(formatSize(static_cast<std::uint64_t>(std::llround(std::exp2(x))))));
  }
  for (int i = 0; i <= 5; ++i) {
    const double y = yMax * i / 5;
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>\n"
        "<text x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:g}</text>\n",
        kLeft, py(y), kLeft + plotW, kLeft - 6, py(y) + 4, y);
  }
  out += fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" "
      "stroke=\"black\"/>\n",
      kLeft, kTop, plotW, plotH);
  out += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">size (bytes, log2 "
      "scale)</text>\n",
      kLeft + plotW / 2, h - 16);
  out += fmt::format(
      "<text x=\"18\" y=\"{0:.1f}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {0:.1f})\">"
      "busbw (GB/s)</text>\n",
      kTop + plotH / 2);

  // One polyline per series, coloured by library, dashed when in place; legend on the right.
  std::map<std::string, std::size_t> colorOf;
  for (std::size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    const auto [it, added] = colorOf.emplace(s.library, colorOf.size());
    const char* color = kColors[it->second % std::size(kColors)];
    const std::string dash = s.inplace ? " stroke-dasharray=\"6 4\"" : "";
    std::string points;
    for (const auto& [x, y] : s.points)
      points += fmt::format("{}{:.1f},{:.1f}", points.empty() ? "" : " ", px(x), py(y));
    out +=
        fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{} points=\"{}\"/>\n",
                    color, dash, points);
    for (const auto& [x, y] : s.points)
      out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"/>\n", px(x),
                         py(y), color);
    const double ly = kTop + 10 + 20 * static_cast<double>(i);
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" "
        "stroke-width=\"2\"{4}/>\n"
        "<text x=\"{5:.1f}\" y=\"{6:.1f}\">{7}</text>\n",
        kLeft + plotW + 12, ly, kLeft + plotW + 40, color, dash, kLeft + plotW + 46, ly + 4,
        escapeXml(s.label));
  }
  out += "</svg>\n";
  return out;
}

void writePlotFile(const std::string& path, std::span<const BenchRecord> records,
                   const PlotOptions& options) {
  std::ofstream out(path);
  if (!out)
    throw UserError(fmt::format("cannot open '{}' for writing: {}", path, std::strerror(errno)));
  out << busbwPlotSvg(records, options);
  if (!out) throw UserError(fmt::format("cannot write '{}'", path));
}

}  // namespace chorus::perf
