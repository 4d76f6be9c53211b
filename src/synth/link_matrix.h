// Link-weight matrices for topology-aware tree synthesis (MXNet trees; docs/sources.md "MXNet
// tree backend"): one weight per ordered GPU pair, larger = faster, 0 = no usable link. Built from
// a topology (bandwidth classes of its routes) or read from a user's JSON or text file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "topology/topology.h"

namespace chorus::synth {

// Largest matrix accepted (the tree search is exponential in the worst case beyond this).
inline constexpr int kMaxLinkMatrixSize = 64;

// An n x n matrix of link weights, row-major. Plain data; copy freely.
struct LinkMatrix {
  int size = 0;
  std::vector<double> weights;  // size * size entries; weights[a * size + b]

  double at(int a, int b) const {
    return weights[static_cast<std::size_t>(a) * static_cast<std::size_t>(size) +
                   static_cast<std::size_t>(b)];
  }
  double& at(int a, int b) {
    return weights[static_cast<std::size_t>(a) * static_cast<std::size_t>(size) +
                   static_cast<std::size_t>(b)];
  }
  friend bool operator==(const LinkMatrix&, const LinkMatrix&) = default;
};

// An n x n matrix of zeros.
LinkMatrix makeLinkMatrix(int size);

// A matrix from rows (tests and callers with literal data). Rows must be square; no other
// check (use validateLinkMatrix for user input). Throws OptionError when not square.
LinkMatrix linkMatrixFromRows(const std::vector<std::vector<double>>& rows);

// MXNet's bandwidth classes (cudaDevP2PAttrPerformanceRank + 1, MXNet gpu_topology.h) derived from
// the routes of topology::Fabric: for every ordered rank pair,
//   - a route that crosses only NVLink or NVSwitch links (and switches) gets
//     1 + round(bandwidth / unit), where unit is the narrowest such route of the topology
//     (DGX-1: 45 GB/s on two bricks -> 3, 22.5 GB/s on one brick -> 2);
//   - any other route (PCIe, QPI/X-Bus, NICs and the network) gets 1;
//   - the diagonal is 0.
// Ranks keep the topology's numbering. The dgx1 preset numbers its GPUs as nvidia-smi does on a
// DGX-1V / p3.16xlarge (double pairs 0-3 0-4 1-2 1-5 2-3 4-7 5-6 6-7), which is the numbering of
// MXNet's p3.16xlarge matrix (docs/sources.md "MXNet tree backend"), so the mapping is the
// identity. Throws ParseError when the topology does not validate.
LinkMatrix linkMatrixFromTopology(const topology::Topology& topology);

// Checks a user's matrix: 2 <= n <= kMaxLinkMatrixSize, finite entries >= 0, zero diagonal,
// symmetric. Throws ParseError prefixed by `origin` naming the row and column and the fix.
void validateLinkMatrix(const LinkMatrix& matrix, std::string_view origin);

// Parses a matrix, validated as above. Accepted forms:
//   JSON  [[0, 2, 3], [2, 0, 1], [3, 1, 0]]   or   {"matrix": [[...], ...]}
//   text  one row per line, entries separated by spaces or commas; '#' starts a comment.
// Throws ParseError naming `sourceName`, the line (text) and the row/column at fault.
LinkMatrix parseLinkMatrix(std::string_view text, const std::string& sourceName);

// Reads and parses a file ("-" = standard input). Throws ParseError naming the path when it
// cannot be read.
LinkMatrix readLinkMatrixFile(const std::string& path);

// The matrix as aligned text: a header row of column indices, then one labelled row per GPU.
std::string formatLinkMatrix(const LinkMatrix& matrix);

}  // namespace chorus::synth
