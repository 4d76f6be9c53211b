// Test data for the benchmarks' exact checks (perf layer): integer-valued inputs small enough
// that every reduction order gives the same result in every data type, the expected output of
// each collective, and the check that an out-of-place call left its input unchanged. Outputs
// start as the sentinel 0, a value no correct result takes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "chorus/types.h"
#include "perf/collective.h"

namespace chorus::perf {

// What one benchmark row computes, as the checks need it.
struct DataCase {
  Collective collective = Collective::allreduce;
  CollectiveShape shape;
  int nranks = 1;
  int root = 0;
  ReduceOp op = ReduceOp::sum;
};

// Input element `index` of `rank` in fill round `seed`: 1..8 for sum, min, max and avg (sums
// stay <= 8 * nranks); for prod, 2 on exactly one rank per index and 1 elsewhere (products are
// 2). Every value is >= 1, so every correct output is too.
double inputValue(ReduceOp op, int nranks, int rank, std::size_t index, int seed);

// The exact expected value of element `index` of `rank`'s output (shape.recvCount elements), or
// nullopt where the collective leaves it undefined (reduce on ranks other than the root). avg
// gives the exact quotient: store it through the element type (integers truncate, as in NCCL).
std::optional<double> expectedValue(const DataCase& data, int rank, std::size_t index, int seed);

// Element storage <-> double for arithmetic types; other types (float16) bring their own codec
// with the same two static functions.
template <class T>
struct ArithmeticCodec {
  using Storage = T;
  static double load(T value) { return static_cast<double>(value); }
  static T store(double value) { return static_cast<T>(value); }
};

// data[i] = inputValue(..., firstIndex + i, seed).
template <class Codec>
void fillInput(std::span<typename Codec::Storage> data, ReduceOp op, int nranks, int rank, int seed,
               std::size_t firstIndex = 0) {
  for (std::size_t i = 0; i < data.size(); ++i)
    data[i] = Codec::store(inputValue(op, nranks, rank, firstIndex + i, seed));
}

template <class Codec>
void fillSentinel(std::span<typename Codec::Storage> data) {
  for (auto& element : data)
    element = Codec::store(0.0);
}

// Elements of `output` (rank's output, shape.recvCount elements, or fewer for a partial check)
// that differ from the expected value rounded to the element type.
template <class Codec>
std::int64_t countWrong(std::span<const typename Codec::Storage> output, const DataCase& data,
                        int rank, int seed) {
  std::int64_t wrong = 0;
  for (std::size_t i = 0; i < output.size(); ++i) {
    const std::optional<double> expected = expectedValue(data, rank, i, seed);
    if (!expected) continue;
    const double want = Codec::load(Codec::store(*expected));
    if (Codec::load(output[i]) != want) ++wrong;
  }
  return wrong;
}

// Elements of `input` (rank's input, shape.sendCount elements, or fewer for a partial check)
// that no longer hold the value fillInput wrote for `seed`: an out-of-place collective must
// leave its input unchanged (NCCL's `const void* sendbuff`), so each counts as wrong.
template <class Codec>
std::int64_t countChangedInput(std::span<const typename Codec::Storage> input, const DataCase& data,
                               int rank, int seed) {
  std::int64_t changed = 0;
  for (std::size_t i = 0; i < input.size(); ++i) {
    const double want = Codec::load(Codec::store(inputValue(data.op, data.nranks, rank, i, seed)));
    if (Codec::load(input[i]) != want) ++changed;
  }
  return changed;
}

}  // namespace chorus::perf
