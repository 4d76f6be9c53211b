// bench_gloo: the chorus benchmark sweep over Gloo's collectives, float32: gloo::allreduce
// (ring), gloo::allgather, gloo::alltoall, gloo::broadcast, gloo::reduce, and the legacy
// ReduceScatterHalvingDoubling (in place only; Gloo has no out-of-place reduce-scatter). N
// forked processes, tcp device on 127.0.0.1, FileStore rendezvous in a fresh mkdtemp
// directory, connectFullMesh. Same sizes, timing, checks, table and JSON as `chorus bench`
// (library "gloo"). Run:
//   ./bench_gloo allreduce --ranks 2 -b 8 -e 64M -f 4 --json gloo.json
#include <fmt/format.h>
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/reduce.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "perf/aligned_buffer.h"
#include "perf/bench_args.h"
#include "perf/bench_driver.h"
#include "perf/pattern.h"
#include "support/error.h"

namespace {

using chorus::perf::BenchCase;
using chorus::perf::Collective;
using Codec = chorus::perf::ArithmeticCodec<float>;
using ReduceFn = void (*)(void*, const void*, const void*, size_t);

constexpr std::uint32_t kBenchTag = 1;
constexpr std::uint32_t kHelperTag = 2;

ReduceFn floatReduction(chorus::ReduceOp op) {
  switch (op) {
    case chorus::ReduceOp::sum:
      return &gloo::sum<float>;
    case chorus::ReduceOp::prod:
      return &gloo::product<float>;
    case chorus::ReduceOp::min:
      return &gloo::min<float>;
    case chorus::ReduceOp::max:
      return &gloo::max<float>;
    case chorus::ReduceOp::avg:
      break;
  }
  return nullptr;
}

// One rank (process) of a Gloo context. Out of place: input in send_, output in recv_. In
// place: the data starts in recv_ (the input buffer is left unset, so Gloo uses the output);
// the reduce-scatter result lands at the start of recv_.
class GlooRunner final : public chorus::perf::RankRunner {
 public:
  GlooRunner(std::shared_ptr<gloo::Context> context, std::size_t maxElements)
      : context_(std::move(context)), send_(maxElements * 4), recv_(maxElements * 4) {}

  int rank() const override { return context_->rank; }
  int nranks() const override { return context_->size; }

  std::string unsupportedReason(const BenchCase& c) const override {
    if (chorus::perf::isReduction(c.data.collective) && floatReduction(c.data.op) == nullptr)
      return "Gloo has no average reduction";
    if (c.data.collective == Collective::reducescatter && !c.inplace)
      return "Gloo has no out-of-place reduce-scatter (the legacy "
             "ReduceScatterHalvingDoubling works in place)";
    if (c.data.collective == Collective::alltoall && c.inplace)
      return "gloo::alltoall has no in-place form";
    return {};
  }

  void prepare(const BenchCase& c, int seed) override {
    const auto& shape = c.data.shape;
    const chorus::ReduceOp op = c.data.op;
    const int r = rank();
    auto recv = recv_.as<float>(shape.recvCount);
    chorus::perf::fillSentinel<Codec>(recv);
    if (!c.inplace) {
      chorus::perf::fillInput<Codec>(send_.as<float>(shape.sendCount), op, nranks(), r, seed);
    } else if (c.data.collective == Collective::allgather) {
      chorus::perf::fillInput<Codec>(recv.subspan(r * shape.count, shape.count), op, nranks(), r,
                                     seed);
    } else if (c.data.collective != Collective::broadcast || r == c.data.root) {
      chorus::perf::fillInput<Codec>(recv_.as<float>(shape.sendCount), op, nranks(), r, seed);
    }
    if (c.data.collective == Collective::reducescatter) {
      const int n = nranks();
      reduceScatter_ = std::make_unique<gloo::ReduceScatterHalvingDoubling<float>>(
          context_, std::vector<float*>{recv_.as<float>(shape.sendCount).data()},
          static_cast<int>(shape.sendCount), std::vector<int>(n, static_cast<int>(shape.count)),
          reductionFunction(op));
    }
  }

  void run(const BenchCase& c, std::int64_t iterations) override {
    for (std::int64_t i = 0; i < iterations; ++i)
      runOnce(c);
  }

  std::int64_t countWrong(const BenchCase& c, int seed) override {
    const std::size_t outputCount = c.data.collective == Collective::reducescatter
                                        ? c.data.shape.count
                                        : c.data.shape.recvCount;
    const std::int64_t wrong =
        chorus::perf::countWrong<Codec>(recv_.as<const float>(outputCount), c.data, rank(), seed);
    if (c.inplace) return wrong;
    return wrong + chorus::perf::countChangedInput<Codec>(
                       send_.as<const float>(c.data.shape.sendCount), c.data, rank(), seed);
  }

  void allReduceMax(std::span<double> values) override {
    allReduceDoubles(values, &gloo::max<double>);
  }
  void allReduceSum(std::span<double> values) override {
    allReduceDoubles(values, &gloo::sum<double>);
  }

  std::string algorithmName(const BenchCase& c) override {
    switch (c.data.collective) {
      case Collective::allreduce:
        return "gloo::allreduce ring";
      case Collective::allgather:
        return "gloo::allgather";
      case Collective::reducescatter:
        return "ReduceScatterHalvingDoubling";
      case Collective::alltoall:
        return "gloo::alltoall";
      case Collective::broadcast:
        return "gloo::broadcast";
      case Collective::reduce:
        return "gloo::reduce";
    }
    return {};
  }

 private:
  static const gloo::ReductionFunction<float>* reductionFunction(chorus::ReduceOp op) {
    switch (op) {
      case chorus::ReduceOp::prod:
        return gloo::ReductionFunction<float>::product;
      case chorus::ReduceOp::min:
        return gloo::ReductionFunction<float>::min;
      case chorus::ReduceOp::max:
        return gloo::ReductionFunction<float>::max;
      default:
        return gloo::ReductionFunction<float>::sum;
    }
  }

  void runOnce(const BenchCase& c) {
    const auto& shape = c.data.shape;
    float* send = send_.as<float>(shape.sendCount).data();
    float* recv = recv_.as<float>(shape.recvCount).data();
    switch (c.data.collective) {
      case Collective::allreduce: {
        gloo::AllreduceOptions opts(context_);
        opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
        if (!c.inplace) opts.setInput(send, shape.count);
        opts.setOutput(recv, shape.count);
        opts.setReduceFunction(floatReduction(c.data.op));
        opts.setTag(kBenchTag);
        gloo::allreduce(opts);
        break;
      }
      case Collective::allgather: {
        gloo::AllgatherOptions opts(context_);
        if (!c.inplace) opts.setInput(send, shape.count);
        opts.setOutput(recv, shape.recvCount);
        opts.setTag(kBenchTag);
        gloo::allgather(opts);
        break;
      }
      case Collective::reducescatter:
        reduceScatter_->run();
        break;
      case Collective::alltoall: {
        gloo::AlltoallOptions opts(context_);
        opts.setInput(send, shape.sendCount);
        opts.setOutput(recv, shape.recvCount);
        opts.setTag(kBenchTag);
        gloo::alltoall(opts);
        break;
      }
      case Collective::broadcast: {
        gloo::BroadcastOptions opts(context_);
        if (!c.inplace && rank() == c.data.root) opts.setInput(send, shape.count);
        opts.setOutput(recv, shape.count);
        opts.setRoot(c.data.root);
        opts.setTag(kBenchTag);
        gloo::broadcast(opts);
        break;
      }
      case Collective::reduce: {
        gloo::ReduceOptions opts(context_);
        if (!c.inplace) opts.setInput(send, shape.count);
        opts.setOutput(recv, shape.count);
        opts.setRoot(c.data.root);
        opts.setReduceFunction(floatReduction(c.data.op));
        opts.setTag(kBenchTag);
        gloo::reduce(opts);
        break;
      }
    }
  }

  void allReduceDoubles(std::span<double> values,
                        void (*fn)(void*, const void*, const void*, size_t)) {
    gloo::AllreduceOptions opts(context_);
    opts.setOutput(values.data(), values.size());
    opts.setReduceFunction(fn);
    opts.setTag(kHelperTag);
    gloo::allreduce(opts);
  }

  std::shared_ptr<gloo::Context> context_;
  chorus::perf::AlignedBuffer send_;
  chorus::perf::AlignedBuffer recv_;
  std::unique_ptr<gloo::ReduceScatterHalvingDoubling<float>> reduceScatter_;
};

// The body of one forked rank: connect, sweep, report (rank 0 prints). Returns the exit code.
int runRank(int rank, int nranks, const std::string& storeDir,
            const chorus::perf::SweepOptions& options, const chorus::perf::BenchArgs& args) {
  gloo::transport::tcp::attr attr("127.0.0.1");
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(storeDir);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
  context->setTimeout(std::chrono::seconds(300));
  context->connectFullMesh(store, device);
  std::size_t maxElements = 1;
  for (std::uint64_t size : options.sizes) {
    const auto shape = chorus::perf::shapeFor(options.collective, size, 4, nranks);
    maxElements = std::max({maxElements, shape.sendCount, shape.recvCount});
  }
  GlooRunner runner(context, maxElements);
  const std::string title = chorus::perf::sweepTitle("bench_gloo (Gloo)", options, nranks);
  return chorus::perf::runAndReport(runner, options, args, title) ? 0 : 1;
}

int runBench(int argc, char** argv) {
  CLI::App app{"bench_gloo: chorus's benchmark sweep over Gloo collectives (float32, tcp)",
               "bench_gloo"};
  chorus::perf::BenchArgs args;
  args.maxBatches = 25;  // Gloo's op times are bimodal; fewer, longer batches (docs/sources.md)
  int nranks = 2;
  app.add_option("-n,--ranks", nranks, "Processes to fork")->capture_default_str();
  chorus::perf::addBenchArgs(app, args);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  }
  if (nranks < 1) throw chorus::OptionError("--ranks must be at least 1");
  if (args.dtype != "float32" && args.dtype != "float" && args.dtype != "f32")
    throw chorus::OptionError(
        fmt::format("bench_gloo measures float32 only, not --dtype {}", args.dtype));
  chorus::perf::SweepOptions options = chorus::perf::makeSweepOptions(args, nranks, 4);
  options.library = "gloo";
  options.transport = "tcp";
  options.dtype = "float32";

  std::string storeDir = (std::filesystem::temp_directory_path() / "bench_gloo.XXXXXX").string();
  if (mkdtemp(storeDir.data()) == nullptr)
    throw chorus::UserError(fmt::format("cannot create a rendezvous directory under {}",
                                        std::filesystem::temp_directory_path().string()));

  std::fflush(stdout);
  std::vector<pid_t> children;
  for (int rank = 0; rank < nranks; ++rank) {
    const pid_t pid = fork();
    if (pid < 0) throw chorus::UserError("fork failed; lower --ranks");
    if (pid == 0) {
      int code = 1;
      try {
        code = runRank(rank, nranks, storeDir, options, args);
      } catch (const std::exception& error) {
        fmt::print(stderr, "bench_gloo: rank {}: error: {}\n", rank, error.what());
      }
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(code);
    }
    children.push_back(pid);
  }
  // A failed rank leaves its peers waiting for Gloo's timeout: stop them at once.
  int worst = 0;
  for (std::size_t left = children.size(); left > 0; --left) {
    int status = 0;
    const pid_t pid = wait(&status);
    if (pid < 0) break;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    if (code != 0 && worst == 0)
      for (pid_t other : children)
        if (other != pid) kill(other, SIGTERM);
    worst = std::max(worst, code);
  }
  std::error_code ignored;
  std::filesystem::remove_all(storeDir, ignored);
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return runBench(argc, argv);
  } catch (const chorus::OptionError& error) {
    fmt::print(stderr, "bench_gloo: error: {}\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    fmt::print(stderr, "bench_gloo: error: {}\n", error.what());
    return 1;
  }
}
