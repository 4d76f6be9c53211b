// P² parallelism placement (P² §2.1, §3.1): system hierarchies, parallelism matrices
// that factor each parallelism axis over the hierarchy's levels, and the device layout a
// matrix implies (which devices hold which axis coordinates, which devices form reduction
// groups). The first stage of `chorus synth reduction`; plain data, no state.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace chorus::topology {
struct Topology;
}

namespace chorus::synth {

// One level of a system hierarchy: its name and how many children each node of the level
// above has here (the outermost level counts from one implicit root).
struct HierarchyLevel {
  std::string name;  // "rack", "server", "CPU", "GPU", "node", "socket", "device"
  int size = 1;      // ≥ 1
  friend bool operator==(const HierarchyLevel&, const HierarchyLevel&) = default;
};

// A system hierarchy, outermost level first: Figure 2a's [(rack,1),(server,2),(CPU,2),(GPU,4)].
// Devices are numbered in mixed radix over the level coordinates, outermost most significant
// (Figure 2a's A0..A3 are devices 0..3, B0 is 4, C0 is 8, D0 is 12).
struct SystemHierarchy {
  std::vector<HierarchyLevel> levels;
  friend bool operator==(const SystemHierarchy&, const SystemHierarchy&) = default;
};

// The number of devices: the product of the level sizes.
int deviceCount(const SystemHierarchy& hierarchy);

// "[(rack, 1), (server, 2), (CPU, 2), (GPU, 4)]", P²'s notation.
std::string formatHierarchy(const SystemHierarchy& hierarchy);

// The hierarchy of `nodes` copies of `topology`'s node: [(node, nodes), (level, groups per
// parent)..., (device, devices per innermost group)] from topology.node.levels (outermost
// first); a level that does not split the one above, and a final device level of 1, are left
// out. Device i of node n is hierarchy device n·devices + i. Throws chorus::OptionError
// when nodes < 1 or a level's groups are not equal-sized consecutive rank ranges nested in the
// level above (P² needs a uniform hierarchy), naming the level and the fix.
SystemHierarchy systemHierarchyOf(const topology::Topology& topology, int nodes);

// A parallelism matrix (P² §3.1): rows are the parallelism axes, columns the hierarchy's
// levels; factor(i, j) is how many ways axis i is split across level j. Every row's product is
// the axis size (Equation 2) and every column's product the level size (Equation 1).
struct ParallelismMatrix {
  int axes = 0;
  int levels = 0;
  std::vector<int> factors;  // row-major, axes × levels

  int factor(int axis, int level) const {
    return factors[static_cast<std::size_t>(axis * levels + level)];
  }
  friend bool operator==(const ParallelismMatrix&, const ParallelismMatrix&) = default;
};

// "[[1 2 2 1] [1 1 1 4]]", the notation of the paper's tables.
std::string formatMatrix(const ParallelismMatrix& matrix);

// Every parallelism matrix for `axisSizes` on `hierarchy`, in lexicographic row-major order.
// Throws chorus::OptionError when an axis or level size is < 1, there are no axes, or the
// product of the axis sizes differs from the device count (no matrix can exist), naming both
// products.
//
// Algorithm (P² §3.1, Equations 1 and 2):
//  1. Fill the matrix column by column (outermost level first), row by row, keeping for each
//     row the part of its axis size not yet placed and for the column the part of its level
//     size not yet placed.
//  2. A cell takes every divisor of its column's remainder that also divides its row's
//     remainder; the column's last row takes the column remainder itself, if it divides that
//     row's remainder; in the last column every row takes its row remainder, and the column
//     product is checked.
//  3. Sort the matrices (the search already yields each once).
std::vector<ParallelismMatrix> enumerateParallelismMatrices(const SystemHierarchy& hierarchy,
                                                            std::span<const int> axisSizes);

// Device layout of a matrix. Each level coordinate l_j ∈ [0, h_j) is itself a mixed-radix
// number over the axes' factors f_{i,j} ∈ [0, x_{i,j}) with axis 0 most significant, and axis
// i's coordinate is the mixed-radix number of f_{i,0..n} with the outermost level most
// significant (Figure 2b: data n = f(server)·2 + f(CPU), shard m = f(GPU)).

// The axis coordinates of `device` (size matrix.axes). Precondition: 0 ≤ device < the
// matrix's device count.
std::vector<int> axisCoordinatesOf(const ParallelismMatrix& matrix, int device);

// The device holding `axisCoordinates`. Throws chorus::OptionError when the coordinate count or
// a coordinate is out of range.
int deviceAt(const ParallelismMatrix& matrix, std::span<const int> axisCoordinates);

// The devices of every reduction group for a reduction over `reductionAxes`: the devices that
// agree on all other axes. Groups are ordered by the non-reduction coordinates (mixed radix
// over levels, outermost first, axes in order within a level); members by their *reduction
// index*: the mixed-radix number over levels of the collapsed reduction factors (P² §2.5,
// Table 1: per level, the reduction axes' factors in axis order), which is the device order of
// the synthesis hierarchy (p2_program.h).
struct ReductionLayout {
  std::vector<int> reductionAxes;        // sorted, distinct
  std::vector<int> levelFactors;         // per level: product of reduction-axis factors
  std::vector<std::vector<int>> groups;  // [group][reduction index] = device id
  friend bool operator==(const ReductionLayout&, const ReductionLayout&) = default;
};

// Throws chorus::OptionError when `reductionAxes` is empty, repeats an axis or names one out of
// range.
ReductionLayout layoutReduction(const ParallelismMatrix& matrix,
                                std::span<const int> reductionAxes);

}  // namespace chorus::synth
