#include "algorithms/common.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <utility>

#include "support/error.h"

namespace chorus::algorithms {

ParamInfo rootParam() {
  return {
      .name = "root",
      .defaultValue = 0,
      .minValue = 0,
      .maxValue = 255,
      .description = "the rank that holds the data (broadcast) or receives the result (reduce)"};
}

int rootOf(const std::string& name, const BuildArgs& args) {
  const int root = args.param("root");
  if (root >= args.ranks) {
    throw OptionError(fmt::format("{}: root {} is not a rank of 0..{}; use --set root=0..{}", name,
                                  root, args.ranks - 1, args.ranks - 1));
  }
  return root;
}

ParamInfo channelsParam() {
  return {.name = "channels",
          .defaultValue = 1,
          .minValue = 1,
          .maxValue = 32,
          .description =
              "--ranks: chunk c's hops use channel c % channels; N x G nodes (N > 1): "
              "one ring per channel, each leaving nodes through another GPU/NIC"};
}

ParamInfo instanceChannelsParam(std::string description) {
  return {.name = "channels",
          .defaultValue = 1,
          .minValue = 1,
          .maxValue = 16,
          .description = std::move(description)};
}

ParamInfo forwardParam(std::string description) {
  return {.name = "forward",
          .defaultValue = 1,
          .minValue = 0,
          .maxValue = 1,
          .description = std::move(description),
          .valueNames = {"aggregated", "chunk"}};
}

PartRange partsOfInstance(int gpu, int instance, int gpus, int parts) {
  const int first = std::max(gpu * parts, instance * gpus);
  const int last = std::min((gpu + 1) * parts, (instance + 1) * gpus);
  if (first >= last) return {};
  return {.first = first - gpu * parts, .count = last - first};
}

int instanceLeader(int instance, int gpus, int parts) {
  return instance * gpus / parts;
}

std::vector<int> allRanks(int count) {
  std::vector<int> ranks(static_cast<std::size_t>(count));
  std::iota(ranks.begin(), ranks.end(), 0);
  return ranks;
}

int powerOfTwoAtLeast(int size) {
  int power = 1;
  while (power < size)
    power *= 2;
  return power;
}

int powerOfTwoAtMost(int size) {
  int power = 1;
  while (power * 2 <= size)
    power *= 2;
  return power;
}

}  // namespace chorus::algorithms
