#include "bench_runner.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>

#include "perf/pattern.h"
#include "runtime/datatype.h"
#include "support/error.h"

namespace chorus::cli {

namespace {

using perf::BenchCase;
using perf::Collective;

struct HalfCodec {
  using Storage = std::uint16_t;
  static double load(Storage bits) { return runtime::halfToFloat(bits); }
  static Storage store(double value) { return runtime::floatToHalf(static_cast<float>(value)); }
};

struct Bfloat16Codec {
  using Storage = std::uint16_t;
  static double load(Storage bits) { return runtime::bfloat16ToFloat(bits); }
  static Storage store(double value) { return runtime::floatToBfloat16(static_cast<float>(value)); }
};

// The perf pattern helpers for one element type, on raw bytes.
struct ElementOps {
  void (*fillInput)(std::byte* data, std::size_t count, ReduceOp op, int nranks, int rank, int seed,
                    std::size_t firstIndex);
  void (*fillSentinel)(std::byte* data, std::size_t count);
  std::int64_t (*countWrong)(const std::byte* data, std::size_t count, const perf::DataCase& dc,
                             int rank, int seed);
  std::int64_t (*countChangedInput)(const std::byte* data, std::size_t count,
                                    const perf::DataCase& dc, int rank, int seed);
};

template <class Codec>
ElementOps opsFor() {
  using T = typename Codec::Storage;
  return ElementOps{
      [](std::byte* data, std::size_t count, ReduceOp op, int nranks, int rank, int seed,
         std::size_t firstIndex) {
        perf::fillInput<Codec>(std::span<T>(reinterpret_cast<T*>(data), count), op, nranks, rank,
                               seed, firstIndex);
      },
      [](std::byte* data, std::size_t count) {
        perf::fillSentinel<Codec>(std::span<T>(reinterpret_cast<T*>(data), count));
      },
      [](const std::byte* data, std::size_t count, const perf::DataCase& dc, int rank, int seed) {
        return perf::countWrong<Codec>(std::span<const T>(reinterpret_cast<const T*>(data), count),
                                       dc, rank, seed);
      },
      [](const std::byte* data, std::size_t count, const perf::DataCase& dc, int rank, int seed) {
        return perf::countChangedInput<Codec>(
            std::span<const T>(reinterpret_cast<const T*>(data), count), dc, rank, seed);
      }};
}

ElementOps elementOps(DataType type) {
  switch (type) {
    case DataType::int8:
      return opsFor<perf::ArithmeticCodec<std::int8_t>>();
    case DataType::uint8:
      return opsFor<perf::ArithmeticCodec<std::uint8_t>>();
    case DataType::int32:
      return opsFor<perf::ArithmeticCodec<std::int32_t>>();
    case DataType::uint32:
      return opsFor<perf::ArithmeticCodec<std::uint32_t>>();
    case DataType::int64:
      return opsFor<perf::ArithmeticCodec<std::int64_t>>();
    case DataType::uint64:
      return opsFor<perf::ArithmeticCodec<std::uint64_t>>();
    case DataType::float16:
      return opsFor<HalfCodec>();
    case DataType::bfloat16:
      return opsFor<Bfloat16Codec>();
    case DataType::float32:
      return opsFor<perf::ArithmeticCodec<float>>();
    case DataType::float64:
      return opsFor<perf::ArithmeticCodec<double>>();
  }
  CHORUS_INTERNAL_ASSERT(false, "DataType value out of range");
}

}  // namespace

ChorusRunner::Buffer::Buffer(std::size_t bytes, bool registered)
    : registered_(registered), heap_(registered ? 0 : bytes) {
  if (!registered) return;
  registeredData_ = static_cast<std::byte*>(memAlloc(std::max<std::size_t>(bytes, 1)));
  std::memset(registeredData_, 0, bytes);  // fault the pages in before timing, as heap_'s are
}

ChorusRunner::Buffer::~Buffer() {
  if (registered_) memFree(registeredData_);
}

ChorusRunner::ChorusRunner(Communicator& comm, DataType type, std::size_t maxElements,
                           std::size_t bufferOffset, bool registered, bool onGpu)
    : comm_(comm),
      type_(type),
      elementSize_(runtime::dataTypeSize(type)),
      offset_(bufferOffset),
      bytes_(maxElements * elementSize_ + bufferOffset),
      send_(bytes_, registered),
      recv_(bytes_, registered) {
  if (onGpu) gpu_ = std::make_unique<Gpu>(bytes_);
}

std::byte* ChorusRunner::callAt(Buffer& buffer, std::size_t element) {
  std::byte* host = at(buffer, element);
  if (!gpu_) return host;
  GpuMirror& mirror = &buffer == &send_ ? gpu_->send : gpu_->recv;
  return mirror.device() + (host - buffer.data());
}

void ChorusRunner::prepare(const BenchCase& c, int seed) {
  const ElementOps ops = elementOps(type_);
  const perf::CollectiveShape& shape = c.data.shape;
  const int r = rank();
  const int n = nranks();
  ops.fillSentinel(at(recv_, 0), shape.recvCount);
  if (!c.inplace) {
    ops.fillInput(at(send_, 0), shape.sendCount, c.data.op, n, r, seed, 0);
  } else if (c.data.collective == Collective::allgather) {
    ops.fillInput(at(recv_, r * shape.count), shape.count, c.data.op, n, r, seed, 0);
  } else if (c.data.collective != Collective::broadcast || r == c.data.root) {
    ops.fillInput(at(recv_, 0), shape.sendCount, c.data.op, n, r, seed, 0);
  }
  if (gpu_) {
    gpu_->send.upload(send_.data(), bytes_);
    gpu_->recv.upload(recv_.data(), bytes_);
  }
}

void ChorusRunner::run(const BenchCase& c, std::int64_t iterations) {
  const perf::CollectiveShape& shape = c.data.shape;
  const int r = rank();
  std::byte* recv = callAt(recv_, 0);
  const std::byte* send = c.inplace ? recv : callAt(send_, 0);
  // In place: AllGather's input and ReduceScatter's output are this rank's block of recv_.
  auto ownBlock = [&] { return callAt(recv_, r * shape.count); };
  const ReduceOp op = c.data.op;
  const Stream stream = gpu_ ? gpu_->stream.get() : nullptr;
  for (std::int64_t i = 0; i < iterations; ++i) {
    switch (c.data.collective) {
      case Collective::allreduce:
        comm_.allReduce(send, recv, shape.count, type_, op, stream);
        break;
      case Collective::allgather:
        comm_.allGather(c.inplace ? ownBlock() : send, recv, shape.count, type_, stream);
        break;
      case Collective::reducescatter:
        comm_.reduceScatter(send, c.inplace ? ownBlock() : recv, shape.count, type_, op, stream);
        break;
      case Collective::alltoall:
        comm_.allToAll(send, recv, shape.count, type_, stream);
        break;
      case Collective::broadcast:
        comm_.broadcast(send, recv, shape.count, type_, c.data.root, stream);
        break;
      case Collective::reduce:
        comm_.reduce(send, recv, shape.count, type_, op, c.data.root, stream);
        break;
    }
  }
  if (gpu_) gpu_->stream.synchronize();
  lastAlgorithm_ = comm_.lastPlan().algorithm;
}

std::int64_t ChorusRunner::countWrong(const BenchCase& c, int seed) {
  if (gpu_) {
    gpu_->send.download(send_.data(), bytes_);
    gpu_->recv.download(recv_.data(), bytes_);
  }
  const perf::CollectiveShape& shape = c.data.shape;
  const bool shifted = c.inplace && c.data.collective == Collective::reducescatter;
  const std::byte* output = shifted ? at(recv_, rank() * shape.count) : at(recv_, 0);
  const ElementOps ops = elementOps(type_);
  const std::int64_t wrong = ops.countWrong(output, shape.recvCount, c.data, rank(), seed);
  if (c.inplace) return wrong;
  return wrong + ops.countChangedInput(at(send_, 0), shape.sendCount, c.data, rank(), seed);
}

void ChorusRunner::allReduceHelper(std::span<double> values, ReduceOp op) {
  if (!gpu_) {
    comm_.allReduce(values.data(), values.data(), values.size(), DataType::float64, op);
    return;
  }
  // The helpers reduce a few timings at a time; larger spans go in pieces of the scratch.
  constexpr std::size_t kPiece = 64;
  for (std::size_t first = 0; first < values.size(); first += kPiece) {
    const std::size_t n = std::min(kPiece, values.size() - first);
    const auto* host = reinterpret_cast<std::byte*>(values.data() + first);
    gpu_->scratch.upload(host, n * sizeof(double));
    comm_.allReduce(gpu_->scratch.device(), gpu_->scratch.device(), n, DataType::float64, op);
    gpu_->scratch.download(reinterpret_cast<std::byte*>(values.data() + first), n * sizeof(double));
  }
}

void ChorusRunner::allReduceMax(std::span<double> values) {
  allReduceHelper(values, ReduceOp::max);
}

void ChorusRunner::allReduceSum(std::span<double> values) {
  allReduceHelper(values, ReduceOp::sum);
}

std::string ChorusRunner::algorithmName(const BenchCase& /*benchCase*/) {
  return lastAlgorithm_;
}

}  // namespace chorus::cli
