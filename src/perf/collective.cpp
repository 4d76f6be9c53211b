#include "perf/collective.h"

#include <algorithm>

#include "support/error.h"

namespace chorus::perf {

std::string_view collectiveName(Collective collective) {
  switch (collective) {
    case Collective::allreduce:
      return "allreduce";
    case Collective::allgather:
      return "allgather";
    case Collective::reducescatter:
      return "reducescatter";
    case Collective::alltoall:
      return "alltoall";
    case Collective::broadcast:
      return "broadcast";
    case Collective::reduce:
      return "reduce";
  }
  CHORUS_INTERNAL_ASSERT(false, "unknown collective");
}

std::optional<Collective> parseCollective(std::string_view name) {
  for (Collective collective : allCollectives())
    if (name == collectiveName(collective)) return collective;
  if (name == "all_reduce") return Collective::allreduce;
  if (name == "all_gather") return Collective::allgather;
  if (name == "reduce_scatter") return Collective::reducescatter;
  if (name == "all_to_all") return Collective::alltoall;
  if (name == "bcast") return Collective::broadcast;
  return std::nullopt;
}

const std::vector<Collective>& allCollectives() {
  static const std::vector<Collective> all = {Collective::allreduce,     Collective::allgather,
                                              Collective::reducescatter, Collective::alltoall,
                                              Collective::broadcast,     Collective::reduce};
  return all;
}

std::string_view reduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::prod:
      return "prod";
    case ReduceOp::min:
      return "min";
    case ReduceOp::max:
      return "max";
    case ReduceOp::avg:
      return "avg";
  }
  CHORUS_INTERNAL_ASSERT(false, "unknown reduction operator");
}

std::optional<ReduceOp> parseReduceOp(std::string_view name) {
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::avg})
    if (name == reduceOpName(op)) return op;
  if (name == "product") return ReduceOp::prod;
  if (name == "mean") return ReduceOp::avg;
  return std::nullopt;
}

bool isReduction(Collective collective) {
  return collective == Collective::allreduce || collective == Collective::reducescatter ||
         collective == Collective::reduce;
}

bool hasRoot(Collective collective) {
  return collective == Collective::broadcast || collective == Collective::reduce;
}

CollectiveShape shapeFor(Collective collective, std::uint64_t requestedBytes,
                         std::size_t elementSize, int nranks) {
  CHORUS_INTERNAL_ASSERT(elementSize > 0 && nranks > 0, "shapeFor needs a type and ranks");
  const auto n = static_cast<std::size_t>(nranks);
  const std::size_t total = std::max<std::size_t>(1, requestedBytes / elementSize);
  const std::size_t block = std::max<std::size_t>(1, total / n);
  CollectiveShape shape;
  switch (collective) {
    case Collective::allreduce:
    case Collective::broadcast:
    case Collective::reduce:
      shape.count = shape.sendCount = shape.recvCount = total;
      break;
    case Collective::allgather:
      shape.count = shape.sendCount = block;
      shape.recvCount = block * n;
      break;
    case Collective::reducescatter:
      shape.count = shape.recvCount = block;
      shape.sendCount = block * n;
      break;
    case Collective::alltoall:
      shape.count = block;
      shape.sendCount = shape.recvCount = block * n;
      break;
  }
  shape.elements = std::max(shape.sendCount, shape.recvCount);
  shape.bytes = shape.elements * elementSize;
  return shape;
}

double busBandwidthFactor(Collective collective, int nranks) {
  const double n = nranks;
  switch (collective) {
    case Collective::allreduce:
      return 2.0 * (n - 1) / n;
    case Collective::allgather:
    case Collective::reducescatter:
    case Collective::alltoall:
      return (n - 1) / n;
    case Collective::broadcast:
    case Collective::reduce:
      return 1.0;
  }
  CHORUS_INTERNAL_ASSERT(false, "unknown collective");
}

}  // namespace chorus::perf
