// allreduce.2d: the 2-D (torus) AllReduce on an N x G grid, rows = nodes, columns = GPU
// indices, rank = row*G + col. Mikami et al.'s 2-D torus AllReduce (Sony, "ImageNet/ResNet-50
// training in 224 seconds") reduce-scatters along the rows, all-reduces along the columns and
// all-gathers along the rows; Ying et al. (Google, "Image classification at supercomputer
// scale", TPU pods) run half of the data in that order and the other half columns-first at the
// same time, so both dimensions' links are busy throughout. Each phase is a ring over one row or
// one column (GC3 §2, Figure 3(b) helpers; the rings-per-dimension idea of GC3 §2's
// hierarchical AllReduce, xCCL notes "Ring").
//
// Algorithm, chunk factor 2*N*G, in place. Half A = chunks 0 .. NG-1, half B = NG .. 2NG-1.
//   A1. Ring ReduceScatter along every row, N chunks per block: (r, c) ends with its row's sum
//       of half-A block c (chunks c*N .. c*N+N-1).
//   A2. Ring ReduceScatter + AllGather along every column c over that block, 1 chunk per block:
//       every rank of column c holds the global sum of block c.
//   A3. Ring AllGather along every row, N chunks per block: every rank holds all of half A.
//   B1-B3. The same with rows and columns exchanged on half B: column ReduceScatter with G
//       chunks per block (block r on row r), row AllReduce over that block, column AllGather.
//
//      half A:  rows -> columns -> rows          half B:  columns -> rows -> columns
//        (0,0) -- (0,1) -- (0,2)   row rings       (0,0)   (0,1)   (0,2)
//          |        |        |                       |       |       |    column rings
//        (1,0) -- (1,1) -- (1,2)                   (1,0)   (1,1)   (1,2)
//
// Unlike allreduce.hierarchical (rows, columns, columns, rows on one data path, each phase
// leaving the other dimension idle), the two halves keep row and column links working at once;
// each rank sends (G-1)/G * (1 + 1/N) * n on its row and (N-1)/N * (1 + 1/G) * n on its column.
// Channels: half A's row rings, half A's column rings, half B's column rings and half B's row
// rings each get c = `channels` channels of their own (group k: k*c .. k*c+c-1), block b of a
// ring on the group's channel b % c, so every channel carries one ring per rank and the phases
// of the two halves never share a threadblock. N = 1 or G = 1 degenerate to two ring AllReduces
// on the non-trivial dimension.
#include <vector>

#include "algorithms/families.h"
#include "algorithms/ring_helpers.h"

namespace chorus::algorithms {
namespace {

// Channel groups: each half's row rings and column rings get their own channels, so on every
// channel a rank has one ring neighbour on each side.
constexpr int kHalfARows = 0;
constexpr int kHalfAColumns = 1;
constexpr int kHalfBColumns = 2;
constexpr int kHalfBRows = 3;

std::vector<int> rowRanks(int row, int columns) {
  std::vector<int> ranks;
  for (int c = 0; c < columns; ++c)
    ranks.push_back(row * columns + c);
  return ranks;
}

std::vector<int> columnRanks(int column, int rows, int columns) {
  std::vector<int> ranks;
  for (int r = 0; r < rows; ++r)
    ranks.push_back(r * columns + column);
  return ranks;
}

// One half of the buffer, starting `offset` chunks in. outer[i] are disjoint rings of L ranks
// each and inner[j] holds position j of every outer ring (L rings of M = outer.size() ranks):
// ReduceScatter over every outer ring in blocks of M chunks (block j ends on position j), ring
// AllReduce of block j over inner[j] (one chunk per rank), AllGather over the outer rings.
void allReduceTwoPhase(lang::Program& program, const std::vector<std::vector<int>>& outer,
                       const std::vector<std::vector<int>>& inner, int offset,
                       const RingOptions& outerOptions, const RingOptions& innerOptions) {
  const int blockChunks = static_cast<int>(outer.size());
  for (const std::vector<int>& ring : outer)
    ringReduceScatter(program, ring, offset, blockChunks, outerOptions);
  for (std::size_t j = 0; j < inner.size(); ++j) {
    const int blockOffset = offset + static_cast<int>(j) * blockChunks;
    ringReduceScatter(program, inner[j], blockOffset, 1, innerOptions);
    ringAllGather(program, inner[j], blockOffset, 1, innerOptions);
  }
  for (const std::vector<int>& ring : outer)
    ringAllGather(program, ring, offset, blockChunks, outerOptions);
}

// The rings of channel group `group` (see the header comment): channels group*c .. group*c+c-1.
RingOptions channelGroup(int group, int channels) {
  RingOptions options;
  options.channel = group * channels;
  options.channelsPerRing = channels;
  return options;
}

std::unique_ptr<lang::Program> buildAllReduce2d(const std::string& name, const BuildArgs& args) {
  const int rows = args.nodes;
  const int columns = args.gpusPerNode;
  const int channels = args.param("channels");
  const int half = rows * columns;
  auto program = std::make_unique<lang::Program>(name, lang::allReduce(half, 2 * half, true),
                                                 args.programOptions);
  std::vector<std::vector<int>> rowRings;
  std::vector<std::vector<int>> columnRings;
  for (int r = 0; r < rows; ++r)
    rowRings.push_back(rowRanks(r, columns));
  for (int c = 0; c < columns; ++c)
    columnRings.push_back(columnRanks(c, rows, columns));

  allReduceTwoPhase(*program, rowRings, columnRings, 0, channelGroup(kHalfARows, channels),
                    channelGroup(kHalfAColumns, channels));
  allReduceTwoPhase(*program, columnRings, rowRings, half, channelGroup(kHalfBColumns, channels),
                    channelGroup(kHalfBRows, channels));
  return program;
}

}  // namespace

std::vector<AlgorithmInfo> twoDimensionalAlgorithms() {
  return {
      {.name = "allreduce.2d",
       .collective = "allreduce",
       .description = "2-D torus: half rows-then-columns, half columns-then-rows, concurrently",
       .citation = "GC3 §2 (ring phases per dimension); xCCL notes Ring; 2-D torus AllReduce "
                   "of Mikami et al. (Sony) and Ying et al. (Google TPU pods)",
       .shape = Shape::nodes,
       .minRanks = 2,
       .params = {{.name = "channels",
                   .defaultValue = 1,
                   .minValue = 1,
                   .maxValue = 8,
                   .description = "channels per half and dimension (4 groups): block b of a ring "
                                  "uses its group's channel b % channels"}},
       .build = &buildAllReduce2d,
       .steps = "2(G−1) + 2(N−1)",
       .bytesSent = "(G−1)/G · (1 + 1/N) · n on rows + (N−1)/N · (1 + 1/G) · n on columns",
       .cost = "2(G+N−2)α + max((G−1)/G · (1+1/N) · nβ_row, (N−1)/N · (1+1/G) · nβ_col) + "
               "γ terms, halves overlapped",
       .winsWhen = "2-D torus or mesh fabrics whose row and column links are similarly fast"},
  };
}

}  // namespace chorus::algorithms
