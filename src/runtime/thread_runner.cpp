#include "runtime/thread_runner.h"

#include <cstring>
#include <exception>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "ir/collective.h"
#include "runtime/interpreter.h"
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

struct RankBuffers {
  std::vector<std::uint8_t> in, out;  // out unused when aliased into `in` (and vice versa)
  const void* input = nullptr;
  void* output = nullptr;
};

}  // namespace

ThreadRunReport runOnThreads(const ir::Algorithm& algorithm, const ThreadRunOptions& options) {
  const int n = algorithm.nranks;
  const auto collective = ir::collectiveOf(algorithm);
  const std::size_t esz = dataTypeSize(options.type);
  const std::size_t count = options.count;
  std::vector<RankBuffers> buffers(n);
  std::vector<std::size_t> inElems(n), outElems(n);
  for (int r = 0; r < n; ++r) {
    inElems[r] = inputElements(algorithm, r, count);
    outElems[r] = outputElements(algorithm, r, count);
  }
  // Chunks per block of `count` elements (see CollectiveArgs).
  const std::size_t q = chunksPerBlock(algorithm);
  // Allocates and fills rank r's buffers, aliasing them as the in-place collective prescribes
  // (the aliased buffer is the window of blocks starting at the canonical chunk index).
  auto fill = [&](int r) {
    RankBuffers& b = buffers[r];
    const auto inCanon = collective->canonical(r, {ir::BufferKind::input, 0});
    const auto outCanon = collective->canonical(r, {ir::BufferKind::output, 0});
    b.in.assign(inElems[r] * esz, 0);
    b.out.assign(outElems[r] * esz, 0);
    std::uint8_t* inPtr = b.in.data();
    std::uint8_t* outPtr = b.out.data();
    if (inCanon.buffer == ir::BufferKind::output) inPtr = outPtr + inCanon.index / q * count * esz;
    if (outCanon.buffer == ir::BufferKind::input) outPtr = inPtr + outCanon.index / q * count * esz;
    for (std::size_t i = 0; i < inElems[r]; ++i)
      storeValue(options.type, inPtr + i * esz, inputValue(options.op, options.type, r, i));
    b.input = inPtr;
    b.output = outPtr;
  };

  ThreadRunReport report;
  for (int iteration = 0; iteration < std::max(1, options.iterations); ++iteration) {
    for (int r = 0; r < n; ++r)
      fill(r);
    transport::ThreadGroup group(n, options.fifo);
    std::vector<std::exception_ptr> errors(n);
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r)
      threads.emplace_back([&, r] {
        try {
          CollectiveArgs args{buffers[r].input, buffers[r].output, count, options.type, options.op};
          ExecOptions exec;
          exec.timeout = options.timeout;
          executeRank(algorithm, r, args, group.rank(r), exec);
        } catch (...) {
          errors[r] = std::current_exception();
          group.rank(r).abort(fmt::format("rank {} failed", r));
        }
      });
    for (auto& t : threads)
      t.join();
    report.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // Report the root cause: a rank's own error before the ones it caused elsewhere.
    for (auto& e : errors) {
      if (!e) continue;
      try {
        std::rethrow_exception(e);
      } catch (const CommError&) {
        continue;
      } catch (...) {
        throw;
      }
    }
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
  }

  // Expected outputs from the collective's definition: each output chunk is the reduction of
  // the input chunks its postcondition names (fresh inputs are regenerated here).
  const std::size_t chunkElems = (count + q - 1) / q;
  std::vector<std::uint8_t> expected(chunkElems * esz), part(chunkElems * esz);
  auto inputChunk = [&](int rank, int chunk, std::uint8_t* dst, std::size_t elems) {
    const std::size_t block = static_cast<std::size_t>(chunk) / q;
    const std::size_t first = block * count + (chunk % q) * chunkElems;
    for (std::size_t o = 0; o < elems; ++o)
      storeValue(options.type, dst + o * esz,
                 inputValue(options.op, options.type, rank, first + o));
  };
  const bool reduces = algorithm.collective == ir::CollectiveKind::allreduce ||
                       algorithm.collective == ir::CollectiveKind::reducescatter ||
                       algorithm.collective == ir::CollectiveKind::reduce;
  for (int r = 0; r < n; ++r) {
    const auto* out = static_cast<const std::uint8_t*>(buffers[r].output);
    for (int j = 0; j < collective->outputChunks(r); ++j) {
      const auto want = collective->expectedOutput(r, j);
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
        divideElements(options.type, expected.data(), elems, n);
      const std::uint8_t* got = out + (block * count + within) * esz;
      for (std::size_t o = 0; o < elems; ++o) {
        ++report.checkedElements;
        if (std::memcmp(got + o * esz, expected.data() + o * esz, esz) == 0) continue;
        if (report.wrongElements++ == 0)
          report.firstWrong =
              fmt::format("rank {} output[{}]: got {}, expected {}", r, block * count + within + o,
                          formatValue(options.type, got + o * esz),
                          formatValue(options.type, expected.data() + o * esz));
      }
    }
  }
  return report;
}

}  // namespace chorus::runtime
