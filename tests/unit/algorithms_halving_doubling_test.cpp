// Structure of the halving/doubling and direct algorithms (halving_doubling.cpp, direct.cpp):
// cross-rank messages, rounds on the critical path, bytes per rank, buffers written, root
// handling and the pairwise schedule, at p = 8 and at non-powers of two. Correctness of the
// results is covered by the registry sweeps (algorithms_test.cpp, library_sweep_test.cpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "algorithm_test_util.h"
#include "algorithms/registry.h"
#include "support/error.h"

namespace chorus::algorithms {
namespace {

using testing_support::ranksRequest;

using ::testing::HasSubstr;

struct TraceShape {
  int messages = 0;             // cross-rank copies and reduces
  int rounds = 0;               // most cross-rank ops on one chain of data dependencies
  std::vector<int> chunksSent;  // per rank
  std::vector<int> received;    // messages per receiving rank
};

// Data-flow depth: an op's depth is the deepest value it reads (its source, and for a reduce
// also its destination) plus one when it crosses ranks.
TraceShape traceShape(const lang::Program& program) {
  TraceShape shape;
  shape.chunksSent.assign(static_cast<std::size_t>(program.nranks()), 0);
  shape.received.assign(static_cast<std::size_t>(program.nranks()), 0);
  std::map<std::tuple<int, ir::BufferKind, int>, int> depthAt;
  auto key = [&](const ir::ChunkLoc& loc, int offset) {
    const ir::Location at = program.collective().canonical(loc.rank, {loc.buffer, loc.index});
    return std::make_tuple(loc.rank, at.buffer, at.index + offset);
  };
  auto depthOf = [&](const ir::ChunkLoc& loc, int offset) {
    auto it = depthAt.find(key(loc, offset));
    return it == depthAt.end() ? 0 : it->second;
  };
  for (const ir::DagOp& op : program.dag().ops) {
    const bool remote = op.src.rank != op.dst.rank;
    for (int i = 0; i < op.count; ++i) {
      int before = depthOf(op.src, i);
      if (op.kind == ir::DagOpKind::reduce) before = std::max(before, depthOf(op.dst, i));
      depthAt[key(op.dst, i)] = before + (remote ? 1 : 0);
      shape.rounds = std::max(shape.rounds, before + (remote ? 1 : 0));
    }
    if (!remote) continue;
    ++shape.messages;
    shape.chunksSent[static_cast<std::size_t>(op.src.rank)] += op.count;
    ++shape.received[static_cast<std::size_t>(op.dst.rank)];
  }
  return shape;
}

struct RoundsCase {
  const char* algorithm;
  int ranks;
  int messages;
  int rounds;
};

// lg p rounds at p = 8. At p = 6 and 7 (core of 4 ranks) the pre/post steps add up to one
// round each (reduce: the pre step only). At p = 6 the data flow is one round shorter than the
// ⌊lg p⌋ + 2 steps of the synchronous cost model: the fold overlaps the first round of the
// unpaired ranks 4 and 5.
TEST(HalvingDoublingTest, MessagesAndRoundsOnTheCriticalPath) {
  const RoundsCase cases[] = {
      {"allreduce.recursive-doubling", 8, 24, 3},
      {"allreduce.recursive-doubling", 6, 2 + 8 + 2, 3},
      {"allreduce.recursive-doubling", 7, 3 + 8 + 3, 4},
      {"allreduce.rabenseifner", 8, 48, 6},
      {"allreduce.rabenseifner", 6, 2 + 16 + 2, 6},
      {"allreduce.rabenseifner", 7, 3 + 16 + 3, 6},
      {"reducescatter.recursive-halving", 8, 24, 3},
      {"reducescatter.recursive-halving", 6, 2 + 8 + 2, 3},
      {"reducescatter.recursive-halving", 7, 3 + 8 + 3, 4},
      {"reducescatter.recursive-doubling", 8, 24, 3},
      {"reducescatter.recursive-doubling", 6, 2 + 8 + 2, 3},
      {"reducescatter.recursive-doubling", 7, 3 + 8 + 3, 4},
      {"allgather.recursive-doubling", 8, 24, 3},
      {"allgather.recursive-doubling", 6, 2 + 8 + 2, 3},
      {"allgather.recursive-doubling", 7, 3 + 8 + 3, 4},
      {"reduce.rabenseifner", 8, 24 + 7, 6},
      {"reduce.rabenseifner", 6, 2 + 8 + 3, 5},
      {"reduce.rabenseifner", 7, 3 + 8 + 3, 5},
      {"allgather.direct", 8, 56, 1},
      {"allgather.direct", 7, 42, 1},
      {"reducescatter.direct", 8, 56, 1},
      {"reducescatter.direct", 7, 42, 1},
      {"reducescatter.pairwise", 8, 56, 7},
      {"reducescatter.pairwise", 7, 42, 6},
  };
  for (const RoundsCase& c : cases) {
    const TraceShape shape = traceShape(*buildProgram(ranksRequest(c.algorithm, c.ranks)));
    EXPECT_EQ(shape.messages, c.messages) << c.algorithm << " p=" << c.ranks;
    EXPECT_EQ(shape.rounds, c.rounds) << c.algorithm << " p=" << c.ranks;
  }
}

// Vector halving/doubling at p = 8: each rank sends n/2 + n/4 + n/8 per phase, never the whole
// buffer per round (which is what allreduce.recursive-doubling does).
TEST(HalvingDoublingTest, VectorHalvingSendsAFractionOfTheBufferPerRank) {
  auto expectEveryRankSends = [](const char* algorithm, int chunks, int chunkFactor) {
    auto program = buildProgram(ranksRequest(algorithm, 8));
    EXPECT_EQ(program->collective().chunkFactor(), chunkFactor) << algorithm;
    const TraceShape shape = traceShape(*program);
    for (int sent : shape.chunksSent)
      EXPECT_EQ(sent, chunks) << algorithm;
  };
  expectEveryRankSends("allreduce.rabenseifner", 2 * 7, 8);       // 2(p−1)/p · n, n = 8 chunks
  expectEveryRankSends("allreduce.recursive-doubling", 3, 1);     // lg p · n, n = 1 chunk
  expectEveryRankSends("reducescatter.recursive-halving", 7, 1);  // (p−1)/p · n, n = 8 blocks
  // (lg p − (p−1)/p) · n = 7 + 6 + 4 blocks: every round sends all blocks outside the group.
  expectEveryRankSends("reducescatter.recursive-doubling", 17, 1);
  expectEveryRankSends("allgather.recursive-doubling", 7, 1);
  expectEveryRankSends("reducescatter.pairwise", 7, 1);
}

// Non-power-of-two: only the 2(p − P) paired ranks exchange whole buffers; the core ranks of
// allreduce.rabenseifner at p = 6 (P = 4 chunks) send 2 · 3 chunks, the partners one more buffer.
TEST(HalvingDoublingTest, NonPowerOfTwoFoldsTheFirstRanksIntoPartners) {
  auto program = buildProgram(ranksRequest("allreduce.rabenseifner", 6));
  EXPECT_EQ(program->collective().chunkFactor(), 4);
  const TraceShape shape = traceShape(*program);
  EXPECT_EQ(shape.chunksSent, (std::vector<int>{4, 6 + 4, 4, 6 + 4, 6, 6}));
}

// Allreduce works in place; the out-of-place collectives never write their input.
TEST(HalvingDoublingTest, OutOfPlaceAlgorithmsNeverWriteTheirInput) {
  for (const char* name : {"reducescatter.recursive-halving", "reducescatter.recursive-doubling",
                           "allgather.recursive-doubling", "reduce.rabenseifner",
                           "allgather.direct", "reducescatter.direct", "reducescatter.pairwise"}) {
    for (int ranks : {2, 5, 6, 8}) {
      auto program = buildProgram(ranksRequest(name, ranks));
      EXPECT_FALSE(program->collective().inPlace()) << name;
      for (const ir::DagOp& op : program->dag().ops)
        EXPECT_NE(op.dst.buffer, ir::BufferKind::input) << name << " p=" << ranks;
    }
  }
  for (const char* name : {"allreduce.recursive-doubling", "allreduce.rabenseifner"})
    EXPECT_TRUE(buildProgram(ranksRequest(name, 6))->collective().inPlace()) << name;
}

// Recursive-doubling ReduceScatter as the xCCL notes describe it at p = 8: round k (mask 2^k) is
// one message from every rank to rank XOR 2^k carrying the n − 2^k·n/p bytes of the blocks
// outside the sender's aligned group of 2^k ranks (the blocks both already excluded).
TEST(HalvingDoublingTest, ReduceScatterRecursiveDoublingSendsAllButTheGroupsBlocks) {
  auto program = buildProgram(ranksRequest("reducescatter.recursive-doubling", 8));
  std::map<std::pair<int, int>, int> sent;  // (src, dst) -> chunks
  std::map<std::pair<int, int>, int> messages;
  for (const ir::DagOp& op : program->dag().ops) {
    if (op.src.rank == op.dst.rank) continue;
    sent[{op.src.rank, op.dst.rank}] += op.count;
    ++messages[{op.src.rank, op.dst.rank}];
  }
  EXPECT_EQ(sent.size(), 8u * 3u);
  for (const auto& [pair, chunks] : sent) {
    const int mask = pair.first ^ pair.second;
    ASSERT_TRUE(mask == 1 || mask == 2 || mask == 4) << pair.first << "->" << pair.second;
    EXPECT_EQ(chunks, 8 - mask) << pair.first << "->" << pair.second;
    EXPECT_EQ(messages[pair], 1) << pair.first << "->" << pair.second;
  }
}

// The compiled program verifies at every p in 2..17 (the registry sweeps stop at 16) and at 32.
TEST(HalvingDoublingTest, ReduceScatterRecursiveDoublingVerifiesAtEveryRankCount) {
  std::vector<int> counts;
  for (int ranks = 2; ranks <= 17; ++ranks)
    counts.push_back(ranks);
  counts.push_back(32);
  for (int ranks : counts) {
    const BuildRequest request = ranksRequest("reducescatter.recursive-doubling", ranks);
    EXPECT_TRUE(buildProgram(request)->checkPostcondition().empty()) << "p=" << ranks;
    const compiler::CompileResult result = compileAlgorithm(request);
    EXPECT_EQ(result.algorithm.nranks, ranks);
  }
}

// Every root at several p: traced postcondition and the compiler's verifier, and the root is a
// core rank: it receives lg P halving and lg P gather messages (+1 when it is a paired rank).
TEST(HalvingDoublingTest, ReduceRabenseifnerHandlesEveryRoot) {
  for (int ranks : {2, 3, 5, 6, 7, 8, 11, 16}) {
    int lgCore = 0;
    while ((2 << lgCore) <= ranks)
      ++lgCore;
    const int paired = 2 * (ranks - (1 << lgCore));
    for (int root = 0; root < ranks; ++root) {
      BuildRequest request = ranksRequest("reduce.rabenseifner", ranks);
      request.params["root"] = root;
      const TraceShape shape = traceShape(*buildProgram(request));
      EXPECT_EQ(shape.received[static_cast<std::size_t>(root)],
                2 * lgCore + (root < paired ? 1 : 0))
          << "p=" << ranks << " root=" << root;
      const compiler::CompileResult result = compileAlgorithm(request);
      EXPECT_EQ(result.algorithm.root, root) << "p=" << ranks;
    }
  }
}

TEST(HalvingDoublingTest, ReduceRabenseifnerRejectsARootOutsideTheRanks) {
  BuildRequest request = ranksRequest("reduce.rabenseifner", 6);
  request.params["root"] = 6;
  try {
    buildProgram(request);
    FAIL() << "expected OptionError";
  } catch (const OptionError& error) {
    EXPECT_THAT(error.what(), HasSubstr("root 6 is not a rank of 0..5"));
  }
}

// Pairwise: step s runs on channel s−1, so threadblock s−1 of rank r serves step s only (send
// to r+s, receive from r−s): every rank has p−1 communicating threadblocks, one per step.
TEST(DirectTest, PairwiseRunsOneThreadblockPerStep) {
  for (int ranks : {2, 5, 8}) {
    auto program = buildProgram(ranksRequest("reducescatter.pairwise", ranks));
    for (const ir::DagOp& op : program->dag().ops) {
      if (op.src.rank == op.dst.rank) continue;
      const int step = (op.dst.rank - op.src.rank + ranks) % ranks;
      EXPECT_EQ(op.channel, step - 1);
    }
    const compiler::CompileResult result =
        compileAlgorithm(ranksRequest("reducescatter.pairwise", ranks));
    for (int r = 0; r < ranks; ++r) {
      std::set<int> steps;
      for (const ir::Threadblock& tb :
           result.algorithm.ranks[static_cast<std::size_t>(r)].threadblocks) {
        if (tb.sendPeer < 0 && tb.recvPeer < 0) continue;
        const int step = (tb.sendPeer - r + ranks) % ranks;
        EXPECT_EQ((r - tb.recvPeer + ranks) % ranks, step) << "p=" << ranks << " rank " << r;
        EXPECT_EQ(tb.id, step - 1) << "p=" << ranks << " rank " << r;
        EXPECT_EQ(tb.channel, step - 1) << "p=" << ranks << " rank " << r;
        steps.insert(step);
      }
      EXPECT_EQ(static_cast<int>(steps.size()), ranks - 1) << "p=" << ranks << " rank " << r;
    }
  }
}

// The step channels still compile when the whole program is replicated (each instance gets its
// own p−1 channels).
TEST(DirectTest, PairwiseCompilesWithInstances) {
  BuildRequest request = ranksRequest("reducescatter.pairwise", 6);
  request.instances = 2;
  const compiler::CompileResult result = compileAlgorithm(request);
  EXPECT_EQ(ir::channelCount(result.algorithm), 2 * 5);
}

// reducescatter.direct: rank 0's block lands in the owner's output first and every owner adds
// the other copies after it, so all sums run in rank order; nothing is received twice.
TEST(DirectTest, DirectReduceScatterSumsInRankOrder) {
  auto program = buildProgram(ranksRequest("reducescatter.direct", 5));
  std::vector<int> firstWriter(5, -1);
  for (const ir::DagOp& op : program->dag().ops) {
    if (op.dst.buffer != ir::BufferKind::output) continue;
    if (firstWriter[static_cast<std::size_t>(op.dst.rank)] < 0) {
      EXPECT_EQ(op.kind, ir::DagOpKind::copy);
      firstWriter[static_cast<std::size_t>(op.dst.rank)] = op.src.rank;
    }
  }
  EXPECT_EQ(firstWriter, (std::vector<int>{0, 0, 0, 0, 0}));
  const TraceShape shape = traceShape(*program);
  EXPECT_EQ(shape.received, (std::vector<int>{4, 4, 4, 4, 4}));
}

}  // namespace
}  // namespace chorus::algorithms
