// The device interpreter on a real GPU (src/cuda/cuda_group.h), ranks as threads of one
// process sharing one GPU: every library algorithm at 2 to 8 ranks, every protocol, counts of
// one element, one no chunking divides and a multi-tile one, two calls per group; the reference
// MSCCL files; every type and operator; a deadlock and an abort end the kernels within the
// timeout. Skipped where no GPU is visible (CI): scripts/gpu_check.sh runs them on a lent GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include <cuda_runtime_api.h>
#include "../runtime/valid_msccl_files.h"
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
  for (const std::string& file : testing_support::validFiles())
    for (const ir::Algorithm& algorithm : ir::readMscclXmlFile(file)) {
      const runtime::RunReport report = cuda::runKernelsOnGpu(algorithm, exactRun(4099));
      EXPECT_TRUE(report.ok()) << file << ": " << report.firstWrong;
    }
}

TEST_F(Gpu, EveryTypeAndOperatorIsExact) {
  for (ir::Protocol protocol : {ir::Protocol::simple, ir::Protocol::ll, ir::Protocol::ll128}) {
    algorithms::BuildRequest request;
    request.algorithm = "allreduce.ring";
    request.ranks = 4;
    request.protocol = protocol;
    const ir::Algorithm algorithm = algorithms::compileAlgorithm(request).algorithm;
    for (DataType type : runtime::allDataTypes())
      for (ReduceOp op : runtime::allReduceOps()) {
        const runtime::RunReport report =
            cuda::runKernelsOnGpu(algorithm, exactRun(70'001, type, op));
        EXPECT_TRUE(report.ok()) << ir::protocolName(protocol) << " " << runtime::dataTypeName(type)
                                 << " " << runtime::reduceOpName(op) << ": " << report.firstWrong;
      }
  }
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

}  // namespace
}  // namespace chorus
