// The device interpreter on a real GPU (src/cuda/cuda_group.h), ranks as threads of one
// process sharing one GPU: every library algorithm at 2 to 8 ranks, every protocol, counts of
// one element, one no chunking divides and a multi-tile one, two calls per group; the reference
// MSCCL files; every type and operator; a deadlock and an abort end the kernels within the
// timeout; calls ordered on the callers' streams. Skipped where no GPU is visible (CI):
// scripts/gpu_check.sh runs them on a lent GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include <cuda_runtime_api.h>
#include "../runtime/compile_for_test.h"
#include "../verify/ir_builders.h"
#include "cuda/cuda_group.h"
#include "ir/msccl_xml.h"
#include "library_cases.h"
#include "support/error.h"

namespace chorus {
namespace {

using runtime::DataType;
using testing_support::exactRun;
using testing_support::libraryCaseName;
using testing_support::LibrarySweepCase;

bool noGpu() {
  return cuda::visibleDevices() == 0;
}

class GpuLibrary : public ::testing::TestWithParam<LibrarySweepCase> {
 protected:
  void SetUp() override {
    if (noGpu()) GTEST_SKIP() << "no CUDA GPU is visible";
  }
};

TEST_P(GpuLibrary, ExactOnEveryProtocol) {
  const LibrarySweepCase& c = GetParam();
  for (ir::Protocol protocol : {ir::Protocol::simple, ir::Protocol::ll, ir::Protocol::ll128}) {
    const ir::Algorithm algorithm = testing_support::compileSweepCase(c, protocol);
    cuda::CudaGroupOptions group;
    group.slotBytes = 16 << 10;  // several tiles at the largest count
    for (std::size_t count : {std::size_t{1}, std::size_t{1031}, std::size_t{100'003}}) {
      runtime::RunOptions options = exactRun(count);
      options.iterations = 2;
      const runtime::RunReport report = cuda::runKernelsOnGpu(algorithm, options, group);
      EXPECT_TRUE(report.ok()) << libraryCaseName(c) << " " << ir::protocolName(protocol)
                               << " count " << count << ": " << report.firstWrong;
      EXPECT_GT(report.checkedElements, 0u);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, GpuLibrary,
                         ::testing::ValuesIn(testing_support::deviceSweepCases()),
                         [](const auto& info) { return libraryCaseName(info.param); });

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (noGpu()) GTEST_SKIP() << "no CUDA GPU is visible";
  }
};

TEST_F(Gpu, RunsTheReferenceMscclFilesExactly) {
  testing_support::expectReferenceFilesExact(
      [](const ir::Algorithm& a, const runtime::RunOptions& o) {
        return cuda::runKernelsOnGpu(a, o);
      },
      4099);
}

TEST_F(Gpu, EveryTypeAndOperatorIsExact) {
  testing_support::expectEveryTypeAndOperatorExact(
      [](const ir::Algorithm& a, const runtime::RunOptions& o) {
        return cuda::runKernelsOnGpu(a, o);
      },
      4, 70'001);
}

TEST_F(Gpu, ADeadlockEndsTheKernelsAtTheTimeout) {
  runtime::RunOptions options = exactRun(64, DataType::float32);
  options.timeout = std::chrono::milliseconds(500);
  const auto start = std::chrono::steady_clock::now();
  try {
    cuda::runKernelsOnGpu(testing_support::deadlockingPlan(), options);
    FAIL() << "a deadlocked plan returned";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("waited over 500 ms for a message from rank"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST_F(Gpu, AbortEndsTheKernelsAtOnce) {
  const ir::Algorithm plan = testing_support::deadlockingPlan();
  cuda::CudaKernelGroup group(plan);
  float* memory = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&memory), 2 * 64 * sizeof(float)), cudaSuccess);
  const std::vector<runtime::CollectiveArgs> args = {
      {memory, memory, 64, DataType::float32, ReduceOp::sum},
      {memory + 64, memory + 64, 64, DataType::float32, ReduceOp::sum}};
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    group.abort("the test aborted it");
  });
  const auto start = std::chrono::steady_clock::now();
  try {
    group.run(args, std::chrono::milliseconds(60'000));
    ADD_FAILURE() << "an aborted call returned";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("aborted: the test aborted it"), std::string::npos)
        << e.what();
  }
  aborter.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  cudaFree(memory);
}

// NCCL's contract: the call runs after the work on each rank's stream and before the work
// enqueued there after it. The inputs are copied in and the outputs out on the callers'
// streams; only those streams are synchronized before the check.
TEST_F(Gpu, CallsRunInOrderOnTheCallersStreams) {
  const ir::Algorithm plan = testing_support::compileForTest("allreduce.ring", 2);
  cuda::CudaKernelGroup group(plan);
  constexpr std::size_t count = 1 << 20;
  std::vector<cudaStream_t> streams(2);
  std::vector<float*> buffers(2);
  std::vector<std::vector<float>> in(2), out(2, std::vector<float>(count, -1));
  std::vector<runtime::CollectiveArgs> args;
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(cudaStreamCreate(&streams[static_cast<std::size_t>(r)]), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&buffers[static_cast<std::size_t>(r)]),
                         count * sizeof(float)),
              cudaSuccess);
    for (std::size_t i = 0; i < count; ++i)
      in[static_cast<std::size_t>(r)].push_back(
          static_cast<float>(r + 1 + static_cast<int>(i % 5)));
    args.push_back({buffers[static_cast<std::size_t>(r)], buffers[static_cast<std::size_t>(r)],
                    count, DataType::float32, ReduceOp::sum});
  }
  for (int round = 0; round < 3; ++round) {
    for (std::size_t r = 0; r < 2; ++r)
      ASSERT_EQ(cudaMemcpyAsync(buffers[r], in[r].data(), count * sizeof(float),
                                cudaMemcpyHostToDevice, streams[r]),
                cudaSuccess);
    group.enqueue(args, std::chrono::milliseconds(60'000), &streams);
    for (std::size_t r = 0; r < 2; ++r) {
      ASSERT_EQ(cudaMemcpyAsync(out[r].data(), buffers[r], count * sizeof(float),
                                cudaMemcpyDeviceToHost, streams[r]),
                cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(streams[r]), cudaSuccess);
    }
    for (std::size_t r = 0; r < 2; ++r)
      for (std::size_t i = 0; i < count; ++i)
        ASSERT_EQ(out[r][i], static_cast<float>(3 + 2 * static_cast<int>(i % 5)))
            << "round " << round << " rank " << r << " [" << i << "]";
  }
  group.synchronize();
  for (std::size_t r = 0; r < 2; ++r) {
    cudaFree(buffers[r]);
    cudaStreamDestroy(streams[r]);
  }
}

}  // namespace
}  // namespace chorus
