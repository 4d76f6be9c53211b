#include "runtime/run_check.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "ir/algorithm.h"
#include "ir/collective.h"
#include "runtime/collective_args.h"
#include "runtime/reduce_kernels.h"
#include "support/error.h"

namespace chorus::runtime {

namespace {

// Writes the integer `value` as an element of `type`.
void storeValue(DataType type, std::uint8_t* at, long value) {
  switch (type) {
    case DataType::int8: {
      auto v = static_cast<std::int8_t>(value);
      std::memcpy(at, &v, 1);
      break;
    }
    case DataType::uint8: {
      auto v = static_cast<std::uint8_t>(value);
      std::memcpy(at, &v, 1);
      break;
    }
    case DataType::int32: {
      auto v = static_cast<std::int32_t>(value);
      std::memcpy(at, &v, 4);
      break;
    }
    case DataType::uint32: {
      auto v = static_cast<std::uint32_t>(value);
      std::memcpy(at, &v, 4);
      break;
    }
    case DataType::int64: {
      auto v = static_cast<std::int64_t>(value);
      std::memcpy(at, &v, 8);
      break;
    }
    case DataType::uint64: {
      auto v = static_cast<std::uint64_t>(value);
      std::memcpy(at, &v, 8);
      break;
    }
    case DataType::float16: {
      auto v = floatToHalf(static_cast<float>(value));
      std::memcpy(at, &v, 2);
      break;
    }
    case DataType::bfloat16: {
      auto v = floatToBfloat16(static_cast<float>(value));
      std::memcpy(at, &v, 2);
      break;
    }
    case DataType::float32: {
      auto v = static_cast<float>(value);
      std::memcpy(at, &v, 4);
      break;
    }
    case DataType::float64: {
      auto v = static_cast<double>(value);
      std::memcpy(at, &v, 8);
      break;
    }
  }
}

std::string formatValue(DataType type, const std::uint8_t* at) {
  switch (type) {
    case DataType::int8: {
      std::int8_t v;
      std::memcpy(&v, at, 1);
      return std::to_string(v);
    }
    case DataType::uint8: {
      std::uint8_t v;
      std::memcpy(&v, at, 1);
      return std::to_string(v);
    }
    case DataType::int32: {
      std::int32_t v;
      std::memcpy(&v, at, 4);
      return std::to_string(v);
    }
    case DataType::uint32: {
      std::uint32_t v;
      std::memcpy(&v, at, 4);
      return std::to_string(v);
    }
    case DataType::int64: {
      std::int64_t v;
      std::memcpy(&v, at, 8);
      return std::to_string(v);
    }
    case DataType::uint64: {
      std::uint64_t v;
      std::memcpy(&v, at, 8);
      return std::to_string(v);
    }
    case DataType::float16: {
      std::uint16_t v;
      std::memcpy(&v, at, 2);
      return fmt::format("{}", halfToFloat(v));
    }
    case DataType::bfloat16: {
      std::uint16_t v;
      std::memcpy(&v, at, 2);
      return fmt::format("{}", bfloat16ToFloat(v));
    }
    case DataType::float32: {
      float v;
      std::memcpy(&v, at, 4);
      return fmt::format("{}", v);
    }
    case DataType::float64: {
      double v;
      std::memcpy(&v, at, 8);
      return fmt::format("{}", v);
    }
  }
  return "?";
}

bool isUnsigned(DataType t) {
  return t == DataType::uint8 || t == DataType::uint32 || t == DataType::uint64;
}

// Small integers, exact in every type, so any reduction order gives identical bits.
long inputValue(ReduceOp op, DataType type, int rank, std::size_t index) {
  const auto h =
      static_cast<long>((index * 2654435761u + static_cast<std::size_t>(rank) * 40503u) % 7);
  if (op == ReduceOp::prod) return 1 + h % 2;
  return isUnsigned(type) ? h % 4 : h - 3;
}

// Input element `index` of `rank`: given by the caller, or the generated exact value.
void storeInput(const RunOptions& options, int rank, std::size_t index, std::uint8_t* at) {
  const std::size_t esz = dataTypeSize(options.type);
  if (!options.givenInputs.empty()) {
    const auto* given = static_cast<const std::uint8_t*>(options.givenInputs.at(rank));
    std::memcpy(at, given + index * esz, esz);
    return;
  }
  storeValue(options.type, at, inputValue(options.op, options.type, rank, index));
}

bool isFloating(DataType t) {
  return t == DataType::float16 || t == DataType::bfloat16 || t == DataType::float32 ||
         t == DataType::float64;
}

double floatingValue(DataType type, const std::uint8_t* at) {
  switch (type) {
    case DataType::float16: {
      std::uint16_t v;
      std::memcpy(&v, at, 2);
      return halfToFloat(v);
    }
    case DataType::bfloat16: {
      std::uint16_t v;
      std::memcpy(&v, at, 2);
      return bfloat16ToFloat(v);
    }
    case DataType::float32: {
      float v;
      std::memcpy(&v, at, 4);
      return v;
    }
    default: {
      double v;
      std::memcpy(&v, at, 8);
      return v;
    }
  }
}

// Bitwise equal, or for floating types within `tolerance` relative to the expected value's
// magnitude (at least 1). NaN only matches NaN.
bool matches(DataType type, const std::uint8_t* got, const std::uint8_t* expected,
             double tolerance) {
  const std::size_t esz = dataTypeSize(type);
  if (std::memcmp(got, expected, esz) == 0) return true;
  if (tolerance <= 0 || !isFloating(type)) return false;
  const double g = floatingValue(type, got);
  const double e = floatingValue(type, expected);
  if (std::isnan(g) || std::isnan(e)) return std::isnan(g) && std::isnan(e);
  return std::fabs(g - e) <= tolerance * std::max(1.0, std::fabs(e));
}

std::uint64_t hashFnv1a(std::string_view text) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

}  // namespace

RankBuffers::RankBuffers(const ir::Algorithm& algorithm, int rank, const RunOptions& options)
    : algorithm_(algorithm), rank_(rank), options_(options) {
  const std::size_t esz = dataTypeSize(options.type);
  const std::size_t count = options.count;
  const auto collective = ir::collectiveOf(algorithm);
  const std::size_t q = ir::chunksPerBlock(algorithm);
  in_.assign(inputElements(algorithm, rank, count) * esz, 0);
  out_.assign(outputElements(algorithm, rank, count) * esz, 0);
  input_ = in_.data();
  output_ = out_.data();
  const auto inCanon = collective->canonical(rank, {ir::BufferKind::input, 0});
  const auto outCanon = collective->canonical(rank, {ir::BufferKind::output, 0});
  if (inCanon.buffer == ir::BufferKind::output) input_ = output_ + inCanon.index / q * count * esz;
  if (outCanon.buffer == ir::BufferKind::input) output_ = input_ + outCanon.index / q * count * esz;
}

void RankBuffers::reset() {
  const std::size_t esz = dataTypeSize(options_.type);
  std::fill(in_.begin(), in_.end(), 0);
  std::fill(out_.begin(), out_.end(), 0);
  const std::size_t elements = inputElements(algorithm_, rank_, options_.count);
  for (std::size_t i = 0; i < elements; ++i)
    storeInput(options_, rank_, i, input_ + i * esz);
}

std::size_t RankBuffers::offsetInMirror(const std::uint8_t* at) const {
  if (at >= in_.data() && at < in_.data() + in_.size())
    return static_cast<std::size_t>(at - in_.data());
  return in_.size() + static_cast<std::size_t>(at - out_.data());
}

void RankBuffers::copyToMirror(std::uint8_t* mirror) const {
  if (!in_.empty()) std::memcpy(mirror, in_.data(), in_.size());
  if (!out_.empty()) std::memcpy(mirror + in_.size(), out_.data(), out_.size());
}

void RankBuffers::copyFromMirror(const std::uint8_t* mirror) {
  if (!in_.empty()) std::memcpy(in_.data(), mirror, in_.size());
  if (!out_.empty()) std::memcpy(out_.data(), mirror + in_.size(), out_.size());
}

void rethrowRootCause(const std::vector<std::exception_ptr>& errors) {
  for (const auto& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const CommError&) {
      continue;
    }
  }
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

void checkThreadRanks(const ir::Algorithm& algorithm, const RunOptions& options,
                      const std::vector<std::unique_ptr<RankBuffers>>& buffers, RunReport* report,
                      std::vector<std::vector<std::uint8_t>>* outputs) {
  const auto n = buffers.size();
  for (std::size_t r = 0; r < n; ++r) {
    checkRankOutput(algorithm, static_cast<int>(r), options, buffers[r]->output(), report);
    checkRankInput(algorithm, static_cast<int>(r), options, buffers[r]->input(), report);
  }
  if (!outputs) return;
  const std::size_t esz = dataTypeSize(options.type);
  outputs->assign(n, {});
  for (std::size_t r = 0; r < n; ++r) {
    const auto* out = static_cast<const std::uint8_t*>(buffers[r]->output());
    (*outputs)[r].assign(out,
                         out + outputElements(algorithm, static_cast<int>(r), options.count) * esz);
  }
}

void checkRankOutput(const ir::Algorithm& algorithm, int rank, const RunOptions& options,
                     const void* output, RunReport* report) {
  const auto collective = ir::collectiveOf(algorithm);
  const std::size_t esz = dataTypeSize(options.type);
  const std::size_t count = options.count;
  const std::size_t q = ir::chunksPerBlock(algorithm);
  // Each output chunk is the reduction of the input chunks its postcondition names; the
  // inputs are regenerated here.
  const std::size_t chunkElems = (count + q - 1) / q;
  std::vector<std::uint8_t> expected(chunkElems * esz), part(chunkElems * esz);
  auto inputChunk = [&](int from, int chunk, std::uint8_t* dst, std::size_t elems) {
    const std::size_t block = static_cast<std::size_t>(chunk) / q;
    const std::size_t first = block * count + (chunk % q) * chunkElems;
    for (std::size_t o = 0; o < elems; ++o)
      storeInput(options, from, first + o, dst + o * esz);
  };
  const bool reduces = ir::collectiveReduces(algorithm.collective);
  const auto* out = static_cast<const std::uint8_t*>(output);
  for (int j = 0; j < collective->outputChunks(rank); ++j) {
    const auto want = collective->expectedOutput(rank, j);
    if (!want) continue;
    const std::size_t block = static_cast<std::size_t>(j) / q;
    const std::size_t within = (j % q) * chunkElems;
    if (within >= count) continue;
    const std::size_t elems = std::min(chunkElems, count - within);
    const auto& parts = want->parts();
    inputChunk(parts[0].rank, parts[0].index, expected.data(), elems);
    for (std::size_t p = 1; p < parts.size(); ++p) {
      inputChunk(parts[p].rank, parts[p].index, part.data(), elems);
      reduceElements(options.type, options.op, expected.data(), expected.data(), part.data(),
                     elems);
    }
    if (options.op == ReduceOp::avg && reduces)
      divideElements(options.type, expected.data(), elems, algorithm.nranks);
    const std::uint8_t* got = out + (block * count + within) * esz;
    for (std::size_t o = 0; o < elems; ++o) {
      ++report->checkedElements;
      if (matches(options.type, got + o * esz, expected.data() + o * esz,
                  options.relativeTolerance))
        continue;
      ++report->wrongElements;
      if (report->firstWrong.empty())
        report->firstWrong =
            fmt::format("rank {} output[{}]: got {}, expected {}", rank, block * count + within + o,
                        formatValue(options.type, got + o * esz),
                        formatValue(options.type, expected.data() + o * esz));
    }
  }
}

void checkRankInput(const ir::Algorithm& algorithm, int rank, const RunOptions& options,
                    const void* input, RunReport* report) {
  if (ir::collectiveOf(algorithm)->inPlace()) return;
  const std::size_t esz = dataTypeSize(options.type);
  const std::size_t elements = inputElements(algorithm, rank, options.count);
  const auto* in = static_cast<const std::uint8_t*>(input);
  std::vector<std::uint8_t> before(esz);
  for (std::size_t i = 0; i < elements; ++i) {
    storeInput(options, rank, i, before.data());
    ++report->checkedElements;
    if (std::memcmp(in + i * esz, before.data(), esz) == 0) continue;
    ++report->wrongElements;
    if (report->firstWrong.empty())
      report->firstWrong = fmt::format(
          "rank {} input[{}]: changed from {} to {} (an out-of-place collective must leave its "
          "input unchanged)",
          rank, i, formatValue(options.type, before.data()),
          formatValue(options.type, in + i * esz));
  }
}

CallIdentity identifyCall(const ir::Algorithm& algorithm, const RunOptions& options, int sequence) {
  CallIdentity call;
  call.description = fmt::format(
      "{} '{}' #{} (count {} {} {})", ir::collectiveName(algorithm.collective), algorithm.name,
      sequence, options.count, dataTypeName(options.type), reduceOpName(options.op));
  call.tag = hashFnv1a(call.description);
  return call;
}

}  // namespace chorus::runtime
