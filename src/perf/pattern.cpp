#include "perf/pattern.h"

#include <algorithm>

#include "support/error.h"

namespace chorus::perf {

double inputValue(ReduceOp op, int nranks, int rank, std::size_t index, int seed) {
  const auto n = static_cast<std::size_t>(nranks);
  const auto r = static_cast<std::size_t>(rank);
  const auto s = static_cast<std::size_t>(seed);
  if (op == ReduceOp::prod) return (index + s) % n == r ? 2.0 : 1.0;
  return static_cast<double>(1 + (index * 7 + r * 3 + s * 5) % 8);
}

namespace {

// The reduction over all ranks of input element `index`.
double reduceAcrossRanks(const DataCase& data, std::size_t index, int seed) {
  double result = inputValue(data.op, data.nranks, 0, index, seed);
  for (int rank = 1; rank < data.nranks; ++rank) {
    const double value = inputValue(data.op, data.nranks, rank, index, seed);
    switch (data.op) {
      case ReduceOp::sum:
      case ReduceOp::avg:
        result += value;
        break;
      case ReduceOp::prod:
        result *= value;
        break;
      case ReduceOp::min:
        result = std::min(result, value);
        break;
      case ReduceOp::max:
        result = std::max(result, value);
        break;
    }
  }
  return data.op == ReduceOp::avg ? result / data.nranks : result;
}

}  // namespace

std::optional<double> expectedValue(const DataCase& data, int rank, std::size_t index, int seed) {
  const std::size_t count = data.shape.count;
  switch (data.collective) {
    case Collective::allreduce:
      return reduceAcrossRanks(data, index, seed);
    case Collective::allgather:
      return inputValue(data.op, data.nranks, static_cast<int>(index / count), index % count, seed);
    case Collective::reducescatter:
      return reduceAcrossRanks(data, static_cast<std::size_t>(rank) * count + index, seed);
    case Collective::alltoall:
      return inputValue(data.op, data.nranks, static_cast<int>(index / count),
                        static_cast<std::size_t>(rank) * count + index % count, seed);
    case Collective::broadcast:
      return inputValue(data.op, data.nranks, data.root, index, seed);
    case Collective::reduce:
      if (rank != data.root) return std::nullopt;
      return reduceAcrossRanks(data, index, seed);
  }
  CHORUS_INTERNAL_ASSERT(false, "unknown collective");
}

}  // namespace chorus::perf
