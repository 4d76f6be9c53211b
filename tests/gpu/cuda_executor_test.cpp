// Executor "cuda" (src/cuda/cuda_executor.h) behind the communicator, buffers in GPU memory:
// five collectives exact with ranks as threads of one process sharing the GPU (2, 3 and 8
// ranks), calls and send/recv on streams, a queued call's failure as the asynchronous error,
// memAlloc's device memory,
// and ranks as forked processes reaching each other's mailboxes through CUDA IPC handles; host
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
#include <deque>
#include <memory>
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

// A CUDA stream that is destroyed with its owner.
class Stream {
 public:
  Stream() {
    if (cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) != cudaSuccess)
      throw CommError("cudaStreamCreate failed");
  }
  ~Stream() { cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// One rank's input (valueOf), output and stream.
struct RankOnStream {
  GpuInts in, out;
  Stream stream;
  explicit RankOnStream(int rank, std::size_t count) : in(count), out(count) {
    std::vector<std::int32_t> mine(count);
    for (std::size_t i = 0; i < count; ++i)
      mine[i] = valueOf(rank, i);
    in.set(mine);
  }
  static std::deque<RankOnStream> make(int n, std::size_t count) {  // a deque: never moved
    std::deque<RankOnStream> ranks;
    for (int r = 0; r < n; ++r)
      ranks.emplace_back(r, count);
    return ranks;
  }
};

// Calls on each rank's own stream, issued for every rank by one thread inside groups: each
// call is queued behind the stream's earlier work (an in-place AllReduce reads the previous
// one's output) and the stream's later work (a copy to the host) sees its result.
TEST_P(CudaExecutor, CallsOnStreamsAreQueuedInStreamOrder) {
  const int n = GetParam();
  const std::size_t count = 1031;
  std::vector<Communicator> comms = Communicator::initAll(n, onGpu());
  std::deque<RankOnStream> ranks = RankOnStream::make(n, count);
  for (int pass = 0; pass < 2; ++pass) {  // the second: the plans are set up already
    groupStart();
    for (int r = 0; r < n; ++r)
      comms[static_cast<std::size_t>(r)].allReduce(ranks[static_cast<std::size_t>(r)].in.data(),
                                                   ranks[static_cast<std::size_t>(r)].out.data(),
                                                   count, DataType::int32, ReduceOp::sum,
                                                   ranks[static_cast<std::size_t>(r)].stream.get());
    groupEnd();
    groupStart();
    for (int r = 0; r < n; ++r)
      comms[static_cast<std::size_t>(r)].allReduce(ranks[static_cast<std::size_t>(r)].out.data(),
                                                   ranks[static_cast<std::size_t>(r)].out.data(),
                                                   count, DataType::int32, ReduceOp::sum,
                                                   ranks[static_cast<std::size_t>(r)].stream.get());
    groupEnd();
    for (int r = 0; r < n; ++r) {
      std::vector<std::int32_t> got(count);
      ASSERT_EQ(cudaMemcpyAsync(got.data(), ranks[static_cast<std::size_t>(r)].out.data(),
                                count * sizeof(std::int32_t), cudaMemcpyDeviceToHost,
                                ranks[static_cast<std::size_t>(r)].stream.get()),
                cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(ranks[static_cast<std::size_t>(r)].stream.get()),
                cudaSuccess);
      for (std::size_t i = 0; i < count; ++i) {
        std::int32_t sum = 0;
        for (int q = 0; q < n; ++q)
          sum += valueOf(q, i);
        ASSERT_EQ(got[i], n * sum) << "pass " << pass << " rank " << r << " element " << i;
      }
    }
  }
  for (const Communicator& comm : comms)
    EXPECT_EQ(comm.asyncError(), "");
}

// Send and recv of device buffers with streams: they wait for the streams' earlier work and
// move the data through the host.
TEST_P(CudaExecutor, SendRecvOfDeviceBuffersOnStreams) {
  const int n = GetParam();
  const std::size_t count = (std::size_t{1} << 20) + 3;
  std::vector<Communicator> comms = Communicator::initAll(n, onGpu());
  std::deque<RankOnStream> ranks = RankOnStream::make(n, count);
  groupStart();  // a ring: each rank sends to the next and receives from the previous
  for (int r = 0; r < n; ++r) {
    Communicator& comm = comms[static_cast<std::size_t>(r)];
    comm.send(ranks[static_cast<std::size_t>(r)].in.data(), count, DataType::int32, (r + 1) % n,
              ranks[static_cast<std::size_t>(r)].stream.get());
    comm.recv(ranks[static_cast<std::size_t>(r)].out.data(), count, DataType::int32,
              (r + n - 1) % n, ranks[static_cast<std::size_t>(r)].stream.get());
  }
  groupEnd();
  for (int r = 0; r < n; ++r) {
    const std::vector<std::int32_t> got = ranks[static_cast<std::size_t>(r)].out.get();
    for (std::size_t i = 0; i < count; ++i)
      ASSERT_EQ(got[i], valueOf((r + n - 1) % n, i)) << "rank " << r << " element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, CudaExecutor, ::testing::Values(2, 3, 8));

// A call queued on a stream returns at once; when it fails later (here rank 1 never joins it,
// so it times out), the failure is the communicator's asynchronous error on both ranks and
// later calls are refused.
TEST(CudaExecutorErrors, AQueuedCallThatFailsIsTheAsyncError) {
  if (!driverPresent() || cuda::visibleDevices() == 0) GTEST_SKIP() << "no CUDA GPU is visible";
  std::vector<Communicator> comms = Communicator::initAll(2, onGpu(2s));
  GpuInts a(64), b(64);
  Stream stream;
  groupStart();  // sets the plan up on both ranks
  comms[0].allReduce(a.data(), a.data(), 64, DataType::int32, ReduceOp::sum);
  comms[1].allReduce(b.data(), b.data(), 64, DataType::int32, ReduceOp::sum);
  groupEnd();
  const auto start = std::chrono::steady_clock::now();
  comms[0].allReduce(a.data(), a.data(), 64, DataType::int32, ReduceOp::sum, stream.get());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms) << "the call waited for its kernel";
  std::string error;
  while ((error = comms[0].asyncError()).empty() && std::chrono::steady_clock::now() - start < 60s)
    std::this_thread::sleep_for(10ms);
  EXPECT_NE(error.find("waited over 2000 ms"), std::string::npos) << error;
  EXPECT_NE(comms[1].asyncError(), "");
  EXPECT_THROW(comms[0].allReduce(a.data(), a.data(), 64, DataType::int32, ReduceOp::sum),
               CommError);
}

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

// With CHORUS_EXECUTOR=cuda, memAlloc returns zeroed device memory the collectives take.
TEST(CudaExecutorMemory, MemAllocGivesDeviceMemoryForTheCollectives) {
  if (!driverPresent() || cuda::visibleDevices() == 0) GTEST_SKIP() << "no CUDA GPU is visible";
  ::setenv("CHORUS_EXECUTOR", "cuda", 1);
  std::vector<Communicator> comms = Communicator::initAll(2, onGpu());
  const std::size_t count = 4099;
  std::vector<void*> buffers{memAlloc(count * sizeof(std::int32_t)),
                             memAlloc(count * sizeof(std::int32_t))};
  ::unsetenv("CHORUS_EXECUTOR");
  for (void* p : buffers) {
    cudaPointerAttributes attributes{};
    ASSERT_EQ(cudaPointerGetAttributes(&attributes, p), cudaSuccess);
    EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
    std::vector<std::int32_t> zero(count, 1);
    cudaMemcpy(zero.data(), p, count * sizeof(std::int32_t), cudaMemcpyDeviceToHost);
    EXPECT_EQ(zero, std::vector<std::int32_t>(count, 0));
  }
  std::vector<std::int32_t> ones(count, 1);
  for (void* p : buffers)
    cudaMemcpy(p, ones.data(), count * sizeof(std::int32_t), cudaMemcpyHostToDevice);
  groupStart();
  for (int r = 0; r < 2; ++r)
    comms[static_cast<std::size_t>(r)].allReduce(buffers[static_cast<std::size_t>(r)],
                                                 buffers[static_cast<std::size_t>(r)], count,
                                                 DataType::int32, ReduceOp::sum);
  groupEnd();
  std::vector<std::int32_t> got(count);
  cudaMemcpy(got.data(), buffers[1], count * sizeof(std::int32_t), cudaMemcpyDeviceToHost);
  EXPECT_EQ(got, std::vector<std::int32_t>(count, 2));
  for (void* p : buffers)
    memFree(p);
  EXPECT_THROW(memFree(buffers[0]), OptionError);  // once only
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
