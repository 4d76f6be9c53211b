// bench_mpi / bench_mpich: the chorus benchmark sweep over an MPI library's collectives
// (MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block, MPI_Alltoall, MPI_Bcast, MPI_Reduce),
// out of place and with MPI_IN_PLACE, float32. Same sizes, timing, checks, table and JSON as
// `chorus bench`. One source, built once per library (bench/CMakeLists.txt): bench_mpi against
// Open MPI (library "openmpi"), bench_mpich against MPICH (library "mpich"). Run:
//   mpirun.openmpi --allow-run-as-root --oversubscribe -n 2 --mca pml ob1 --mca btl self,vader
//       ./bench_mpi allreduce -b 8 -e 64M -f 4 --json openmpi.json   (one command line)
//   mpirun.mpich -n 2 ./bench_mpich allreduce -b 8 -e 64M -f 4 --json mpich.json
#include <fmt/format.h>
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "perf/aligned_buffer.h"
#include "perf/bench_args.h"
#include "perf/bench_driver.h"
#include "perf/pattern.h"
#include "support/error.h"

// bench/CMakeLists.txt names the library; a build without it measures Open MPI.
#ifndef CHORUS_MPI_LIBRARY
#define CHORUS_MPI_LIBRARY "openmpi"
#define CHORUS_MPI_NAME "Open MPI"
#endif

namespace {

constexpr const char* kTool =
    CHORUS_MPI_LIBRARY == std::string_view("mpich") ? "bench_mpich" : "bench_mpi";

using chorus::perf::BenchCase;
using chorus::perf::Collective;
using Codec = chorus::perf::ArithmeticCodec<float>;

MPI_Op mpiOp(chorus::ReduceOp op) {
  switch (op) {
    case chorus::ReduceOp::sum:
      return MPI_SUM;
    case chorus::ReduceOp::prod:
      return MPI_PROD;
    case chorus::ReduceOp::min:
      return MPI_MIN;
    case chorus::ReduceOp::max:
      return MPI_MAX;
    case chorus::ReduceOp::avg:
      break;
  }
  return MPI_OP_NULL;
}

// The transport the launcher chose, for the records: Open MPI's byte-transfer layers as
// mpirun passed them (--mca btl ...); for MPICH (ch4:ucx) the UCX transports and whether
// shared memory between local ranks is off (MPIR_CVAR_NOLOCAL, compare.sh --transport tcp).
std::string transportLabel() {
  if (const char* btl = std::getenv("OMPI_MCA_btl")) return fmt::format("btl {}", btl);
  const char* tls = std::getenv("UCX_TLS");
  const char* noLocal = std::getenv("MPIR_CVAR_NOLOCAL");
  const bool sharedMemoryOff = noLocal != nullptr && std::string_view(noLocal) == "1";
  if (tls == nullptr && !sharedMemoryOff) return "default";
  return fmt::format("{}{}{}", tls != nullptr ? fmt::format("ucx {}", tls) : "",
                     tls != nullptr && sharedMemoryOff ? ", " : "",
                     sharedMemoryOff ? "no local shm" : "");
}

// One rank of MPI_COMM_WORLD. Out of place: input in send_, output in recv_. In place: the
// data starts in recv_ (MPI_IN_PLACE semantics: Allgather's own block at rank * count,
// Reduce_scatter_block's result at the start). MPI_Bcast has one buffer, so both variants
// broadcast recv_ (the root's holds the input).
class MpiRunner final : public chorus::perf::RankRunner {
 public:
  explicit MpiRunner(std::size_t maxElements) : send_(maxElements * 4), recv_(maxElements * 4) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks_);
  }

  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }

  std::string unsupportedReason(const BenchCase& c) const override {
    if (chorus::perf::isReduction(c.data.collective) && mpiOp(c.data.op) == MPI_OP_NULL)
      return "MPI has no average reduction";
    return {};
  }

  void prepare(const BenchCase& c, int seed) override {
    const auto& shape = c.data.shape;
    const chorus::ReduceOp op = c.data.op;
    auto send = send_.as<float>(shape.sendCount);
    auto recv = recv_.as<float>(shape.recvCount);
    chorus::perf::fillSentinel<Codec>(recv);
    if (c.data.collective == Collective::broadcast) {
      if (rank_ == c.data.root) chorus::perf::fillInput<Codec>(recv, op, nranks_, rank_, seed);
      return;
    }
    if (!c.inplace) {
      chorus::perf::fillInput<Codec>(send, op, nranks_, rank_, seed);
    } else if (c.data.collective == Collective::allgather) {
      chorus::perf::fillInput<Codec>(recv.subspan(rank_ * shape.count, shape.count), op, nranks_,
                                     rank_, seed);
    } else {
      chorus::perf::fillInput<Codec>(recv_.as<float>(shape.sendCount), op, nranks_, rank_, seed);
    }
  }

  void run(const BenchCase& c, std::int64_t iterations) override {
    const int count = static_cast<int>(c.data.shape.count);
    const int total = static_cast<int>(c.data.shape.elements);
    const void* in = c.inplace ? MPI_IN_PLACE : send_.data();
    void* out = recv_.data();
    const MPI_Op op = mpiOp(c.data.op);
    const int root = c.data.root;
    for (std::int64_t i = 0; i < iterations; ++i) {
      switch (c.data.collective) {
        case Collective::allreduce:
          check(MPI_Allreduce(in, out, total, MPI_FLOAT, op, MPI_COMM_WORLD));
          break;
        case Collective::allgather:
          check(MPI_Allgather(in, count, MPI_FLOAT, out, count, MPI_FLOAT, MPI_COMM_WORLD));
          break;
        case Collective::reducescatter:
          check(MPI_Reduce_scatter_block(in, out, count, MPI_FLOAT, op, MPI_COMM_WORLD));
          break;
        case Collective::alltoall:
          check(MPI_Alltoall(in, count, MPI_FLOAT, out, count, MPI_FLOAT, MPI_COMM_WORLD));
          break;
        case Collective::broadcast:
          check(MPI_Bcast(out, total, MPI_FLOAT, root, MPI_COMM_WORLD));
          break;
        case Collective::reduce:
          // In place: the root passes MPI_IN_PLACE, the others their data as the send buffer.
          if (c.inplace && rank_ != root)
            check(MPI_Reduce(out, nullptr, total, MPI_FLOAT, op, root, MPI_COMM_WORLD));
          else
            check(MPI_Reduce(in, out, total, MPI_FLOAT, op, root, MPI_COMM_WORLD));
          break;
      }
    }
  }

  std::int64_t countWrong(const BenchCase& c, int seed) override {
    const std::int64_t wrong = chorus::perf::countWrong<Codec>(
        recv_.as<const float>(c.data.shape.recvCount), c.data, rank_, seed);
    // MPI_Bcast has no send buffer: prepare() fills none.
    if (c.inplace || c.data.collective == Collective::broadcast) return wrong;
    return wrong + chorus::perf::countChangedInput<Codec>(
                       send_.as<const float>(c.data.shape.sendCount), c.data, rank_, seed);
  }

  void allReduceMax(std::span<double> values) override { allReduceDoubles(values, MPI_MAX); }
  void allReduceSum(std::span<double> values) override { allReduceDoubles(values, MPI_SUM); }

  std::string algorithmName(const BenchCase& c) override {
    switch (c.data.collective) {
      case Collective::allreduce:
        return "MPI_Allreduce";
      case Collective::allgather:
        return "MPI_Allgather";
      case Collective::reducescatter:
        return "MPI_Reduce_scatter_block";
      case Collective::alltoall:
        return "MPI_Alltoall";
      case Collective::broadcast:
        return "MPI_Bcast";
      case Collective::reduce:
        return "MPI_Reduce";
    }
    return {};
  }

 private:
  static void check(int rc) {
    if (rc != MPI_SUCCESS) throw chorus::CommError(fmt::format("MPI call failed with code {}", rc));
  }
  void allReduceDoubles(std::span<double> values, MPI_Op op) {
    check(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_DOUBLE,
                        op, MPI_COMM_WORLD));
  }

  chorus::perf::AlignedBuffer send_;
  chorus::perf::AlignedBuffer recv_;
  int rank_ = 0;
  int nranks_ = 1;
};

int runBench(int argc, char** argv, int rank, int nranks) {
  CLI::App app{fmt::format("{}: chorus's benchmark sweep over {} collectives (float32)", kTool,
                           CHORUS_MPI_NAME),
               kTool};
  chorus::perf::BenchArgs args;
  chorus::perf::addBenchArgs(app, args);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return rank == 0 ? app.exit(error) : (error.get_exit_code() == 0 ? 0 : 2);
  }
  if (args.dtype != "float32" && args.dtype != "float" && args.dtype != "f32")
    throw chorus::OptionError(
        fmt::format("{} measures float32 only, not --dtype {}", kTool, args.dtype));
  chorus::perf::SweepOptions options = chorus::perf::makeSweepOptions(args, nranks, 4);
  options.library = CHORUS_MPI_LIBRARY;
  options.transport = transportLabel();
  options.dtype = "float32";
  std::size_t maxElements = 1;
  for (std::uint64_t size : options.sizes) {
    const auto shape = chorus::perf::shapeFor(options.collective, size, 4, nranks);
    maxElements = std::max({maxElements, shape.sendCount, shape.recvCount});
  }
  MpiRunner runner(maxElements);
  const std::string title =
      chorus::perf::sweepTitle(fmt::format("{} ({})", kTool, CHORUS_MPI_NAME), options, nranks);
  return chorus::perf::runAndReport(runner, options, args, title) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int code = 0;
  try {
    code = runBench(argc, argv, rank, nranks);
  } catch (const chorus::OptionError& error) {
    if (rank == 0) fmt::print(stderr, "{}: error: {}\n", kTool, error.what());
    code = 2;
  } catch (const std::exception& error) {
    fmt::print(stderr, "{}: rank {}: error: {}\n", kTool, rank, error.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return code;
}
