// bench_gpu: the device interpreter on one GPU, ranks as one process's threads of work sharing
// the GPU (src/cuda/cuda_group.h), nccl-tests columns (docs/gpu.md "Benchmark"). In the same
// run it measures the GPU's device-to-device cudaMemcpy rate, the ceiling: with every rank on
// one GPU, each byte a rank sends is one read and one write of the same memory, so the ranks'
// summed send rate (ranks x busbw) is bounded by that rate; each row prints its fraction.
// A benchmark, not a test: it reports times and never asserts them.
//
//   bench_gpu [--ranks 2,4,8] [--collectives allreduce,allgather,reducescatter,alltoall]
//             [-b 8] [-e 256M] [-f 4] [--protocol auto|simple|ll|ll128] [--dtype float32]
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "cuda/copy_rate.h"
#include "cuda/cuda_group.h"
#include "perf/batch_timing.h"
#include "perf/collective.h"
#include "perf/sweep.h"
#include "runtime/collective_args.h"
#include "runtime/datatype.h"
#include "support/error.h"
#include "support/size.h"

namespace chorus {
namespace {

void check(cudaError_t error, const char* what) {
  if (error != cudaSuccess)
    throw CommError(fmt::format("{} failed: {}", what, cudaGetErrorString(error)));
}

// The library algorithm each collective runs (the ring's bandwidth optimum, nccl-tests' peers).
std::string algorithmFor(perf::Collective collective) {
  switch (collective) {
    case perf::Collective::allgather:
      return "allgather.ring";
    case perf::Collective::reducescatter:
      return "reducescatter.ring";
    case perf::Collective::alltoall:
      return "alltoall.direct";
    default:
      return "allreduce.ring";
  }
}

// auto: LL up to 64 KiB, LL128 up to 1 MiB, Simple above (NCCL's rough crossovers on one node).
ir::Protocol protocolFor(const std::string& name, std::uint64_t bytes) {
  if (name == "simple") return ir::Protocol::simple;
  if (name == "ll") return ir::Protocol::ll;
  if (name == "ll128") return ir::Protocol::ll128;
  if (name != "auto")
    throw OptionError(fmt::format("unknown --protocol '{}': use auto, simple, ll or ll128", name));
  return bytes <= (64u << 10)  ? ir::Protocol::ll
         : bytes <= (1u << 20) ? ir::Protocol::ll128
                               : ir::Protocol::simple;
}

int run(int argc, char** argv) {
  std::string ranksText = "2,4,8", collectivesText = "allreduce,allgather,reducescatter,alltoall";
  std::string minText = "8", maxText = "256M", protocol = "auto", dtype = "float32";
  std::uint64_t factor = 4;
  CLI::App app{"bench_gpu: the device interpreter on one GPU, nccl-tests columns"};
  app.add_option("--ranks", ranksText, "rank counts, comma-separated");
  app.add_option("--collectives", collectivesText, "collectives, comma-separated");
  app.add_option("-b,--minbytes", minText, "smallest size");
  app.add_option("-e,--maxbytes", maxText, "largest size");
  app.add_option("-f,--stepfactor", factor, "size factor");
  app.add_option("--protocol", protocol, "auto, simple, ll or ll128");
  app.add_option("--dtype", dtype, "element type");
  CLI11_PARSE(app, argc, argv);
  if (cuda::visibleDevices() == 0) {
    fmt::print(stderr, "bench_gpu: no CUDA GPU is visible; nothing to measure\n");
    return 2;
  }
  const auto type = runtime::parseDataType(dtype);
  if (!type) throw OptionError(fmt::format("unknown --dtype '{}'", dtype));
  const std::size_t elemSize = runtime::dataTypeSize(*type);
  std::vector<int> rankCounts;
  for (const std::string& r : CLI::detail::split(ranksText, ','))
    rankCounts.push_back(std::stoi(r));
  std::vector<perf::Collective> collectives;
  for (const std::string& c : CLI::detail::split(collectivesText, ',')) {
    const auto parsed = perf::parseCollective(c);
    if (!parsed) throw OptionError(fmt::format("unknown collective '{}'", c));
    collectives.push_back(*parsed);
  }
  const std::vector<std::uint64_t> sizes =
      perf::sizeSweep(parseSize(minText), parseSize(maxText), factor);

  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  const double ceiling = cuda::deviceCopyRate(std::size_t{256} << 20);
  fmt::print("# device: {}\n", cuda::describeDevice(device));
  fmt::print("# device-to-device cudaMemcpy: {:.1f} GB/s (the ceiling of the summed send rate)\n",
             ceiling / 1e9);
  fmt::print("# {:>13} {:>5} {:>20} {:>6} {:>12} {:>12} {:>10} {:>8} {:>8} {:>9} {:>8}\n",
             "collective", "ranks", "algorithm", "proto", "size", "count", "time(us)", "algbw",
             "busbw", "sum(GB/s)", "ceiling");
  for (perf::Collective collective : collectives)
    for (int ranks : rankCounts) {
      std::map<ir::Protocol, std::unique_ptr<cuda::CudaKernelGroup>> groups;
      std::map<ir::Protocol, ir::Algorithm> plans;
      for (std::uint64_t size : sizes) {
        const perf::CollectiveShape shape = perf::shapeFor(collective, size, elemSize, ranks);
        const ir::Protocol proto = protocolFor(protocol, shape.bytes);
        if (!groups.count(proto)) {
          algorithms::BuildRequest request;
          request.algorithm = algorithmFor(collective);
          request.ranks = ranks;
          request.protocol = proto;
          plans[proto] = algorithms::compileAlgorithm(request).algorithm;
          groups[proto] = std::make_unique<cuda::CudaKernelGroup>(plans[proto]);
        }
        std::vector<void*> memory;
        std::vector<runtime::CollectiveArgs> args;
        for (int r = 0; r < ranks; ++r) {
          void *in = nullptr, *out = nullptr;
          check(cudaMalloc(&in, std::max<std::size_t>(shape.sendCount * elemSize, 16)),
                "cudaMalloc");
          check(cudaMalloc(&out, std::max<std::size_t>(shape.recvCount * elemSize, 16)),
                "cudaMalloc");
          check(cudaMemset(in, 0, shape.sendCount * elemSize), "cudaMemset");
          memory.push_back(in);
          memory.push_back(out);
          args.push_back({in, out, shape.count, *type, ReduceOp::sum});
        }
        cuda::CudaKernelGroup& group = *groups[proto];
        const double seconds =
            perf::secondsPerCall([&] { group.enqueue(args, std::chrono::milliseconds(60'000)); },
                                 [&] { group.synchronize(); });
        for (void* p : memory)
          cudaFree(p);
        const double algbw = static_cast<double>(shape.bytes) / seconds / 1e9;
        const double busbw = algbw * perf::busBandwidthFactor(collective, ranks);
        fmt::print(
            "  {:>13} {:>5} {:>20} {:>6} {:>12} {:>12} {:>10.2f} {:>8.2f} {:>8.2f} "
            "{:>9.1f} {:>7.0f}%\n",
            perf::collectiveName(collective), ranks, algorithmFor(collective),
            ir::protocolName(proto), shape.bytes, shape.elements, seconds * 1e6, algbw, busbw,
            busbw * ranks, 100.0 * busbw * ranks * 1e9 / ceiling);
        std::fflush(stdout);
      }
    }
  return 0;
}

}  // namespace
}  // namespace chorus

int main(int argc, char** argv) {
  try {
    return chorus::run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_gpu: error: {}\n", e.what());
    return 1;
  }
}
