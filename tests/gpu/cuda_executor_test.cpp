// Executor "cuda" (src/cuda/cuda_executor.h) behind the communicator, buffers in GPU memory:
// five collectives exact with ranks as threads of one process sharing the GPU (2, 3 and 8
// ranks) and as forked processes reaching each other's mailboxes through CUDA IPC handles; host
// memory refused by name; a peer process that exits stops the others' kernels long before the
// timeout. Skipped where no GPU is (CI); scripts/gpu_check.sh runs them on a lent GPU. The
// process tests look for the GPU without initializing CUDA in the test process, since children
// forked after CUDA is initialized cannot use it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>

#include "chorus/chorus.h"
#include "cuda/cuda_group.h"
#include "forked_ranks.h"

namespace chorus {
namespace {

using namespace std::chrono_literals;
using testing_support::kOk;
using testing_support::kWrong;

// True where the NVIDIA driver's device node is, without initializing CUDA here.
bool driverPresent() {
  return ::access("/dev/nvidiactl", F_OK) == 0;
}

// int32 values of `n` elements in GPU memory.
class GpuInts {
 public:
  explicit GpuInts(std::size_t n) : n_(n) {
    void* p = nullptr;
    if (cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(std::int32_t)) != cudaSuccess)
      throw CommError("cudaMalloc failed");
    data_ = static_cast<std::int32_t*>(p);
  }
  ~GpuInts() { cudaFree(data_); }
  GpuInts(const GpuInts&) = delete;
  GpuInts& operator=(const GpuInts&) = delete;
  std::int32_t* data() const { return data_; }
  void set(const std::vector<std::int32_t>& values) {
    cudaMemcpy(data_, values.data(), values.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice);
  }
  std::vector<std::int32_t> get() const {
    std::vector<std::int32_t> values(n_);
    cudaMemcpy(values.data(), data_, n_ * sizeof(std::int32_t), cudaMemcpyDeviceToHost);
    return values;
  }

 private:
  std::size_t n_;
  std::int32_t* data_ = nullptr;
};

std::int32_t valueOf(int rank, std::size_t i) {
  return static_cast<std::int32_t>((i * 7 + static_cast<std::size_t>(rank) * 13) % 101) - 50;
}

// AllReduce, AllGather, ReduceScatter, AllToAll and Broadcast of `count` on `comm`, out of
// place, every element checked; "" or what was wrong.
std::string collectivesExact(Communicator& comm, std::size_t count) {
  const int n = comm.size(), r = comm.rank();
  const std::size_t all = count * static_cast<std::size_t>(n);
  GpuInts in(all), out(all);
  std::vector<std::int32_t> mine(all);
  for (std::size_t i = 0; i < all; ++i)
    mine[i] = valueOf(r, i);
  in.set(mine);
  auto sum = [&](std::size_t i) {
    std::int32_t s = 0;
    for (int q = 0; q < n; ++q)
      s += valueOf(q, i);
    return s;
  };
  comm.allReduce(in.data(), out.data(), count, DataType::int32, ReduceOp::sum);
  std::vector<std::int32_t> got = out.get();
  for (std::size_t i = 0; i < count; ++i)
    if (got[i] != sum(i)) return "allreduce element " + std::to_string(i);
  comm.allGather(in.data(), out.data(), count, DataType::int32);
  got = out.get();
  for (std::size_t i = 0; i < all; ++i)
    if (got[i] != valueOf(static_cast<int>(i / count), i % count))
      return "allgather element " + std::to_string(i);
  comm.reduceScatter(in.data(), out.data(), count, DataType::int32, ReduceOp::sum);
  got = out.get();
  for (std::size_t i = 0; i < count; ++i)
    if (got[i] != sum(static_cast<std::size_t>(r) * count + i))
      return "reducescatter element " + std::to_string(i);
  comm.allToAll(in.data(), out.data(), count, DataType::int32);
  got = out.get();
  for (std::size_t i = 0; i < all; ++i)
    if (got[i] !=
        valueOf(static_cast<int>(i / count), static_cast<std::size_t>(r) * count + i % count))
      return "alltoall element " + std::to_string(i);
  // Broadcast with no input off the root, as NCCL allows: the executor's spare is GPU memory.
  comm.broadcast(r == 0 ? in.data() : nullptr, out.data(), count, DataType::int32, 0);
  got = out.get();
  for (std::size_t i = 0; i < count; ++i)
    if (got[i] != valueOf(0, i)) return "broadcast element " + std::to_string(i);
  return "";
}

CommConfig onGpu(std::chrono::milliseconds timeout = 60s) {
  CommConfig config;
  config.executor = "cuda";
  config.timeout = timeout;
  return config;
}

class CudaExecutor : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (!driverPresent() || cuda::visibleDevices() == 0) GTEST_SKIP() << "no CUDA GPU is visible";
  }
};

TEST_P(CudaExecutor, RanksAsThreadsAreExact) {
  const int n = GetParam();
  std::vector<Communicator> comms = Communicator::initAll(n, onGpu());
  std::vector<std::string> failures(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        for (std::size_t count : {std::size_t{1}, std::size_t{1031}, std::size_t{1} << 20})
          if (std::string wrong = collectivesExact(comms[static_cast<std::size_t>(r)], count);
              !wrong.empty()) {
            failures[static_cast<std::size_t>(r)] = wrong;
            return;
          }
      } catch (const std::exception& e) {
        failures[static_cast<std::size_t>(r)] = e.what();
      }
    });
  for (std::thread& t : threads)
    t.join();
  EXPECT_EQ(failures, std::vector<std::string>(static_cast<std::size_t>(n)));
}

INSTANTIATE_TEST_SUITE_P(Ranks, CudaExecutor, ::testing::Values(2, 3, 8));

TEST(CudaExecutorErrors, HostMemoryIsRefusedByName) {
  if (!driverPresent() || cuda::visibleDevices() == 0) GTEST_SKIP() << "no CUDA GPU is visible";
  std::vector<Communicator> comms = Communicator::initAll(1, onGpu());
  std::vector<float> host(16, 1.0f);
  try {
    comms[0].allReduce(host.data(), host.data(), 16, DataType::float32, ReduceOp::sum);
    ADD_FAILURE() << "host memory was accepted";
  } catch (const OptionError& e) {
    EXPECT_NE(std::string(e.what()).find("is not memory GPU"), std::string::npos) << e.what();
  }
}

TEST(CudaExecutorProcesses, RanksAsProcessesAreExact) {
  if (!driverPresent()) GTEST_SKIP() << "no NVIDIA driver";
  for (int n : {2, 3}) {
    const auto codes = testing_support::runRanks(n, [n](int rank, const std::string& hex) {
      Communicator comm = Communicator::initRank(n, uniqueIdFromHex(hex), rank, onGpu());
      for (std::size_t count : {std::size_t{1}, std::size_t{1031}, std::size_t{1} << 20})
        if (std::string wrong = collectivesExact(comm, count); !wrong.empty()) {
          std::fprintf(stderr, "rank %d: %s\n", rank, wrong.c_str());
          return kWrong;
        }
      return kOk;
    });
    EXPECT_EQ(codes, std::vector<int>(static_cast<std::size_t>(n), kOk)) << n << " ranks";
  }
}

TEST(CudaExecutorProcesses, APeerThatExitsStopsTheKernel) {
  if (!driverPresent()) GTEST_SKIP() << "no NVIDIA driver";
  const auto codes = testing_support::runRanks(2, [](int rank, const std::string& hex) {
    Communicator comm = Communicator::initRank(2, uniqueIdFromHex(hex), rank, onGpu(60s));
    if (!collectivesExact(comm, 64).empty()) return kWrong;
    if (rank == 1) ::_exit(kOk);
    GpuInts data(64);
    const auto start = std::chrono::steady_clock::now();
    try {
      comm.allReduce(data.data(), data.data(), 64, DataType::int32, ReduceOp::sum);
    } catch (const CommError& e) {
      std::fprintf(stderr, "rank 0 (expected): %s\n", e.what());
      return std::chrono::steady_clock::now() - start < 20s ? kOk : kWrong;
    }
    return kWrong;
  });
  EXPECT_EQ(codes, std::vector<int>(2, kOk));
}

}  // namespace
}  // namespace chorus
