// Helpers for the communicator API tests: typed host buffers filled with small integers (exact
// in every data type, so any reduction order gives identical bits), reference reductions, and
// the two ways to drive initAll communicators (one thread per rank, or a group from one thread).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "chorus/chorus.h"
#include "runtime/datatype.h"

namespace chorus::apitest {

// Writes the small integer `value` as element `index` of `type` at `base`.
inline void storeValue(DataType type, void* base, std::size_t index, long value) {
  auto* at = static_cast<std::uint8_t*>(base) + index * runtime::dataTypeSize(type);
  auto put = [&](auto v) { std::memcpy(at, &v, sizeof(v)); };
  switch (type) {
    case DataType::int8:
      return put(static_cast<std::int8_t>(value));
    case DataType::uint8:
      return put(static_cast<std::uint8_t>(value));
    case DataType::int32:
      return put(static_cast<std::int32_t>(value));
    case DataType::uint32:
      return put(static_cast<std::uint32_t>(value));
    case DataType::int64:
      return put(static_cast<std::int64_t>(value));
    case DataType::uint64:
      return put(static_cast<std::uint64_t>(value));
    case DataType::float16:
      return put(runtime::floatToHalf(static_cast<float>(value)));
    case DataType::bfloat16:
      return put(runtime::floatToBfloat16(static_cast<float>(value)));
    case DataType::float32:
      return put(static_cast<float>(value));
    case DataType::float64:
      return put(static_cast<double>(value));
  }
}

inline bool isUnsigned(DataType type) {
  return type == DataType::uint8 || type == DataType::uint32 || type == DataType::uint64;
}

inline bool isInteger(DataType type) {
  return type != DataType::float16 && type != DataType::bfloat16 && type != DataType::float32 &&
         type != DataType::float64;
}

// Input element `index` of `rank`: small values that keep sum, prod, min, max and avg exact in
// every type. For avg on floating types the sum over ranks is a multiple of the rank count
// (base + 2*rank - 3 sums to n*base + n*(n-1) - 3n); on integer types it usually is not, which
// exercises truncation toward zero.
inline long inputValue(ReduceOp op, DataType type, int rank, std::size_t index) {
  const long h =
      static_cast<long>((index * 2654435761u + static_cast<std::size_t>(rank) * 40503u) % 7);
  if (op == ReduceOp::prod) return 1 + h % 2;
  if (op == ReduceOp::avg && !isInteger(type)) return static_cast<long>(index % 5) + 2 * rank - 3;
  return isUnsigned(type) ? h % 4 : h - 3;
}

// The reduction of `values` under `op` (avg divides with truncation toward zero, as NCCL does
// for integers; the inputs above make it exact for floats).
inline long reduceValues(ReduceOp op, const std::vector<long>& values) {
  long result = values.at(0);
  for (std::size_t i = 1; i < values.size(); ++i) {
    const long v = values[i];
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::avg:
        result += v;
        break;
      case ReduceOp::prod:
        result *= v;
        break;
      case ReduceOp::min:
        result = std::min(result, v);
        break;
      case ReduceOp::max:
        result = std::max(result, v);
        break;
    }
  }
  if (op == ReduceOp::avg) result /= static_cast<long>(values.size());
  return result;
}

// A typed host buffer.
struct Buffer {
  Buffer(DataType t, std::size_t elements)
      : type(t), bytes(std::max<std::size_t>(1, elements) * runtime::dataTypeSize(t), 0xEE) {}
  void* data() { return bytes.data(); }
  void* at(std::size_t element) { return bytes.data() + element * runtime::dataTypeSize(type); }
  void set(std::size_t index, long value) { storeValue(type, bytes.data(), index, value); }
  // True if element `index` holds exactly `value` in this buffer's type.
  bool holds(std::size_t index, long value) const {
    const std::size_t size = runtime::dataTypeSize(type);
    std::uint8_t want[8];
    storeValue(type, want, 0, value);
    return std::memcmp(bytes.data() + index * size, want, size) == 0;
  }
  DataType type;
  std::vector<std::uint8_t> bytes;
};

// Runs fn(rank) on one thread per rank; rethrows the first exception after all have ended.
inline void onThreads(int nranks, const std::function<void(int)>& fn) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(nranks));
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < nranks; ++r)
      threads.emplace_back([&, r] {
        try {
          fn(r);
        } catch (...) {
          errors[static_cast<std::size_t>(r)] = std::current_exception();
        }
      });
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// Issues fn(rank) for every rank from this thread inside one group.
inline void inGroup(int nranks, const std::function<void(int)>& fn) {
  groupStart();
  try {
    for (int r = 0; r < nranks; ++r)
      fn(r);
  } catch (...) {
    groupEnd();
    throw;
  }
  groupEnd();
}

// How a test drives the ranks of an initAll set.
enum class Drive { group, threads };

inline void PrintTo(Drive how, std::ostream* os) {
  *os << (how == Drive::group ? "group from one thread" : "one thread per rank");
}

inline void drive(Drive how, int nranks, const std::function<void(int)>& fn) {
  if (how == Drive::group)
    inGroup(nranks, fn);
  else
    onThreads(nranks, fn);
}

inline CommConfig testConfig(std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  CommConfig config;
  config.timeout = timeout;
  return config;
}

// Runs `fn` expecting an exception of type E; returns its message ("" and a test failure if
// none or another type was thrown).
template <class E, class Fn>
std::string messageOf(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected another exception type, got: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected an exception, none was thrown";
  return "";
}

}  // namespace chorus::apitest
