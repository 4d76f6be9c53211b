// Every registry algorithm traces and meets its collective's postcondition over a sweep of
// shapes, compiles with verification on a sample of them, and the registry rejects bad
// requests with helpful OptionErrors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "algorithm_test_util.h"
#include "algorithms/registry.h"
#include "chorus/lang.h"
#include "support/error.h"

namespace chorus::algorithms {
namespace {

using testing_support::nodesRequest;
using testing_support::ranksRequest;

using ::testing::HasSubstr;

struct ShapeCase {
  std::string algorithm;
  int ranks = 0;
  int nodes = 0;
  int gpus = 0;
  std::map<std::string, int> params = {};  // non-default settings
};

std::string caseName(const ShapeCase& c) {
  std::string name = c.algorithm + "_" +
                     (c.ranks != 0 ? std::to_string(c.ranks) + "r"
                                   : std::to_string(c.nodes) + "x" + std::to_string(c.gpus));
  for (const auto& [key, value] : c.params)
    name += "_" + key + "_" + std::to_string(value);
  for (char& ch : name) {
    if (ch == '.' || ch == '-') ch = '_';
  }
  return name;
}

void PrintTo(const ShapeCase& c, std::ostream* os) {
  *os << caseName(c);
}

BuildRequest requestFor(const ShapeCase& c) {
  BuildRequest request;
  request.algorithm = c.algorithm;
  request.ranks = c.ranks;
  request.nodes = c.nodes;
  request.gpusPerNode = c.gpus;
  request.params = c.params;
  return request;
}

// The default settings, then each other named value of a parameter: a named value may select
// another collective (alltonext direction=backward), so each is swept like an algorithm.
std::vector<std::map<std::string, int>> settingsOf(const AlgorithmInfo& info) {
  std::vector<std::map<std::string, int>> settings(1);
  for (const ParamInfo& param : info.params)
    for (std::size_t i = 0; i < param.valueNames.size(); ++i)
      if (param.minValue + static_cast<int>(i) != param.defaultValue)
        settings.push_back({{param.name, param.minValue + static_cast<int>(i)}});
  return settings;
}

bool takesChannels(const AlgorithmInfo& info) {
  return std::any_of(info.params.begin(), info.params.end(),
                     [](const ParamInfo& param) { return param.name == "channels"; });
}

// An algorithm with `channels` over a node shape: N x G for N = 2..4 (rings: a ranks-shaped
// algorithm that also takes a node shape) or 1..4 (node-shaped), G = 1..8, with channels 2 and
// G (rail rings: one ring per channel; hierarchical and two-step: one instance per channel).
void addChannelCases(const AlgorithmInfo& info, const std::map<std::string, int>& params,
                     std::vector<ShapeCase>& cases) {
  for (int nodes = info.shape == Shape::ranks ? 2 : 1; nodes <= 4; ++nodes) {
    for (int gpus = 1; gpus <= 8; ++gpus) {
      for (int channels : std::set<int>{2, std::max(2, gpus)}) {
        std::map<std::string, int> withChannels = params;
        withChannels["channels"] = channels;
        if (nodes * gpus >= 2) cases.push_back({info.name, 0, nodes, gpus, withChannels});
      }
    }
  }
}

// All rank counts 2..16 and all N x G up to 4 x 8 (at least 2 ranks), for every setting; the
// algorithms with `channels` also over N x G with several channels (addChannelCases).
std::vector<ShapeCase> traceCases() {
  std::vector<ShapeCase> cases;
  for (const AlgorithmInfo& info : listAlgorithms()) {
    for (const auto& params : settingsOf(info)) {
      if (info.shape == Shape::ranks) {
        for (int ranks = 2; ranks <= 16; ++ranks)
          cases.push_back({info.name, ranks, 0, 0, params});
        if (info.alsoByNodes && takesChannels(info)) addChannelCases(info, params, cases);
      } else {
        for (int nodes = 1; nodes <= 4; ++nodes) {
          for (int gpus = 1; gpus <= 8; ++gpus) {
            if (nodes * gpus >= 2) cases.push_back({info.name, 0, nodes, gpus, params});
          }
        }
        if (takesChannels(info)) addChannelCases(info, params, cases);
      }
    }
  }
  return cases;
}

// Compiled with verification: the same shapes as traceCases() (the acceptance set).
std::vector<ShapeCase> compileCases() {
  return traceCases();
}

class AlgorithmTraceTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(AlgorithmTraceTest, SatisfiesPostcondition) {
  std::unique_ptr<lang::Program> program = buildProgram(requestFor(GetParam()));
  ASSERT_NE(program, nullptr);
  EXPECT_FALSE(program->dag().ops.empty());
  const std::vector<lang::Violation> violations = program->checkPostcondition();
  for (const lang::Violation& violation : violations)
    ADD_FAILURE() << violation.describe();
}

INSTANTIATE_TEST_SUITE_P(Registry, AlgorithmTraceTest, ::testing::ValuesIn(traceCases()),
                         [](const auto& info) { return caseName(info.param); });

class AlgorithmCompileTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(AlgorithmCompileTest, CompilesAndVerifies) {
  compiler::CompileOptions options;
  options.verify = true;
  const compiler::CompileResult result = compileAlgorithm(requestFor(GetParam()), options);
  const ShapeCase& c = GetParam();
  EXPECT_EQ(result.algorithm.nranks, c.ranks != 0 ? c.ranks : c.nodes * c.gpus);
  EXPECT_EQ(static_cast<int>(result.algorithm.ranks.size()), result.algorithm.nranks);
}

INSTANTIATE_TEST_SUITE_P(Registry, AlgorithmCompileTest, ::testing::ValuesIn(compileCases()),
                         [](const auto& info) { return caseName(info.param); });

// The binomial trees at every rank count 2..16 and every root: traced postcondition and the
// compiler's verifier (the registry sweep above only covers the default root 0).
TEST(TreeAlgorithmTest, EveryRootCompilesAndVerifies) {
  for (const char* name : {"broadcast.binomial", "reduce.binomial"}) {
    for (int ranks = 2; ranks <= 16; ++ranks) {
      for (int root = 0; root < ranks; ++root) {
        BuildRequest request = ranksRequest(name, ranks);
        request.params["root"] = root;
        const compiler::CompileResult result = compileAlgorithm(request);
        EXPECT_EQ(result.algorithm.root, root) << name << " " << ranks;
      }
    }
  }
}

// log2(R) rounds: R-1 cross-rank messages, and the root sends (broadcast) or receives
// (reduce) exactly ceil(log2 R) of them.
TEST(TreeAlgorithmTest, BinomialTreeHasLogDepthAtTheRoot) {
  for (const char* name : {"broadcast.binomial", "reduce.binomial"}) {
    BuildRequest request = ranksRequest(name, 6);
    request.params["root"] = 4;
    auto program = buildProgram(request);
    int messages = 0;
    int atRoot = 0;
    for (const ir::DagOp& op : program->dag().ops) {
      if (op.src.rank == op.dst.rank) continue;
      ++messages;
      if (op.src.rank == 4 || op.dst.rank == 4) ++atRoot;
    }
    EXPECT_EQ(messages, 5) << name;
    EXPECT_EQ(atRoot, 3) << name;
  }
}

TEST(TreeAlgorithmTest, RootOutsideTheRanksNamesTheRange) {
  BuildRequest request = ranksRequest("broadcast.binomial", 4);
  request.params["root"] = 4;
  try {
    buildProgram(request);
    FAIL() << "expected OptionError";
  } catch (const OptionError& error) {
    EXPECT_THAT(error.what(), HasSubstr("root 4 is not a rank of 0..3"));
  }
}

TEST(AlgorithmCompileOptionsTest, InstancesAndChannelsStillVerify) {
  BuildRequest request = ranksRequest("allreduce.ring", 4);
  request.params["channels"] = 2;
  request.instances = 2;
  request.protocol = ir::Protocol::ll128;
  const compiler::CompileResult result = compileAlgorithm(request);
  EXPECT_EQ(result.algorithm.protocol, ir::Protocol::ll128);
  EXPECT_GE(ir::channelCount(result.algorithm), 2);
}

TEST(RegistryTest, ListsAllAlgorithmsSortedWithCompleteInfo) {
  std::vector<std::string> names;
  for (const AlgorithmInfo& info : listAlgorithms()) {
    names.push_back(info.name);
    EXPECT_FALSE(info.collective.empty()) << info.name;
    EXPECT_FALSE(info.description.empty()) << info.name;
    EXPECT_THAT(info.citation,
                ::testing::ContainsRegex("GC3|xCCL notes|MVAPICH all-to-all|P²|MXNet trees"))
        << info.name;
    EXPECT_NE(info.build, nullptr) << info.name;
    for (const ParamInfo& param : info.params) {
      EXPECT_LE(param.minValue, param.defaultValue) << info.name << " " << param.name;
      EXPECT_LE(param.defaultValue, param.maxValue) << info.name << " " << param.name;
    }
  }
  // Every algorithm issue 4 asks for (seeds 000, 001, 002), sorted by name.
  EXPECT_THAT(names, ::testing::ElementsAre(
                         "allgather.bruck", "allgather.direct", "allgather.hierarchical",
                         "allgather.recursive-doubling", "allgather.ring", "allreduce.2d",
                         "allreduce.allpairs", "allreduce.binomial", "allreduce.double-binary-tree",
                         "allreduce.hierarchical", "allreduce.oneshot", "allreduce.rabenseifner",
                         "allreduce.recursive-doubling", "allreduce.ring", "alltoall.bruck",
                         "alltoall.direct", "alltoall.eager", "alltoall.hierarchical",
                         "alltoall.pairwise", "alltoall.scatter-destination", "alltoall.three-step",
                         "alltoall.two-step", "alltonext", "broadcast.binomial", "broadcast.chain",
                         "broadcast.scatter-allgather", "reduce.binomial", "reduce.rabenseifner",
                         "reducescatter.direct", "reducescatter.pairwise",
                         "reducescatter.recursive-doubling", "reducescatter.recursive-halving",
                         "reducescatter.ring"));
}

TEST(RegistryTest, UnknownAlgorithmNamesClosestMatchAndKnownNames) {
  try {
    findAlgorithm("allreduce.rign");
    FAIL() << "expected OptionError";
  } catch (const OptionError& error) {
    EXPECT_THAT(error.what(), HasSubstr("did you mean 'allreduce.ring'"));
    EXPECT_THAT(error.what(), HasSubstr("alltoall.two-step"));
  }
}

TEST(RegistryTest, RejectsUnknownParameterWithSuggestion) {
  BuildRequest request = ranksRequest("allreduce.ring", 4);
  request.params["chanels"] = 2;
  try {
    buildProgram(request);
    FAIL() << "expected OptionError";
  } catch (const OptionError& error) {
    EXPECT_THAT(error.what(), HasSubstr("unknown parameter 'chanels'"));
    EXPECT_THAT(error.what(), HasSubstr("did you mean 'channels'"));
  }
}

TEST(RegistryTest, RejectsOutOfRangeParameter) {
  BuildRequest request = nodesRequest("allreduce.hierarchical", 2, 2);
  request.params["schedule"] = 7;
  EXPECT_THROW(buildProgram(request), OptionError);
  try {
    buildProgram(request);
  } catch (const OptionError& error) {
    EXPECT_THAT(error.what(), HasSubstr("0..1"));
  }
}

TEST(RegistryTest, RejectsMissingOrWrongShape) {
  EXPECT_THROW(buildProgram(ranksRequest("allreduce.ring", 0)), OptionError);
  // A ranks-only algorithm refuses a node shape (the rings take one: rail_rings_test.cpp).
  EXPECT_THROW(buildProgram(nodesRequest("allreduce.allpairs", 2, 2)), OptionError);
  EXPECT_THROW(buildProgram(ranksRequest("allreduce.hierarchical", 4)), OptionError);
  EXPECT_THROW(buildProgram(nodesRequest("alltonext", 2, 0)), OptionError);
  try {
    buildProgram(ranksRequest("allreduce.hierarchical", 4));
  } catch (const OptionError& error) {
    EXPECT_THAT(error.what(), HasSubstr("--nodes N --gpus-per-node G"));
  }
}

TEST(RegistryTest, RejectsImpossibleShapes) {
  EXPECT_THROW(buildProgram(ranksRequest("allreduce.ring", 1)), OptionError);
  EXPECT_THROW(buildProgram(ranksRequest("allreduce.allpairs", -3)), OptionError);
  EXPECT_THROW(buildProgram(nodesRequest("alltoall.two-step", 1, 1)), OptionError);
  EXPECT_THROW(buildProgram(nodesRequest("alltonext", 0, 4)), OptionError);
  BuildRequest noInstances = ranksRequest("allreduce.ring", 4);
  noInstances.instances = 0;
  EXPECT_THROW(buildProgram(noInstances), OptionError);
}

TEST(RegistryTest, ParsesParamAssignments) {
  EXPECT_EQ(parseParamAssignment("channels=4"), (std::pair<std::string, int>{"channels", 4}));
  EXPECT_THROW(parseParamAssignment("channels"), OptionError);
  EXPECT_THROW(parseParamAssignment("=3"), OptionError);
  EXPECT_THROW(parseParamAssignment("channels=two"), OptionError);
  EXPECT_THROW(parseParamAssignment("channels=2x"), OptionError);
}

TEST(RegistryTest, ParsesNamedParamValues) {
  const AlgorithmInfo& info = findAlgorithm("alltonext");
  EXPECT_EQ(parseParamAssignment("direction=backward", info),
            (std::pair<std::string, int>{"direction", 1}));
  EXPECT_EQ(parseParamAssignment("direction=forward", info),
            (std::pair<std::string, int>{"direction", 0}));
  EXPECT_EQ(parseParamAssignment("direction=1", info),
            (std::pair<std::string, int>{"direction", 1}));
  // Unknown keys pass through for resolveRequest to name.
  EXPECT_EQ(parseParamAssignment("channels=2", info), (std::pair<std::string, int>{"channels", 2}));
  try {
    parseParamAssignment("direction=sideways", info);
    FAIL() << "expected OptionError";
  } catch (const OptionError& error) {
    EXPECT_THAT(error.what(), HasSubstr("--set direction=sideways: not a value of alltonext's "
                                        "direction; use forward|backward"));
  }
  BuildRequest request = nodesRequest("alltonext", 2, 2);
  request.params["direction"] = 2;
  try {
    buildProgram(request);
    FAIL() << "expected OptionError";
  } catch (const OptionError& error) {
    EXPECT_THAT(error.what(), HasSubstr("use forward|backward"));
  }
  EXPECT_EQ(info.params.at(0).spell(1), "backward");
  EXPECT_EQ(info.params.at(0).spell(7), "7");
}

std::set<int> channelsUsed(const lang::Program& program) {
  std::set<int> channels;
  for (const ir::DagOp& op : program.dag().ops)
    channels.insert(op.channel);
  return channels;
}

TEST(AlgorithmShapeTest, RingChannelsSpreadChunksOverChannels) {
  BuildRequest request = ranksRequest("allreduce.ring", 4);
  EXPECT_EQ(channelsUsed(*buildProgram(request)), (std::set<int>{-1}));
  request.params["channels"] = 2;
  EXPECT_EQ(channelsUsed(*buildProgram(request)), (std::set<int>{0, 1}));
}

TEST(AlgorithmShapeTest, HierarchicalManualScheduleUsesThreeChannels) {
  BuildRequest request = nodesRequest("allreduce.hierarchical", 2, 3);
  EXPECT_EQ(channelsUsed(*buildProgram(request)), (std::set<int>{0, 1, 2}));
  request.params["schedule"] = 0;
  EXPECT_EQ(channelsUsed(*buildProgram(request)), (std::set<int>{-1}));
}

TEST(AlgorithmShapeTest, AllPairsUsesRSquaredChunks) {
  auto program = buildProgram(ranksRequest("allreduce.allpairs", 8));
  EXPECT_EQ(program->collective().chunksPerLoop(), 64);
  EXPECT_TRUE(program->collective().inPlace());
}

TEST(AlgorithmShapeTest, TwoStepAggregatesOneTransferPerRemoteNode) {
  auto program = buildProgram(nodesRequest("alltoall.two-step", 2, 4));
  int aggregated = 0;
  for (const ir::DagOp& op : program->dag().ops) {
    if (op.count == 4) {
      ++aggregated;
      EXPECT_EQ(op.src.buffer, ir::BufferKind::scratch);
      EXPECT_EQ(op.dst.buffer, ir::BufferKind::output);
      EXPECT_NE(op.src.rank / 4, op.dst.rank / 4);
    } else {
      EXPECT_EQ(op.count, 1);
      EXPECT_EQ(op.src.rank / 4, op.dst.rank / 4) << "single chunks stay inside a node";
    }
  }
  EXPECT_EQ(aggregated, 8);  // each of 8 ranks sends one aggregate to the other node
}

TEST(AlgorithmShapeTest, AllToNextSpreadsNodeBoundaryOverAllGpus) {
  auto program = buildProgram(nodesRequest("alltonext", 2, 4));
  std::set<std::pair<int, int>> crossNode;
  for (const ir::DagOp& op : program->dag().ops) {
    if (op.src.rank / 4 != op.dst.rank / 4) crossNode.insert({op.src.rank, op.dst.rank});
  }
  EXPECT_EQ(crossNode, (std::set<std::pair<int, int>>{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(program->collective().name(), "alltonext");
  EXPECT_EQ(program->collective().chunkFactor(), 4);
}

TEST(AlgorithmShapeTest, AllToNextBackwardSpreadsNodeBoundaryOverAllGpus) {
  BuildRequest request = nodesRequest("alltonext", 3, 4);
  request.params["direction"] = 1;
  auto program = buildProgram(request);
  std::set<std::pair<int, int>> crossNode;
  for (const ir::DagOp& op : program->dag().ops) {
    if (op.src.rank / 4 != op.dst.rank / 4) crossNode.insert({op.src.rank, op.dst.rank});
  }
  // Node 1 -> node 0 and node 2 -> node 1, one transfer per GPU pair.
  EXPECT_EQ(crossNode, (std::set<std::pair<int, int>>{
                           {4, 0}, {5, 1}, {6, 2}, {7, 3}, {8, 4}, {9, 5}, {10, 6}, {11, 7}}));
  EXPECT_EQ(program->collective().name(), "alltonext-backward");
  EXPECT_EQ(program->collective().chunkFactor(), 4);
  const compiler::CompileResult result = compileAlgorithm(request);
  EXPECT_EQ(result.algorithm.customName, "alltonext-backward");
  EXPECT_EQ(result.algorithm.name, "alltonext");
}

// compileTraced compiles while a second thread checks the postcondition: a program that misses
// it is reported as such, not by the verify pass that also rejects it; a correct one compiles.
TEST(CompileTraced, PostconditionErrorComesFirst) {
  auto wrong = std::make_unique<lang::Program>("half_sum", lang::allReduce(2, 1, false));
  wrong->chunk(0, lang::Buffer::input, 0).copy(0, lang::Buffer::output, 0);
  wrong->chunk(1, lang::Buffer::input, 0).copy(1, lang::Buffer::output, 0);
  try {
    compileTraced(std::move(wrong), "half_sum");
    FAIL() << "compiled a program that misses its postcondition";
  } catch (const CompileError& error) {
    EXPECT_THAT(error.what(), HasSubstr("half_sum does not implement allreduce: 2 output chunk"));
  }
  auto right = std::make_unique<lang::Program>("sum", lang::allReduce(2, 1, false));
  right->chunk(0, lang::Buffer::input, 0).copy(0, lang::Buffer::output, 0);
  right->chunk(0, lang::Buffer::output, 0)
      .reduce(right->chunk(1, lang::Buffer::input, 0))
      .copy(1, lang::Buffer::output, 0);
  EXPECT_EQ(compileTraced(std::move(right), "sum").algorithm.nranks, 2);
}

}  // namespace
}  // namespace chorus::algorithms
