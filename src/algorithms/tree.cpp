// Binomial-tree algorithms: broadcast.binomial, reduce.binomial and allreduce.binomial (xCCL
// notes "Binomial Tree"), any number of ranks, chunk factor 1. Broadcast and Reduce take any root
// and run out of place; each takes log2(R) rounds of one whole-buffer message per edge: T =
// ceil(log2 R) * (α + nβ) (+ nγ for Reduce). AllReduce is in place and takes twice that.
//
// Algorithm, R ranks, ranks renumbered relative to the root (v = (r - root) mod R), P = the
// smallest power of two >= R:
//   Broadcast (top-down): the root copies its input to its output; then for mask = P/2, P/4,
//     ..., 1 every v that is a multiple of 2*mask and already holds the data sends its output
//     to v + mask (if v + mask < R). The first message goes to root + P/2, which then acts as
//     the root of its own half, and so on recursively.
//   Reduce (bottom-up, the mirror image): for mask = 1, 2, ..., P/2 every v that is a multiple
//     of 2*mask receives the partial sum of v + mask (if v + mask < R) and adds it to its own.
//     A rank accumulates in its output buffer (its input is copied there first) so the
//     caller's input is never written; a leaf sends straight from its input.
//
//      broadcast, R = 6, root 0:      mask 4: 0 -> 4
//                                     mask 2: 0 -> 2, 4 -> (6: none)
//                                     mask 1: 0 -> 1, 2 -> 3, 4 -> 5
//   AllReduce (xCCL notes: "a Reduce to rank 0 and then a Broadcast"), in place in the input:
//     1. the Reduce above with root 0, every rank accumulating in its own input;
//     2. the Broadcast above from rank 0, each copy overwriting the receiver's partial sum.
//
//      allreduce, R = 5:   reduce  mask 1: 0 <+ 1, 2 <+ 3     broadcast  mask 4: 0 => 4
//                                  mask 2: 0 <+ 2                        mask 2: 0 => 2
//                                  mask 4: 0 <+ 4                        mask 1: 0 => 1, 2 => 3
#include <fmt/format.h>

#include <vector>

#include "algorithms/common.h"
#include "algorithms/families.h"
#include "support/error.h"

namespace chorus::algorithms {
namespace {

std::unique_ptr<lang::Program> buildBroadcastBinomial(const std::string& name,
                                                      const BuildArgs& args) {
  const int size = args.ranks;
  const int root = rootOf(name, args);
  auto program = std::make_unique<lang::Program>(name, lang::broadcast(size, 1, root, false),
                                                 args.programOptions);
  auto rankOf = [&](int v) { return (v + root) % size; };
  program->chunk(root, lang::Buffer::input, 0).copy(root, lang::Buffer::output, 0);
  for (int mask = powerOfTwoAtLeast(size) / 2; mask >= 1; mask /= 2) {
    for (int v = 0; v + mask < size; v += 2 * mask) {
      program->chunk(rankOf(v), lang::Buffer::output, 0)
          .copy(rankOf(v + mask), lang::Buffer::output, 0);
    }
  }
  return program;
}

std::unique_ptr<lang::Program> buildReduceBinomial(const std::string& name, const BuildArgs& args) {
  const int size = args.ranks;
  const int root = rootOf(name, args);
  auto program = std::make_unique<lang::Program>(name, lang::reduce(size, 1, root, false),
                                                 args.programOptions);
  auto rankOf = [&](int v) { return (v + root) % size; };
  // A rank with at least one child (v even, v + 1 < R) accumulates in its output.
  auto hasChildren = [&](int v) { return v % 2 == 0 && v + 1 < size; };
  for (int v = 0; v < size; ++v) {
    if (hasChildren(v) || v == 0)
      program->chunk(rankOf(v), lang::Buffer::input, 0).copy(rankOf(v), lang::Buffer::output, 0);
  }
  for (int mask = 1; mask < size; mask *= 2) {
    for (int v = 0; v + mask < size; v += 2 * mask) {
      const int child = v + mask;
      const lang::Buffer partial = hasChildren(child) ? lang::Buffer::output : lang::Buffer::input;
      program->chunk(rankOf(v), lang::Buffer::output, 0)
          .reduce(program->chunk(rankOf(child), partial, 0));
    }
  }
  return program;
}

std::unique_ptr<lang::Program> buildAllReduceBinomial(const std::string& name,
                                                      const BuildArgs& args) {
  const int size = args.ranks;
  auto program =
      std::make_unique<lang::Program>(name, lang::allReduce(size, 1, true), args.programOptions);
  for (int mask = 1; mask < size; mask *= 2) {
    for (int v = 0; v + mask < size; v += 2 * mask) {
      program->chunk(v, lang::Buffer::input, 0)
          .reduce(program->chunk(v + mask, lang::Buffer::input, 0));
    }
  }
  for (int mask = powerOfTwoAtLeast(size) / 2; mask >= 1; mask /= 2) {
    for (int v = 0; v + mask < size; v += 2 * mask) {
      program->chunk(v, lang::Buffer::input, 0).copy(v + mask, lang::Buffer::input, 0);
    }
  }
  return program;
}

}  // namespace

std::vector<AlgorithmInfo> treeAlgorithms() {
  return {
      {.name = "allreduce.binomial",
       .collective = "allreduce",
       .description = "binomial-tree Reduce to rank 0, then binomial-tree Broadcast, in place",
       .citation = "xCCL notes Binomial Tree (Reduce then Broadcast for All-Reduce)",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {},
       .build = &buildAllReduceBinomial,
       .steps = "2⌈lg p⌉",
       .bytesSent = "≤ ⌈lg p⌉ · n (rank 0: ⌈lg p⌉ · n, a leaf: n)",
       .cost = "2⌈lg p⌉(α + nβ) + ⌈lg p⌉ · nγ",
       .winsWhen = "tiny buffers where a ring's 2(p−1) latency terms dominate"},
      {.name = "broadcast.binomial",
       .collective = "broadcast",
       .description = "binomial tree from the root: log2(R) rounds, whole buffer per message",
       .citation = "xCCL notes Binomial Tree (Broadcast)",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {rootParam()},
       .build = &buildBroadcastBinomial,
       .steps = "⌈lg p⌉",
       .bytesSent = "≤ ⌈lg p⌉ · n (root)",
       .cost = "⌈lg p⌉(α + nβ)",
       .winsWhen = "small buffers"},
      {.name = "reduce.binomial",
       .collective = "reduce",
       .description = "binomial tree into the root: log2(R) rounds of receive-and-add",
       .citation = "xCCL notes Binomial Tree (Reduce)",
       .shape = Shape::ranks,
       .minRanks = 2,
       .params = {rootParam()},
       .build = &buildReduceBinomial,
       .steps = "⌈lg p⌉",
       .bytesSent = "n (root: 0)",
       .cost = "⌈lg p⌉(α + nβ + nγ)",
       .winsWhen = "small buffers"},
  };
}

}  // namespace chorus::algorithms
