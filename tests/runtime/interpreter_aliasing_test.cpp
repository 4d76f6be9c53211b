// The interpreter given buffers that do not match the plan's in-place flag: an in-place
// AllReduce plan called with separate buffers (input moved into the output once), and an
// out-of-place AllGather plan called in place (staged). Inputs must survive untouched.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/registry.h"
#include "compile_for_test.h"
#include "runtime/interpreter.h"
#include "transport/thread/thread_group.h"
#include "verify/ir_builders.h"

namespace chorus {
namespace {

using testing_support::compileForTest;

// Runs `a` on `ranks` threads; rank r's input holds r+1+i at element i.
void runAll(const ir::Algorithm& a, std::vector<std::vector<float>>& in,
            std::vector<std::vector<float>>& out, std::size_t count, bool inPlace) {
  transport::ThreadGroup group(a.nranks, {8, 4096});
  std::vector<std::thread> threads;
  for (int r = 0; r < a.nranks; ++r)
    threads.emplace_back([&, r] {
      runtime::CollectiveArgs args;
      args.input =
          inPlace
              ? static_cast<const void*>(
                    out[r].data() + (a.collective == ir::CollectiveKind::allgather ? r * count : 0))
              : in[r].data();
      args.output = out[r].data();
      args.count = count;
      runtime::executeRank(a, r, args, group.rank(r));
    });
  for (auto& t : threads)
    t.join();
}

TEST(InterpreterAliasing, InPlaceAllReducePlanWithSeparateBuffers) {
  const auto a = compileForTest("allreduce.ring", 3);
  ASSERT_TRUE(a.inPlace);
  const std::size_t count = 3 * 1000;  // divisible: the input is moved, not staged
  std::vector<std::vector<float>> in(3), out(3, std::vector<float>(count, -1));
  for (int r = 0; r < 3; ++r)
    for (std::size_t i = 0; i < count; ++i)
      in[r].push_back(static_cast<float>(r + 1 + i % 7));
  const auto original = in;
  runAll(a, in, out, count, false);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(in[r], original[r]) << "rank " << r << "'s input was modified";
    for (std::size_t i = 0; i < count; ++i)
      ASSERT_EQ(out[r][i], static_cast<float>(6 + 3 * (i % 7))) << "rank " << r << " [" << i << "]";
  }
}

// An in-place plan (not a real AllReduce: the interpreter runs what it is given) whose steps
// read chunks, write them, then read them again. Chunk 0: rank 1 sends it, rank 0 adds its own
// and sends the sum back. Chunk 1: rank 0 sends it, rank 1 adds its own and sends the sum back,
// which rank 0 adds to its input's chunk 1 (not yet written there) and sends to rank 1 once
// more. Chunk 2 is never touched. Called with separate buffers, first reads come from the
// input (it is not copied home first), later ones from the output, and chunk 2 is copied.
ir::Algorithm readAfterWritePlan() {
  using ir::BufferKind;
  using ir::OpKind;
  using verify::testing::makeStep;
  using verify::testing::makeTb;
  ir::Algorithm a =
      verify::testing::makeAlgorithm("read-after-write", ir::CollectiveKind::allreduce, 2, 3, true);
  for (int r = 0; r < 2; ++r)
    a.ranks[r].inputChunks = 3;
  ir::Threadblock t0 = makeTb(0, 1, 1);
  t0.steps.push_back(makeStep(OpKind::recvReduceCopy, BufferKind::input, 0, BufferKind::input, 0));
  t0.steps.push_back(makeStep(OpKind::send, BufferKind::input, 0, BufferKind::input, 0));
  t0.steps.push_back(makeStep(OpKind::send, BufferKind::input, 1, BufferKind::input, 1));
  t0.steps.push_back(makeStep(OpKind::recvReduceCopy, BufferKind::input, 1, BufferKind::input, 1));
  t0.steps.push_back(makeStep(OpKind::send, BufferKind::input, 1, BufferKind::input, 1));
  a.ranks[0].threadblocks = {t0};
  ir::Threadblock t1 = makeTb(0, 0, 0);
  t1.steps.push_back(makeStep(OpKind::send, BufferKind::input, 0, BufferKind::input, 0));
  t1.steps.push_back(makeStep(OpKind::recv, BufferKind::input, 0, BufferKind::input, 0));
  t1.steps.push_back(makeStep(OpKind::recvReduceCopy, BufferKind::input, 1, BufferKind::input, 1));
  t1.steps.push_back(makeStep(OpKind::send, BufferKind::input, 1, BufferKind::input, 1));
  t1.steps.push_back(makeStep(OpKind::recv, BufferKind::input, 1, BufferKind::input, 1));
  a.ranks[1].threadblocks = {t1};
  return a;
}

TEST(InterpreterAliasing, InPlacePlanReadsFirstUsesFromTheInputAndLaterOnesFromTheOutput) {
  const ir::Algorithm a = readAfterWritePlan();
  const std::size_t chunk = 5000, count = 3 * chunk;
  std::vector<std::vector<float>> in(2), out(2, std::vector<float>(count, -1));
  for (int r = 0; r < 2; ++r)
    for (std::size_t i = 0; i < count; ++i)
      in[r].push_back(static_cast<float>(r + 1 + i % 7));
  const auto original = in;
  runAll(a, in, out, count, false);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(in[r], original[r]) << "rank " << r << "'s input was modified";
    for (std::size_t i = 0; i < count; ++i) {
      const float in0 = original[0][i], in1 = original[1][i];
      const float want = i < chunk       ? in0 + in1        // the sum, sent back
                         : i < 2 * chunk ? in1 + 2 * in0    // rank 1's sum plus rank 0's input
                                         : original[r][i];  // untouched: the rank's input
      ASSERT_EQ(out[r][i], want) << "rank " << r << " [" << i << "]";
    }
  }
}

TEST(InterpreterAliasing, OutOfPlaceAllGatherPlanCalledInPlace) {
  const auto a = compileForTest("allgather.ring", 4);
  ASSERT_FALSE(a.inPlace);
  const std::size_t count = 257;
  std::vector<std::vector<float>> in(4), out(4, std::vector<float>(4 * count, -1));
  for (int r = 0; r < 4; ++r)
    for (std::size_t i = 0; i < count; ++i)
      out[r][r * count + i] = static_cast<float>(r * 1000 + i);
  runAll(a, in, out, count, true);
  for (int r = 0; r < 4; ++r)
    for (int b = 0; b < 4; ++b)
      for (std::size_t i = 0; i < count; ++i)
        ASSERT_EQ(out[r][b * count + i], static_cast<float>(b * 1000 + i))
            << "rank " << r << " block " << b << " [" << i << "]";
}

TEST(InterpreterAliasing, OutOfPlaceReduceScatterPlanCalledInPlace) {
  const auto a = compileForTest("reducescatter.ring", 3);
  ASSERT_FALSE(a.inPlace);
  const std::size_t count = 300;  // per-rank output; the input holds 3 blocks
  std::vector<std::vector<float>> buffers(3, std::vector<float>(3 * count));
  for (int r = 0; r < 3; ++r)
    for (std::size_t i = 0; i < 3 * count; ++i)
      buffers[r][i] = static_cast<float>(r + 1 + i % 5);
  transport::ThreadGroup group(3, {8, 4096});
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      runtime::CollectiveArgs args;
      args.input = buffers[r].data();
      args.output = buffers[r].data() + r * count;  // NCCL's in-place ReduceScatter
      args.count = count;
      runtime::executeRank(a, r, args, group.rank(r));
    });
  for (auto& t : threads)
    t.join();
  for (int r = 0; r < 3; ++r)
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t at = r * count + i;
      ASSERT_EQ(buffers[r][at], static_cast<float>(6 + 3 * (at % 5)))
          << "rank " << r << " [" << i << "]";
    }
}

// An out-of-place AllToAll plan called in place (input == output) on `ranks` threads, over
// slots of 4 KiB so each block takes several tiles, where every message may go by reference. Rank
// r's block d holds r*1e6 + d*1e4 + i; afterwards its block s must hold what rank s had for r.
// Returns, per rank, whether the call ran tile-ordered (PlanFacts::tileOrderedInPlace) and whether
// it made a private input copy.
struct InPlaceRun {
  std::vector<int> tileOrdered;
  std::vector<bool> privateCopy;
  std::vector<std::uint64_t> evictions;  // Workspace::evictions
};
InPlaceRun allToAllInPlace(const ir::Algorithm& a, std::size_t count, bool alwaysByReference) {
  const int p = a.nranks;
  std::vector<std::vector<float>> buffers(static_cast<std::size_t>(p),
                                          std::vector<float>(static_cast<std::size_t>(p) * count));
  for (int r = 0; r < p; ++r)
    for (int d = 0; d < p; ++d)
      for (std::size_t i = 0; i < count; ++i)
        buffers[r][d * count + i] = static_cast<float>(r * 1000000 + d * 10000 + i);
  std::vector<runtime::Workspace> workspaces(static_cast<std::size_t>(p));
  transport::ThreadGroup group(p, {8, 4096, 1});  // any message may go by reference
  std::vector<std::thread> threads;
  for (int r = 0; r < p; ++r)
    threads.emplace_back([&, r] {
      runtime::CollectiveArgs args;
      args.input = buffers[r].data();
      args.output = buffers[r].data();
      args.count = count;
      runtime::ExecOptions options;
      options.workspace = &workspaces[r];
      options.alwaysByReference = alwaysByReference;
      options.timeout = std::chrono::milliseconds(5000);
      runtime::executeRank(a, r, args, group.rank(r), options);
    });
  for (auto& t : threads)
    t.join();
  InPlaceRun run;
  for (int r = 0; r < p; ++r) {
    for (int s = 0; s < p; ++s)
      for (std::size_t i = 0; i < count; ++i)
        EXPECT_EQ(buffers[r][s * count + i], static_cast<float>(s * 1000000 + r * 10000 + i))
            << a.name << " rank " << r << " block " << s << " [" << i << "]";
    run.tileOrdered.push_back(workspaces[r].facts.tileOrderedInPlace);
    run.privateCopy.push_back(workspaces[r].buffers[0].reserve(0) != nullptr);  // grew
    run.evictions.push_back(workspaces[r].evictions);
  }
  return run;
}

// Each tile of a block is sent (copied into a slot) before the same tile is received over it,
// in one threadblock: no private copy of the input. Those sends never go by reference, even
// with alwaysByReference: the receive over the tile would have to wait for the peer's read
// and, both ranks waiting so, evict the message (a stall and a copy per tile).
TEST(InterpreterAliasing, InPlaceAllToAllRunsTileOrderedWithoutAPrivateCopy) {
  struct Case {
    const char* name;
    int ranks;
    std::map<std::string, int> params;
  };
  for (const Case& c : {Case{"alltoall.direct", 2, {}}, Case{"alltoall.direct", 3, {}},
                        Case{"alltoall.direct", 4, {}}, Case{"alltoall.pairwise", 4, {{"xor", 1}}},
                        Case{"alltoall.bruck", 2, {}}})
    for (const bool byReference : {false, true})
      for (const std::size_t count : {std::size_t{1}, std::size_t{1027}, std::size_t{5000}}) {
        SCOPED_TRACE(::testing::Message() << c.name << " ranks " << c.ranks << " count " << count
                                          << " alwaysByReference " << byReference);
        const auto a = compileForTest(c.name, c.ranks, 0, 0, c.params);
        ASSERT_FALSE(a.inPlace);
        const InPlaceRun run = allToAllInPlace(a, count, byReference);
        for (int r = 0; r < c.ranks; ++r) {
          EXPECT_EQ(run.tileOrdered[r], 1) << "rank " << r;
          EXPECT_FALSE(run.privateCopy[r]) << "rank " << r;
          EXPECT_EQ(run.evictions[r], 0u) << "rank " << r;
        }
      }
}

// Shift pairing at 3 ranks reads block r+1 in one threadblock and receives over it in another:
// not tile-ordered, so the input is copied aside first, and the result is still right.
TEST(InterpreterAliasing, InPlaceAllToAllAcrossThreadblocksTakesAPrivateCopy) {
  const auto a = compileForTest("alltoall.pairwise", 3);
  for (const std::size_t count : {std::size_t{7}, std::size_t{3000}}) {
    const InPlaceRun run = allToAllInPlace(a, count, false);
    for (int r = 0; r < 3; ++r) {
      EXPECT_EQ(run.tileOrdered[r], 0) << "rank " << r;
      EXPECT_TRUE(run.privateCopy[r]) << "rank " << r;
    }
  }
}

}  // namespace
}  // namespace chorus
