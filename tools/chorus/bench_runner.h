// The chorus side of `chorus bench`: a perf::RankRunner over one rank's chorus::Communicator,
// with integer-valued data of any chorus data type (CLI tool).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "chorus/chorus.h"
#include "gpu_buffers.h"
#include "perf/aligned_buffer.h"
#include "perf/bench_driver.h"

namespace chorus::cli {

// Buffers follow NCCL's in-place conventions (chorus.h): in place, AllGather's input is this
// rank's block of recv_, ReduceScatter's output is this rank's block of its input in recv_.
// The communicator must outlive the runner.
class ChorusRunner final : public perf::RankRunner {
 public:
  // `maxElements`: the largest input or output buffer of the sweep, in elements of `type`.
  // `bufferOffset`: bytes past a page boundary where both buffers start (malloc's are 16).
  // `registered`: both buffers come from chorus::memAlloc instead of the heap.
  // `onGpu` (executor "cuda"): the calls take device copies of the buffers, queued on a
  // stream of the runner's; run() returns when the stream has finished.
  ChorusRunner(Communicator& comm, DataType type, std::size_t maxElements,
               std::size_t bufferOffset = 0, bool registered = false, bool onGpu = false);

  int rank() const override { return comm_.rank(); }
  int nranks() const override { return comm_.size(); }
  void prepare(const perf::BenchCase& benchCase, int seed) override;
  void run(const perf::BenchCase& benchCase, std::int64_t iterations) override;
  std::int64_t countWrong(const perf::BenchCase& benchCase, int seed) override;
  void allReduceMax(std::span<double> values) override;
  void allReduceSum(std::span<double> values) override;
  // The plan of the last run() (lastPlan() right after it, before any helper call).
  std::string algorithmName(const perf::BenchCase& benchCase) override;

 private:
  // Page-aligned, zero-filled and touched: heap memory, or registered (chorus::memAlloc).
  class Buffer {
   public:
    Buffer(std::size_t bytes, bool registered);
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer();
    std::byte* data() { return registered_ ? registeredData_ : heap_.data(); }

   private:
    bool registered_;
    perf::AlignedBuffer heap_;
    std::byte* registeredData_ = nullptr;
  };

  std::byte* at(Buffer& buffer, std::size_t element) {
    return buffer.data() + offset_ + element * elementSize_;
  }
  // Where the calls find at(buffer, element): the same, or its place in the GPU copy.
  std::byte* callAt(Buffer& buffer, std::size_t element);
  // The helpers' values through the GPU when the calls need device memory.
  void allReduceHelper(std::span<double> values, ReduceOp op);

  // The GPU side (onGpu): device copies of send_ and recv_, a scratch for the helpers, the
  // stream the calls are queued on.
  struct Gpu {
    GpuMirror send, recv, scratch;
    GpuStream stream;
    explicit Gpu(std::size_t bytes) : send(bytes), recv(bytes), scratch(64 * sizeof(double)) {}
  };

  Communicator& comm_;
  DataType type_;
  std::size_t elementSize_;
  std::size_t offset_;
  std::size_t bytes_;
  Buffer send_;
  Buffer recv_;
  std::unique_ptr<Gpu> gpu_;
  std::string lastAlgorithm_;
};

}  // namespace chorus::cli
