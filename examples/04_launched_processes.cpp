// Lesson 4: one program, several processes. Each process is one rank: it learns its rank, the
// world size and where to meet the others from its launcher's environment (chorus launch,
// Open MPI's mpirun or torchrun), then runs an AllReduce and a Broadcast over shared memory.
//
// Run:      build/chorus launch -n 4 build/examples/example_04_launched_processes
//           mpirun --allow-run-as-root -n 2 build/examples/example_04_launched_processes
// Expected: one line per rank, e.g. "rank 2 of 4 (chorus launch): allreduce 10, broadcast 42:
//           ok", and exit code 0. Started without a launcher it explains how to start it and
//           exits 2.
//
//    AllReduce (sum): r0:[1 ..] r1:[2 ..] r2:[3 ..] r3:[4 ..]  ->  every rank [10 ..]
//    Broadcast:       r0:[42 ..] ---------------------------->  every rank [42 ..]
#include <cstdio>
#include <vector>

#include "chorus/chorus.h"

int main() {
  constexpr std::size_t kCount = 1 << 16;
  try {
    chorus::Communicator comm = chorus::Communicator::initFromEnvironment();
    const int n = comm.size();
    std::vector<float> sum(kCount, static_cast<float>(comm.rank() + 1));
    comm.allReduce(sum.data(), sum.data(), kCount, chorus::DataType::float32,
                   chorus::ReduceOp::sum);
    std::vector<int> value(kCount, comm.rank() == 0 ? 42 : -1);
    comm.broadcast(value.data(), value.data(), kCount, chorus::DataType::int32, 0);

    const float expected = static_cast<float>(n * (n + 1) / 2);
    bool ok = true;
    for (std::size_t i = 0; i < kCount; ++i)
      ok = ok && sum[i] == expected && value[i] == 42;
    std::printf("rank %d of %d: allreduce %g, broadcast %d: %s\n", comm.rank(), n, sum[0], value[0],
                ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
  } catch (const chorus::OptionError& e) {
    std::fprintf(stderr, "%s\nStart this lesson with a launcher, e.g. chorus launch -n 4 %s\n",
                 e.what(), "build/examples/example_04_launched_processes");
    return 2;
  } catch (const chorus::UserError& e) {
    std::fprintf(stderr, "rank failed: %s\n", e.what());
    return 1;
  }
}
