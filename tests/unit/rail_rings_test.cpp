// Rail rings: allreduce.ring, allgather.ring and reducescatter.ring with channels=k on an
// N x G node shape send across node boundaries from k distinct local GPUs (so NICs), one per
// channel, each carrying an equal share; flat shapes and channels=1 keep the one ring.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>

#include "algorithm_test_util.h"
#include "algorithms/rail_rings.h"
#include "algorithms/registry.h"
#include "ir/text_format.h"
#include "support/error.h"

namespace chorus::algorithms {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing_support::nodesRequest;
using testing_support::ranksRequest;

constexpr const char* kRings[] = {"allreduce.ring", "allgather.ring", "reducescatter.ring"};

// Chunks sent across a node boundary, keyed by (channel, local GPU of the sender).
std::map<std::pair<int, int>, long> interNodeChunks(const ir::Algorithm& algorithm, int gpus) {
  std::map<std::pair<int, int>, long> chunks;
  for (const ir::RankProgram& rank : algorithm.ranks) {
    for (const ir::Threadblock& tb : rank.threadblocks) {
      if (tb.sendPeer < 0 || tb.sendPeer / gpus == rank.rank / gpus) continue;
      for (const ir::Step& step : tb.steps)
        if (ir::opSends(step.op)) chunks[{tb.channel, rank.rank % gpus}] += step.count;
    }
  }
  return chunks;
}

TEST(RailRingTest, ChannelZeroIsTheFlatRingAndEveryChannelRotatesTheNode) {
  EXPECT_THAT(railRing(0, 2, 3), ElementsAre(0, 1, 2, 3, 4, 5));
  EXPECT_THAT(railRing(1, 2, 3), ElementsAre(1, 2, 0, 4, 5, 3));
  EXPECT_THAT(railRing(4, 2, 3), ElementsAre(1, 2, 0, 4, 5, 3));  // channel 4 = rail of 1
}

TEST(RailRingTest, EachChannelCrossesNodesFromItsOwnGpuWithAnEqualShare) {
  for (const char* name : kRings) {
    for (const auto& [nodes, gpus, channels] : {std::tuple{4, 8, 8}, {3, 4, 2}, {2, 3, 3}}) {
      const ir::Algorithm algorithm =
          compileAlgorithm(nodesRequest(name, nodes, gpus, {{"channels", channels}})).algorithm;
      const auto chunks = interNodeChunks(algorithm, gpus);
      std::set<int> senders;
      std::set<long> shares;
      for (const auto& [key, count] : chunks) {
        const auto [channel, gpu] = key;
        EXPECT_EQ(gpu, (channel + gpus - 1) % gpus) << name << " channel " << channel;
        senders.insert(gpu);
        shares.insert(count);
      }
      EXPECT_EQ(static_cast<int>(senders.size()), channels) << name << " " << nodes << "x" << gpus;
      EXPECT_EQ(shares.size(), 1u) << name << ": rails carry unequal shares";
    }
  }
}

TEST(RailRingTest, FlatRingSendsEveryChannelThroughOneGpu) {
  // The same request by --ranks: one ring, so every node boundary is crossed from GPU G-1.
  const ir::Algorithm algorithm =
      compileAlgorithm(ranksRequest("allreduce.ring", 32, {{"channels", 8}})).algorithm;
  std::set<int> senders;
  for (const auto& [key, count] : interNodeChunks(algorithm, 8))
    senders.insert(key.second);
  EXPECT_THAT(senders, ElementsAre(7));
}

TEST(RailRingTest, OneChannelOrOneNodeBuildsTheFlatRing) {
  for (const char* name : kRings) {
    for (const auto& [nodes, gpus, channels] : {std::tuple{4, 8, 1}, {1, 8, 4}}) {
      const std::string byNodes = ir::printText(
          compileAlgorithm(nodesRequest(name, nodes, gpus, {{"channels", channels}})).algorithm);
      const std::string byRanks = ir::printText(
          compileAlgorithm(ranksRequest(name, nodes * gpus, {{"channels", channels}})).algorithm);
      EXPECT_EQ(byNodes, byRanks) << name << " " << nodes << "x" << gpus;
    }
    // The flat ring's chunk factor: R chunks per loop however many channels (rail rings: R·k).
    EXPECT_EQ(compileAlgorithm(ranksRequest(name, 8, {{"channels", 4}})).algorithm.chunksPerLoop, 8)
        << name;
    EXPECT_EQ(compileAlgorithm(nodesRequest(name, 2, 4, {{"channels", 4}})).algorithm.chunksPerLoop,
              32)
        << name;
  }
}

TEST(RailRingTest, NodeShapeNeedsBothNodesAndGpus) {
  BuildRequest request = nodesRequest("allreduce.ring", 4, 0);
  try {
    buildProgram(request);
    ADD_FAILURE() << "expected OptionError";
  } catch (const OptionError& error) {
    EXPECT_THAT(error.what(), HasSubstr("--nodes and --gpus-per-node together"));
    EXPECT_THAT(error.what(), HasSubstr("--ranks N"));
  }
  request = nodesRequest("allreduce.ring", 4, 8);
  request.ranks = 16;
  EXPECT_THROW(buildProgram(request), OptionError);
}

}  // namespace
}  // namespace chorus::algorithms
