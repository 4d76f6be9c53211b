#include "synth/p2_placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <numeric>

#include "support/error.h"
#include "support/index.h"
#include "topology/topology.h"

namespace chorus::synth {
namespace {

// Product of `values`, or -1 once it exceeds `cap` (sizes here are small, but a bad option
// must not overflow).
long long productOf(std::span<const int> values, long long cap) {
  long long product = 1;
  for (int v : values) {
    product *= v;
    if (product > cap) return -1;
  }
  return product;
}

std::string joinSizes(std::span<const int> sizes, std::string_view separator) {
  std::string text;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (i > 0) text += separator;
    text += std::to_string(sizes[i]);
  }
  return text;
}

// Depth-first search of step 2 of enumerateParallelismMatrices.
struct MatrixSearch {
  int axes = 0;
  int levels = 0;
  std::vector<int> levelSizes;
  std::vector<int> rowLeft;  // per axis: size not yet placed
  std::vector<int> cells;    // row-major
  std::vector<ParallelismMatrix> found;

  void fill(int level, int axis, int columnLeft) {
    if (level == levels) {
      found.push_back({axes, levels, cells});
      return;
    }
    const std::size_t cell = static_cast<std::size_t>(axis * levels + level);
    const std::size_t row = static_cast<std::size_t>(axis);
    auto place = [&](int value) {
      cells[cell] = value;
      rowLeft[row] /= value;
      if (axis + 1 == axes) {
        if (columnLeft / value == 1) {
          const int nextColumn = level + 1 < levels ? levelSizes[ix(level + 1)] : 1;
          fill(level + 1, 0, nextColumn);
        }
      } else {
        fill(level, axis + 1, columnLeft / value);
      }
      rowLeft[row] *= value;
    };
    if (level + 1 == levels) {  // last column: the row's remainder is forced
      if (columnLeft % rowLeft[row] == 0) place(rowLeft[row]);
      return;
    }
    if (axis + 1 == axes) {  // last row of the column: the column's remainder is forced
      if (rowLeft[row] % columnLeft == 0) place(columnLeft);
      return;
    }
    for (int value = 1; value <= columnLeft; ++value)
      if (columnLeft % value == 0 && rowLeft[row] % value == 0) place(value);
  }
};

// Mixed-radix factor coordinates f[axis][level] of `device`.
std::vector<int> factorCoordinatesOf(const ParallelismMatrix& m, int device) {
  std::vector<int> f(static_cast<std::size_t>(m.axes * m.levels), 0);
  int rest = device;
  for (int level = m.levels - 1; level >= 0; --level) {
    for (int axis = m.axes - 1; axis >= 0; --axis) {
      const int x = m.factor(axis, level);
      f[static_cast<std::size_t>(axis * m.levels + level)] = rest % x;
      rest /= x;
    }
  }
  return f;
}

int deviceOfFactors(const ParallelismMatrix& m, const std::vector<int>& f) {
  int device = 0;
  for (int level = 0; level < m.levels; ++level)
    for (int axis = 0; axis < m.axes; ++axis)
      device =
          device * m.factor(axis, level) + f[static_cast<std::size_t>(axis * m.levels + level)];
  return device;
}

int matrixDevices(const ParallelismMatrix& m) {
  return std::accumulate(m.factors.begin(), m.factors.end(), 1, std::multiplies<>());
}

}  // namespace

int deviceCount(const SystemHierarchy& hierarchy) {
  int count = 1;
  for (const HierarchyLevel& level : hierarchy.levels)
    count *= level.size;
  return count;
}

std::string formatHierarchy(const SystemHierarchy& hierarchy) {
  std::string text = "[";
  for (std::size_t i = 0; i < hierarchy.levels.size(); ++i) {
    if (i > 0) text += ", ";
    text += fmt::format("({}, {})", hierarchy.levels[i].name, hierarchy.levels[i].size);
  }
  return text + "]";
}

SystemHierarchy systemHierarchyOf(const topology::Topology& topology, int nodes) {
  if (nodes < 1)
    throw OptionError(fmt::format("synth: node count {} for topology '{}' must be at least 1",
                                  nodes, topology.name));
  const int devices = topology.node.devices;
  if (devices < 1)
    throw OptionError(
        fmt::format("synth: topology '{}' has no devices per node; give a "
                    "topology with at least one device",
                    topology.name));
  SystemHierarchy hierarchy;
  hierarchy.levels.push_back({"node", nodes});
  int parentSize = devices;  // devices under one node of the level above
  for (const topology::Level& level : topology.node.levels) {
    const auto fail = [&](const std::string& why) {
      throw OptionError(fmt::format(
          "synth: level '{}' of topology '{}' {}; P² needs every level to split the level "
          "above into equal consecutive device ranges (fix the topology's levels or remove "
          "this one)",
          level.name, topology.name, why));
    };
    if (level.groups.empty()) fail("has no groups");
    const std::size_t groupSize = level.groups.front().size();
    if (groupSize == 0) fail("has an empty group");
    int next = 0;
    for (const std::vector<int>& group : level.groups) {
      if (group.size() != groupSize)
        fail(fmt::format("has groups of {} and {} devices", groupSize, group.size()));
      for (int device : group)
        if (device != next++)
          fail(fmt::format("group lists device {} where device {} was expected", device, next - 1));
    }
    if (next != devices) fail(fmt::format("covers {} of the node's {} devices", next, devices));
    const int size = static_cast<int>(groupSize);
    if (parentSize % size != 0)
      fail(
          fmt::format("has groups of {} devices, which do not divide the {} devices of the "
                      "level above",
                      size, parentSize));
    if (size == parentSize) continue;  // does not split the level above
    hierarchy.levels.push_back({level.name, parentSize / size});
    parentSize = size;
  }
  if (parentSize > 1 || hierarchy.levels.size() == 1)
    hierarchy.levels.push_back({"device", parentSize});
  return hierarchy;
}

std::string formatMatrix(const ParallelismMatrix& matrix) {
  std::string text = "[";
  for (int axis = 0; axis < matrix.axes; ++axis) {
    text += axis > 0 ? " [" : "[";
    for (int level = 0; level < matrix.levels; ++level) {
      if (level > 0) text += ' ';
      text += std::to_string(matrix.factor(axis, level));
    }
    text += ']';
  }
  return text + "]";
}

std::vector<ParallelismMatrix> enumerateParallelismMatrices(const SystemHierarchy& hierarchy,
                                                            std::span<const int> axisSizes) {
  if (axisSizes.empty())
    throw OptionError("synth: no parallelism axes given; give at least one axis size (--axes 4,4)");
  if (hierarchy.levels.empty())
    throw OptionError("synth: the system hierarchy has no levels; give at least one (name, size)");
  std::vector<int> levelSizes;
  for (const HierarchyLevel& level : hierarchy.levels) {
    if (level.size < 1)
      throw OptionError(fmt::format("synth: hierarchy level '{}' has size {}; sizes must be ≥ 1",
                                    level.name, level.size));
    levelSizes.push_back(level.size);
  }
  for (std::size_t i = 0; i < axisSizes.size(); ++i)
    if (axisSizes[i] < 1)
      throw OptionError(fmt::format("synth: parallelism axis {} has size {}; sizes must be ≥ 1", i,
                                    axisSizes[i]));
  constexpr long long kCap = 1LL << 30;
  const long long axesProduct = productOf(axisSizes, kCap);
  const long long devices = productOf(levelSizes, kCap);
  if (axesProduct != devices || devices < 0)
    throw OptionError(fmt::format(
        "synth: parallelism axes {} use {} devices but the hierarchy {} has {}; the product of "
        "the axis sizes must equal the device count",
        joinSizes(axisSizes, "×"),
        axesProduct < 0 ? std::string("too many") : std::to_string(axesProduct),
        formatHierarchy(hierarchy),
        devices < 0 ? std::string("too many") : std::to_string(devices)));

  MatrixSearch search;
  search.axes = static_cast<int>(axisSizes.size());
  search.levels = static_cast<int>(levelSizes.size());
  search.levelSizes = levelSizes;
  search.rowLeft.assign(axisSizes.begin(), axisSizes.end());
  search.cells.assign(static_cast<std::size_t>(search.axes * search.levels), 0);
  search.fill(0, 0, levelSizes.front());
  std::sort(
      search.found.begin(), search.found.end(),
      [](const ParallelismMatrix& a, const ParallelismMatrix& b) { return a.factors < b.factors; });
  return search.found;
}

std::vector<int> axisCoordinatesOf(const ParallelismMatrix& matrix, int device) {
  CHORUS_INTERNAL_ASSERT(
      device >= 0 && device < matrixDevices(matrix),
      fmt::format("device {} outside the matrix {}", device, formatMatrix(matrix)));
  const std::vector<int> f = factorCoordinatesOf(matrix, device);
  std::vector<int> coordinates(static_cast<std::size_t>(matrix.axes), 0);
  for (int axis = 0; axis < matrix.axes; ++axis)
    for (int level = 0; level < matrix.levels; ++level)
      coordinates[ix(axis)] = coordinates[ix(axis)] * matrix.factor(axis, level) +
                              f[static_cast<std::size_t>(axis * matrix.levels + level)];
  return coordinates;
}

int deviceAt(const ParallelismMatrix& matrix, std::span<const int> axisCoordinates) {
  if (static_cast<int>(axisCoordinates.size()) != matrix.axes)
    throw OptionError(fmt::format("synth: {} axis coordinates given for the {}-axis matrix {}",
                                  axisCoordinates.size(), matrix.axes, formatMatrix(matrix)));
  std::vector<int> f(static_cast<std::size_t>(matrix.axes * matrix.levels), 0);
  for (int axis = 0; axis < matrix.axes; ++axis) {
    int size = 1;
    for (int level = 0; level < matrix.levels; ++level)
      size *= matrix.factor(axis, level);
    int rest = axisCoordinates[ix(axis)];
    if (rest < 0 || rest >= size)
      throw OptionError(
          fmt::format("synth: coordinate {} of axis {} is outside [0, {})", rest, axis, size));
    for (int level = matrix.levels - 1; level >= 0; --level) {
      f[static_cast<std::size_t>(axis * matrix.levels + level)] = rest % matrix.factor(axis, level);
      rest /= matrix.factor(axis, level);
    }
  }
  return deviceOfFactors(matrix, f);
}

ReductionLayout layoutReduction(const ParallelismMatrix& matrix,
                                std::span<const int> reductionAxes) {
  if (reductionAxes.empty())
    throw OptionError(
        "synth: no reduction axes given; name at least one axis to reduce over "
        "(--reduce 0)");
  ReductionLayout layout;
  layout.reductionAxes.assign(reductionAxes.begin(), reductionAxes.end());
  std::sort(layout.reductionAxes.begin(), layout.reductionAxes.end());
  for (std::size_t i = 0; i < layout.reductionAxes.size(); ++i) {
    const int axis = layout.reductionAxes[i];
    if (axis < 0 || axis >= matrix.axes)
      throw OptionError(
          fmt::format("synth: reduction axis {} does not exist; the matrix {} has "
                      "axes 0..{}",
                      axis, formatMatrix(matrix), matrix.axes - 1));
    if (i > 0 && layout.reductionAxes[i - 1] == axis)
      throw OptionError(
          fmt::format("synth: reduction axis {} is given twice; list each axis once", axis));
  }
  std::vector<bool> reduced(static_cast<std::size_t>(matrix.axes), false);
  for (int axis : layout.reductionAxes)
    reduced[ix(axis)] = true;
  int groupSize = 1;
  for (int level = 0; level < matrix.levels; ++level) {
    int product = 1;
    for (int axis : layout.reductionAxes)
      product *= matrix.factor(axis, level);
    layout.levelFactors.push_back(product);
    groupSize *= product;
  }
  const int devices = matrixDevices(matrix);
  const int groupCount = devices / groupSize;
  layout.groups.assign(static_cast<std::size_t>(groupCount),
                       std::vector<int>(static_cast<std::size_t>(groupSize), -1));
  for (int device = 0; device < devices; ++device) {
    const std::vector<int> f = factorCoordinatesOf(matrix, device);
    int group = 0;
    int index = 0;
    for (int level = 0; level < matrix.levels; ++level) {
      for (int axis = 0; axis < matrix.axes; ++axis) {
        const int x = matrix.factor(axis, level);
        const int value = f[static_cast<std::size_t>(axis * matrix.levels + level)];
        if (reduced[ix(axis)])
          index = index * x + value;
        else
          group = group * x + value;
      }
    }
    layout.groups[ix(group)][ix(index)] = device;
  }
  return layout;
}

}  // namespace chorus::synth
