// channels=k on the node-shaped algorithms (allreduce.hierarchical, allgather.hierarchical,
// alltoall.two-step): k instances, each on its own channels, that cross nodes through the
// NICs in equal shares; k = 1 builds exactly what the algorithm built before.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <tuple>

#include "algorithm_test_util.h"
#include "algorithms/common.h"
#include "algorithms/registry.h"
#include "ir/text_format.h"

namespace chorus::algorithms {
namespace {

using ::testing::ElementsAre;
using testing_support::nodesRequest;

constexpr const char* kInstanced[] = {"allreduce.hierarchical", "allgather.hierarchical",
                                      "alltoall.two-step"};

// Chunks sent across a node boundary per local GPU of the sender (so per NIC).
std::map<int, long> interNodeChunksByGpu(const ir::Algorithm& algorithm, int gpus) {
  std::map<int, long> chunks;
  for (const ir::RankProgram& rank : algorithm.ranks) {
    for (const ir::Threadblock& tb : rank.threadblocks) {
      if (tb.sendPeer < 0 || tb.sendPeer / gpus == rank.rank / gpus) continue;
      for (const ir::Step& step : tb.steps)
        if (ir::opSends(step.op)) chunks[rank.rank % gpus] += step.count;
    }
  }
  return chunks;
}

std::set<int> channelsOf(const ir::Algorithm& algorithm) {
  std::set<int> channels;
  for (const ir::RankProgram& rank : algorithm.ranks)
    for (const ir::Threadblock& tb : rank.threadblocks)
      channels.insert(tb.channel);
  return channels;
}

std::set<int> range(int count) {
  std::set<int> values;
  for (int i = 0; i < count; ++i)
    values.insert(i);
  return values;
}

TEST(InstanceParts, EachInstanceOwnsGConsecutivePositionsOfTheNodeBlock) {
  // G = 2, k = 3: GPU 0 holds positions 0-2, GPU 1 positions 3-5; instances own 0-1, 2-3, 4-5.
  auto parts = [](int gpu, int instance) {
    const PartRange r = partsOfInstance(gpu, instance, 2, 3);
    return std::pair{r.first, r.count};
  };
  EXPECT_EQ(parts(0, 0), (std::pair{0, 2}));
  EXPECT_EQ(parts(0, 1), (std::pair{2, 1}));
  EXPECT_EQ(parts(1, 1), (std::pair{0, 1}));
  EXPECT_EQ(parts(1, 2), (std::pair{1, 2}));
  EXPECT_EQ(parts(0, 2).second, 0);
  EXPECT_THAT(
      (std::vector{instanceLeader(0, 2, 3), instanceLeader(1, 2, 3), instanceLeader(2, 2, 3)}),
      ElementsAre(0, 0, 1));
  for (int c = 0; c < 8; ++c)  // k = G: instance c is GPU c's parts, led by GPU c
    EXPECT_EQ(instanceLeader(c, 8, 8), c);
}

TEST(HierarchicalChannels, OneChannelBuildsTheDefaultAlgorithm) {
  for (const char* name : kInstanced) {
    for (const auto& [nodes, gpus] : {std::pair{2, 3}, {3, 2}, {4, 8}}) {
      const std::string byDefault =
          ir::printText(compileAlgorithm(nodesRequest(name, nodes, gpus)).algorithm);
      const std::string oneChannel = ir::printText(
          compileAlgorithm(nodesRequest(name, nodes, gpus, {{"channels", 1}})).algorithm);
      EXPECT_EQ(byDefault, oneChannel) << name << " " << nodes << "x" << gpus;
    }
  }
}

// Every NIC of the k = G build carries the same number of chunks, and every GPU sends.
TEST(HierarchicalChannels, ChannelsEqualToGpusLoadEveryNicEqually) {
  for (const char* name : kInstanced) {
    for (const auto& [nodes, gpus] : {std::tuple{4, 8}, {3, 4}, {2, 3}}) {
      const ir::Algorithm algorithm =
          compileAlgorithm(nodesRequest(name, nodes, gpus, {{"channels", gpus}})).algorithm;
      const std::map<int, long> chunks = interNodeChunksByGpu(algorithm, gpus);
      EXPECT_EQ(static_cast<int>(chunks.size()), gpus) << name << " " << nodes << "x" << gpus;
      std::set<long> shares;
      for (const auto& [gpu, count] : chunks)
        shares.insert(count);
      EXPECT_EQ(shares.size(), 1u) << name << " " << nodes << "x" << gpus << ": unequal rails";
    }
  }
}

// allgather.hierarchical crosses nodes from its leaders only: GPU 0 alone with k = 1, GPUs
// floor(c·G/k) with k instances.
TEST(HierarchicalChannels, AllGatherLeadersAreTheInstancesFirstGpus) {
  auto senders = [](int channels) {
    std::set<int> gpus;
    const ir::Algorithm algorithm =
        compileAlgorithm(nodesRequest("allgather.hierarchical", 4, 8, {{"channels", channels}}))
            .algorithm;
    for (const auto& [gpu, count] : interNodeChunksByGpu(algorithm, 8))
      gpus.insert(gpu);
    return gpus;
  };
  EXPECT_THAT(senders(1), ElementsAre(0));
  EXPECT_THAT(senders(4), ElementsAre(0, 2, 4, 6));
  EXPECT_THAT(senders(16), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
}

// Instance c's phases on channels of their own: allreduce 3c..3c+2 (schedule=1), allgather and
// two-step 2c, 2c+1.
TEST(HierarchicalChannels, EachInstanceHasItsOwnChannels) {
  for (int k : {2, 3}) {
    EXPECT_EQ(
        channelsOf(compileAlgorithm(nodesRequest("allreduce.hierarchical", 2, 3, {{"channels", k}}))
                       .algorithm),
        range(3 * k));
    EXPECT_EQ(channelsOf(compileAlgorithm(nodesRequest("allgather.hierarchical", 3, 4,
                                                       {{"channels", k}, {"forward", 0}}))
                             .algorithm),
              range(2 * k));
    EXPECT_EQ(
        channelsOf(
            compileAlgorithm(nodesRequest("alltoall.two-step", 2, 3, {{"channels", k}})).algorithm),
        range(2 * k));
  }
}

TEST(HierarchicalChannels, ChunkFactorGrowsWithTheInstances) {
  for (const char* name : kInstanced) {
    const int one = compileAlgorithm(nodesRequest(name, 2, 4)).algorithm.chunksPerLoop;
    EXPECT_EQ(compileAlgorithm(nodesRequest(name, 2, 4, {{"channels", 3}})).algorithm.chunksPerLoop,
              3 * one)
        << name;
  }
}

// schedule=0 with channels=k: parallelize(k), the compiler's replicas each on their own
// channels; verified like the manual schedule.
TEST(HierarchicalChannels, CompilerScheduleParallelizesAndVerifies) {
  compiler::CompileOptions options;
  options.verify = true;
  for (const auto& [nodes, gpus] : {std::pair{2, 2}, {3, 2}, {2, 4}}) {
    const ir::Algorithm one =
        compileAlgorithm(nodesRequest("allreduce.hierarchical", nodes, gpus, {{"schedule", 0}}),
                         options)
            .algorithm;
    const ir::Algorithm three = compileAlgorithm(nodesRequest("allreduce.hierarchical", nodes, gpus,
                                                              {{"schedule", 0}, {"channels", 3}}),
                                                 options)
                                    .algorithm;
    EXPECT_EQ(three.chunksPerLoop, 3 * one.chunksPerLoop);
    // Replicas never share a channel (each may need more than the unreplicated program).
    EXPECT_GE(channelsOf(three).size(), 3 * channelsOf(one).size());
  }
}

}  // namespace
}  // namespace chorus::algorithms
