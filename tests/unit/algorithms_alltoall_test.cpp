// Structure of the AllToAll and Bruck / hierarchical AllGather algorithms: who sends how many
// messages to whom (traced DAG), the threadblock placement the schedules promise (compiled
// plan), and that every parameter value traces, meets the postcondition and verifies.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "algorithm_test_util.h"
#include "algorithms/registry.h"
#include "ir/text_format.h"
#include "log2_for_test.h"
#include "support/error.h"

namespace chorus::algorithms {
namespace {

using testing_support::messagesOf;
using testing_support::nodesRequest;
using testing_support::ranksRequest;

using ::testing::HasSubstr;

std::unique_ptr<lang::Program> buildChecked(const BuildRequest& request) {
  std::unique_ptr<lang::Program> program = buildProgram(request);
  for (const lang::Violation& violation : program->checkPostcondition())
    ADD_FAILURE() << request.algorithm << ": " << violation.describe();
  return program;
}

using testing_support::ceilLog2;

// Messages per rank of k-ary Bruck: one per (digit position x, digit value d) with d·k^x < p.
int bruckMessages(int ranks, int radix) {
  int messages = 0;
  for (int place = 1; place < ranks; place *= radix)
    for (int digit = 1; digit < radix && digit * place < ranks; ++digit)
      ++messages;
  return messages;
}

TEST(BruckTest, AllToAllSendsOneMessagePerRoundToRPlusShift) {
  for (int radix = 2; radix <= 8; ++radix) {
    for (int ranks = 2; ranks <= 16; ++ranks) {
      auto program = buildChecked(ranksRequest("alltoall.bruck", ranks, {{"radix", radix}}));
      std::vector<std::set<int>> shifts(ranks);
      for (const ir::DagOp& op : messagesOf(*program))
        shifts[op.src.rank].insert((op.dst.rank - op.src.rank + ranks) % ranks);
      for (int r = 0; r < ranks; ++r) {
        ASSERT_EQ(static_cast<int>(shifts[r].size()), bruckMessages(ranks, radix))
            << "p=" << ranks << " k=" << radix << " rank " << r;
        for (int shift : shifts[r]) {
          int place = 1;
          while (place * radix <= shift)
            place *= radix;
          EXPECT_EQ(shift % place, 0) << "shift " << shift << " is not d·k^x";
        }
      }
      EXPECT_EQ(static_cast<int>(messagesOf(*program).size()), ranks * bruckMessages(ranks, radix));
    }
  }
}

TEST(BruckTest, RadixTwoNeedsCeilLog2MessagesPerRank) {
  for (int ranks = 2; ranks <= 16; ++ranks) {
    EXPECT_EQ(bruckMessages(ranks, 2), ceilLog2(ranks));
    for (const char* name : {"alltoall.bruck", "allgather.bruck"}) {
      auto program = buildChecked(ranksRequest(name, ranks));
      std::vector<int> perRank(ranks, 0);
      for (const ir::DagOp& op : messagesOf(*program))
        ++perRank[op.src.rank];
      for (int r = 0; r < ranks; ++r)
        EXPECT_EQ(perRank[r], ceilLog2(ranks)) << name << " p=" << ranks << " rank " << r;
    }
  }
}

TEST(BruckTest, AllToAllBlocksTravelHalfTheRoundsOnAverage) {
  // Radix 2 sends block i once per set bit of i: Σ popcount(i), i = 1..p−1 chunks per rank.
  for (int ranks = 2; ranks <= 16; ++ranks) {
    auto program = buildChecked(ranksRequest("alltoall.bruck", ranks));
    int expected = 0;
    for (int i = 1; i < ranks; ++i)
      expected += __builtin_popcount(static_cast<unsigned>(i));
    std::vector<int> chunks(ranks, 0);
    for (const ir::DagOp& op : messagesOf(*program))
      chunks[op.src.rank] += op.count;
    for (int r = 0; r < ranks; ++r)
      EXPECT_EQ(chunks[r], expected) << "p=" << ranks << " rank " << r;
  }
}

TEST(BruckTest, AllGatherSendsEachChunkOnceToRMinusShift) {
  for (int radix = 2; radix <= 8; ++radix) {
    for (int ranks = 2; ranks <= 16; ++ranks) {
      auto program = buildChecked(ranksRequest("allgather.bruck", ranks, {{"radix", radix}}));
      std::vector<int> chunks(ranks, 0);
      std::vector<int> messages(ranks, 0);
      for (const ir::DagOp& op : messagesOf(*program)) {
        chunks[op.src.rank] += op.count;
        ++messages[op.src.rank];
        // Sent from the front of the work area to offset d·h at rank r − d·h.
        EXPECT_EQ(op.src.index, 0);
        EXPECT_EQ((op.src.rank - op.dst.rank + ranks) % ranks, op.dst.index);
      }
      for (int r = 0; r < ranks; ++r) {
        EXPECT_EQ(chunks[r], ranks - 1) << "p=" << ranks << " k=" << radix;
        EXPECT_EQ(messages[r], bruckMessages(ranks, radix)) << "p=" << ranks << " k=" << radix;
      }
    }
  }
}

TEST(BruckTest, EveryRadixCompilesAndVerifies) {
  for (const char* name : {"alltoall.bruck", "allgather.bruck"}) {
    for (int radix = 2; radix <= 8; ++radix) {
      for (int ranks : {2, 3, 5, 7, 9, 12, 16}) {
        const compiler::CompileResult result =
            compileAlgorithm(ranksRequest(name, ranks, {{"radix", radix}}));
        EXPECT_EQ(result.algorithm.nranks, ranks);
      }
    }
  }
}

TEST(FlatAllToAllTest, EveryRankSendsPMinusOneMessagesToDistinctPeers) {
  for (const char* name :
       {"alltoall.direct", "alltoall.pairwise", "alltoall.scatter-destination"}) {
    for (int ranks = 2; ranks <= 16; ++ranks) {
      auto program = buildChecked(ranksRequest(name, ranks));
      std::vector<std::set<int>> peers(ranks);
      int messages = 0;
      for (const ir::DagOp& op : messagesOf(*program)) {
        EXPECT_EQ(op.count, 1);
        peers[op.src.rank].insert(op.dst.rank);
        ++messages;
      }
      EXPECT_EQ(messages, ranks * (ranks - 1)) << name;
      for (int r = 0; r < ranks; ++r)
        EXPECT_EQ(static_cast<int>(peers[r].size()), ranks - 1) << name << " rank " << r;
    }
  }
}

TEST(FlatAllToAllTest, PairwiseStepSIsThreadblockSMinusOne) {
  for (int ranks = 2; ranks <= 16; ++ranks) {
    auto program = buildChecked(ranksRequest("alltoall.pairwise", ranks));
    for (const ir::DagOp& op : messagesOf(*program)) {
      const int step = (op.dst.rank - op.src.rank + ranks) % ranks;
      EXPECT_EQ(op.sendTb, step - 1);
      EXPECT_EQ(op.recvTb, step - 1);
    }
    // The compiled plan keeps one threadblock per step: send to r+s, receive from r−s.
    const ir::Algorithm algorithm =
        compileAlgorithm(ranksRequest("alltoall.pairwise", ranks)).algorithm;
    for (int r = 0; r < ranks; ++r) {
      const auto& tbs = algorithm.ranks[r].threadblocks;
      ASSERT_GE(static_cast<int>(tbs.size()), ranks - 1);
      for (int step = 1; step < ranks; ++step) {
        EXPECT_EQ(tbs[step - 1].sendPeer, (r + step) % ranks) << "rank " << r;
        EXPECT_EQ(tbs[step - 1].recvPeer, (r - step + ranks) % ranks) << "rank " << r;
      }
    }
  }
}

TEST(FlatAllToAllTest, PairwiseXorExchangesWithRXorS) {
  for (int ranks : {2, 4, 8, 16}) {
    const BuildRequest request = ranksRequest("alltoall.pairwise", ranks, {{"xor", 1}});
    auto program = buildChecked(request);
    for (const ir::DagOp& op : messagesOf(*program))
      EXPECT_EQ(op.dst.rank, op.src.rank ^ (op.sendTb + 1));
    const ir::Algorithm algorithm = compileAlgorithm(request).algorithm;
    for (int r = 0; r < ranks; ++r) {
      for (int step = 1; step < ranks; ++step) {
        EXPECT_EQ(algorithm.ranks[r].threadblocks[step - 1].sendPeer, r ^ step);
        EXPECT_EQ(algorithm.ranks[r].threadblocks[step - 1].recvPeer, r ^ step);
      }
    }
  }
}

TEST(FlatAllToAllTest, PairwiseXorNeedsAPowerOfTwo) {
  try {
    buildProgram(ranksRequest("alltoall.pairwise", 6, {{"xor", 1}}));
    FAIL() << "expected OptionError";
  } catch (const OptionError& error) {
    EXPECT_THAT(error.what(), HasSubstr("power-of-two number of ranks, got 6"));
    EXPECT_THAT(error.what(), HasSubstr("--set xor=0"));
  }
}

TEST(FlatAllToAllTest, ScatterDestinationSeparatesSendAndReceiveThreadblocks) {
  for (int ranks = 2; ranks <= 16; ++ranks) {
    const ir::Algorithm algorithm =
        compileAlgorithm(ranksRequest("alltoall.scatter-destination", ranks)).algorithm;
    for (int r = 0; r < ranks; ++r) {
      const auto& tbs = algorithm.ranks[r].threadblocks;
      ASSERT_EQ(static_cast<int>(tbs.size()), 2 * (ranks - 1)) << "rank " << r;
      for (int step = 1; step < ranks; ++step) {
        EXPECT_EQ(tbs[step - 1].sendPeer, (r + step) % ranks);
        EXPECT_EQ(tbs[step - 1].recvPeer, -1);
        EXPECT_EQ(tbs[ranks - 2 + step].sendPeer, -1);
        EXPECT_EQ(tbs[ranks - 2 + step].recvPeer, (r - step + ranks) % ranks);
      }
    }
  }
}

// Node-shaped cases: every N x G up to 4 x 8 with at least two ranks.
std::vector<std::pair<int, int>> nodeShapes() {
  std::vector<std::pair<int, int>> shapes;
  for (int nodes = 1; nodes <= 4; ++nodes)
    for (int gpus = 1; gpus <= 8; ++gpus)
      if (nodes * gpus >= 2) shapes.emplace_back(nodes, gpus);
  return shapes;
}

struct InterNode {
  int messages = 0;
  std::set<int> senders;
  std::set<int> counts;
};

InterNode interNodeMessages(const lang::Program& program, int gpus) {
  InterNode result;
  for (const ir::DagOp& op : messagesOf(program)) {
    if (op.src.rank / gpus == op.dst.rank / gpus) continue;
    ++result.messages;
    result.senders.insert(op.src.rank);
    result.counts.insert(op.count);
  }
  return result;
}

TEST(HierarchicalAllToAllTest, TwoStepSendsNMinusOneInterNodeMessagesPerGpu) {
  for (auto [nodes, gpus] : nodeShapes()) {
    auto program = buildChecked(nodesRequest("alltoall.two-step", nodes, gpus));
    const InterNode inter = interNodeMessages(*program, gpus);
    EXPECT_EQ(inter.messages, nodes * gpus * (nodes - 1)) << nodes << "x" << gpus;
    if (nodes > 1) {
      EXPECT_EQ(inter.counts, std::set<int>{gpus}) << nodes << "x" << gpus;
    }
  }
}

TEST(HierarchicalAllToAllTest, ThreeStepSendsOneTransferPerNodePairSpreadOverGpus) {
  for (auto [nodes, gpus] : nodeShapes()) {
    auto program = buildChecked(nodesRequest("alltoall.three-step", nodes, gpus));
    std::vector<int> perRank(nodes * gpus, 0);
    int messages = 0;
    for (const ir::DagOp& op : messagesOf(*program)) {
      if (op.src.rank / gpus == op.dst.rank / gpus) continue;
      ++messages;
      ++perRank[op.src.rank];
      EXPECT_EQ(op.count, gpus * gpus) << nodes << "x" << gpus;
    }
    EXPECT_EQ(messages, nodes * (nodes - 1)) << nodes << "x" << gpus;
    // Node pairs are dealt round-robin: every GPU sends ⌊(N−1)/G⌋ or ⌈(N−1)/G⌉ of them.
    for (int r = 0; r < nodes * gpus; ++r) {
      EXPECT_GE(perRank[r], (nodes - 1) / gpus) << nodes << "x" << gpus << " rank " << r;
      EXPECT_LE(perRank[r], (nodes - 1 + gpus - 1) / gpus) << nodes << "x" << gpus;
    }
  }
}

constexpr int kAggregated = 0;  // `forward` values
constexpr int kPerChunk = 1;
constexpr int kShift = 0;  // `pairing` values
constexpr int kXor = 1;

TEST(HierarchicalAllToAllTest, OnlyLeadersCrossNodes) {
  for (auto [nodes, gpus] : nodeShapes()) {
    for (int leaders : {1, 2, 3, 8}) {
      const int used = std::min(leaders, gpus);
      auto program = buildChecked(nodesRequest("alltoall.hierarchical", nodes, gpus,
                                               {{"leaders", leaders}, {"forward", kAggregated}}));
      const InterNode inter = interNodeMessages(*program, gpus);
      EXPECT_EQ(inter.messages, nodes * (nodes - 1) * used)
          << nodes << "x" << gpus << " leaders " << leaders;
      std::set<int> leaderGpus;
      for (int l = 0; l < used; ++l)
        leaderGpus.insert(l * gpus / used);
      for (int sender : inter.senders)
        EXPECT_TRUE(leaderGpus.contains(sender % gpus))
            << nodes << "x" << gpus << ": rank " << sender << " is no leader";
      if (used == 1 && nodes > 1) {
        EXPECT_EQ(inter.counts, std::set<int>{gpus * gpus});
      }
    }
  }
}

TEST(HierarchicalAllToAllTest, LeadersExchangePairwiseOneThreadblockPerStep) {
  for (int nodes = 2; nodes <= 4; ++nodes) {
    for (int forward : {kAggregated, kPerChunk}) {
      auto program = buildChecked(nodesRequest("alltoall.hierarchical", nodes, 4,
                                               {{"pairing", kShift}, {"forward", forward}}));
      for (const ir::DagOp& op : messagesOf(*program)) {
        if (op.src.rank / 4 == op.dst.rank / 4) continue;
        const int step = (op.dst.rank / 4 - op.src.rank / 4 + nodes) % nodes;
        EXPECT_EQ(op.sendTb, step - 1);
        EXPECT_EQ(op.recvTb, step - 1);
      }
    }
  }
}

// Alg. 3 line 28 (dst = lrank ^ i): in step s node a and node a XOR s exchange both ways.
TEST(HierarchicalAllToAllTest, XorPairingExchangesWithNodeXorStep) {
  for (int nodes : {2, 4, 8}) {
    for (int forward : {kAggregated, kPerChunk}) {
      auto program = buildChecked(nodesRequest("alltoall.hierarchical", nodes, 4,
                                               {{"pairing", kXor}, {"forward", forward}}));
      std::set<std::pair<int, int>> sentInStep;  // (step, source node)
      for (const ir::DagOp& op : messagesOf(*program)) {
        const int from = op.src.rank / 4;
        const int to = op.dst.rank / 4;
        if (from == to) continue;
        const int step = from ^ to;
        EXPECT_EQ(op.sendTb, step - 1) << nodes << " nodes";
        EXPECT_EQ(op.recvTb, step - 1) << nodes << " nodes";
        sentInStep.insert({step, from});
      }
      EXPECT_EQ(static_cast<int>(sentInStep.size()), nodes * (nodes - 1)) << nodes << " nodes";
    }
  }
}

TEST(HierarchicalAllToAllTest, XorPairingFallsBackToShiftWhenNodesAreNoPowerOfTwo) {
  for (int nodes : {3, 5, 6}) {
    const std::string shift = ir::printText(
        compileAlgorithm(nodesRequest("alltoall.hierarchical", nodes, 2, {{"pairing", kShift}}))
            .algorithm);
    const std::string byDefault =
        ir::printText(compileAlgorithm(nodesRequest("alltoall.hierarchical", nodes, 2)).algorithm);
    EXPECT_EQ(shift, byDefault) << nodes << " nodes";
  }
}

// forward=chunk (Alg. 3 lines 13-24): one inter-node message per source GPU, leader pair and
// step, of w chunks, and every chunk is scattered on a message of its own that depends on that
// inter-node message alone.
TEST(HierarchicalAllToAllTest, PerChunkForwardingSendsOneMessagePerSourceGpu) {
  for (auto [nodes, gpus] : nodeShapes()) {
    for (int leaders : {1, 2, 8}) {
      const int used = std::min(leaders, gpus);
      auto program = buildChecked(nodesRequest("alltoall.hierarchical", nodes, gpus,
                                               {{"leaders", leaders}, {"forward", kPerChunk}}));
      const InterNode inter = interNodeMessages(*program, gpus);
      EXPECT_EQ(inter.messages, nodes * (nodes - 1) * used * gpus)
          << nodes << "x" << gpus << " leaders " << leaders;
      if (nodes > 1 && gpus % used == 0) {
        EXPECT_EQ(inter.counts, std::set<int>{gpus / used}) << nodes << "x" << gpus;
      }
      const auto& ops = program->dag().ops;
      for (const ir::DagOp& op : ops) {
        if (op.dst.rank / gpus != op.src.rank / gpus || op.src.buffer != lang::Buffer::scratch ||
            op.dst.buffer != lang::Buffer::output)
          continue;  // not a scatter
        EXPECT_EQ(op.count, 1);
        ASSERT_EQ(op.trueDeps.size(), 1u) << nodes << "x" << gpus;
        const ir::DagOp& arrival = ops[op.trueDeps[0]];
        EXPECT_NE(arrival.src.rank / gpus, arrival.dst.rank / gpus) << nodes << "x" << gpus;
      }
    }
  }
}

TEST(HierarchicalAllToAllTest, EveryLeaderCountCompilesAndVerifies) {
  for (auto [nodes, gpus] : nodeShapes()) {
    for (int leaders = 2; leaders <= 8; leaders += 3) {
      const compiler::CompileResult result = compileAlgorithm(
          nodesRequest("alltoall.hierarchical", nodes, gpus, {{"leaders", leaders}}));
      EXPECT_EQ(result.algorithm.nranks, nodes * gpus);
    }
  }
}

TEST(HierarchicalAllToAllTest, EagerOverlapsIntraNodeStepsWithTheFirstInterNodeSteps) {
  for (auto [nodes, gpus] : nodeShapes()) {
    auto program = buildChecked(nodesRequest("alltoall.eager", nodes, gpus));
    const int ranks = nodes * gpus;
    std::vector<int> perRank(ranks, 0);
    std::set<int> tbs;
    for (const ir::DagOp& op : messagesOf(*program)) {
      ++perRank[op.src.rank];
      tbs.insert(op.sendTb);
      const bool intra = op.src.rank / gpus == op.dst.rank / gpus;
      if (nodes > 1 && intra) {
        // Intra-node step i = (g' − g) mod G runs on the threadblock right after inter step i.
        const int step = (op.dst.rank % gpus - op.src.rank % gpus + gpus) % gpus;
        EXPECT_EQ(op.sendTb, 2 * step - 1) << nodes << "x" << gpus;
      }
    }
    for (int r = 0; r < ranks; ++r)
      EXPECT_EQ(perRank[r], ranks - 1) << nodes << "x" << gpus;
    // One threadblock per inter-node step and per intra-node step.
    EXPECT_EQ(static_cast<int>(tbs.size()), (nodes - 1) * gpus + gpus - 1);
    EXPECT_EQ(interNodeMessages(*program, gpus).messages, ranks * (nodes - 1) * gpus);
  }
}

TEST(HierarchicalAllGatherTest, OnlyLeadersCrossNodesInCeilLog2NLevels) {
  for (auto [nodes, gpus] : nodeShapes()) {
    auto program = buildChecked(
        nodesRequest("allgather.hierarchical", nodes, gpus, {{"forward", kAggregated}}));
    const int ranks = nodes * gpus;
    std::vector<int> interReceived(ranks, 0);
    std::vector<int> sent(ranks, 0);
    for (const ir::DagOp& op : messagesOf(*program)) {
      ++sent[op.src.rank];
      if (op.src.rank / gpus == op.dst.rank / gpus) continue;
      EXPECT_EQ(op.src.rank % gpus, 0) << nodes << "x" << gpus << ": non-leader crossed nodes";
      EXPECT_EQ(op.dst.rank % gpus, 0) << nodes << "x" << gpus;
      ++interReceived[op.dst.rank];
    }
    for (int r = 0; r < ranks; ++r) {
      if (r % gpus != 0) {
        EXPECT_EQ(sent[r], 1) << nodes << "x" << gpus << ": a GPU sends only to its leader";
      } else {
        // Recursive doubling: one range per level; a full power of two uses every level.
        EXPECT_LE(interReceived[r], ceilLog2(nodes)) << nodes << "x" << gpus;
        if ((nodes & (nodes - 1)) == 0) {
          EXPECT_EQ(interReceived[r], ceilLog2(nodes));
        }
      }
    }
  }
}

TEST(HierarchicalAllGatherTest, NonPowerOfTwoNodeCountsFinishInCeilLog2NLevels) {
  for (int nodes : {3, 5, 6, 7, 9, 11}) {
    for (int forward : {kAggregated, kPerChunk}) {
      auto program =
          buildChecked(nodesRequest("allgather.hierarchical", nodes, 2, {{"forward", forward}}));
      // Each level's receive depends on the previous level's: the longest chain of inter-node
      // transfers is ⌈lg N⌉ long.
      const auto& ops = program->dag().ops;
      std::vector<int> depth(ops.size(), 0);
      int longest = 0;
      for (const ir::DagOp& op : ops) {
        int d = 0;
        for (int dep : op.trueDeps)
          d = std::max(d, depth[dep]);
        const bool inter = op.src.rank / 2 != op.dst.rank / 2;
        depth[op.id] = d + (inter ? 1 : 0);
        longest = std::max(longest, depth[op.id]);
      }
      EXPECT_EQ(longest, ceilLog2(nodes)) << nodes << " nodes";
      const compiler::CompileResult result = compileAlgorithm(
          nodesRequest("allgather.hierarchical", nodes, 2, {{"forward", forward}}));
      EXPECT_EQ(result.algorithm.nranks, 2 * nodes);
    }
  }
}

// forward=chunk (Alg. 1 lines 11-19): every inter-node message is one chunk, sent by the
// leader of node n ^ h at the level h of the chunk's node (the highest bit of n ^ m), and each
// forward to a local GPU depends on the arrival of its own chunk only, so chunk i is forwarded
// before chunk i+1 has arrived.
TEST(HierarchicalAllGatherTest, PerChunkForwardingUsesXorPartnersOneChunkPerMessage) {
  for (int nodes : {2, 4, 8}) {
    for (int gpus : {1, 2, 4, 6}) {
      auto program = buildChecked(nodesRequest("allgather.hierarchical", nodes, gpus));
      const auto& ops = program->dag().ops;
      std::vector<int> interReceived(nodes * gpus, 0);
      for (const ir::DagOp& op : messagesOf(*program)) {
        EXPECT_EQ(op.count, 1) << nodes << "x" << gpus;
        const int to = op.dst.rank / gpus;
        const int from = op.src.rank / gpus;
        if (to == from) continue;
        const int chunkNode = op.dst.index / gpus;
        int level = 1;
        while (level * 2 <= (to ^ chunkNode))
          level *= 2;
        EXPECT_EQ(from, to ^ level) << nodes << "x" << gpus << " chunk " << op.dst.index;
        ++interReceived[op.dst.rank];
      }
      for (int n = 0; n < nodes; ++n)
        EXPECT_EQ(interReceived[n * gpus], (nodes - 1) * gpus) << nodes << "x" << gpus;
      for (const ir::DagOp& op : ops) {
        const bool forward = op.src.rank / gpus == op.dst.rank / gpus && op.src.rank % gpus == 0 &&
                             op.dst.rank != op.src.rank &&
                             op.src.index / gpus != op.src.rank / gpus;
        if (!forward) continue;
        ASSERT_EQ(op.trueDeps.size(), 1u);
        const ir::DagOp& arrival = ops[op.trueDeps[0]];
        EXPECT_EQ(arrival.dst.index, op.src.index);
        EXPECT_EQ(arrival.count, 1);
        EXPECT_NE(arrival.src.rank / gpus, op.src.rank / gpus) << "forwarded a remote chunk";
      }
    }
  }
}

}  // namespace
}  // namespace chorus::algorithms
