// Sweeps over the algorithm library for the executors' tests: a case (algorithm, shape,
// non-default parameters), each named value of an algorithm's parameters, a case's test name,
// and the device interpreter's sweep shared by its host build's tests (tests/device) and the
// GPU's (tests/gpu): every library algorithm at 2 to 8 ranks (node-shaped ones at every N x G
// from 2 to 8 ranks) with each named parameter value. Also the exact-run options they use, the
// checks every executor's runner passes (the reference MSCCL files, every type and operator)
// and a plan that deadlocks.
#pragma once

#include <algorithm>
#include <cctype>
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/registry.h"
#include "ir/msccl_xml.h"
#include "runtime/run_check.h"
#include "runtime/valid_msccl_files.h"
#include "verify/ir_builders.h"

namespace chorus::testing_support {

struct LibrarySweepCase {
  std::string algorithm;
  int ranks = 0, nodes = 0, gpus = 0;
  std::map<std::string, int> params = {};
};

inline std::vector<std::map<std::string, int>> namedSettings(
    const algorithms::AlgorithmInfo& info) {
  std::vector<std::map<std::string, int>> settings(1);
  for (const algorithms::ParamInfo& param : info.params)
    for (std::size_t i = 0; i < param.valueNames.size(); ++i)
      if (param.minValue + static_cast<int>(i) != param.defaultValue)
        settings.push_back({{param.name, param.minValue + static_cast<int>(i)}});
  return settings;
}

inline std::vector<LibrarySweepCase> deviceSweepCases() {
  std::vector<LibrarySweepCase> cases;
  for (const algorithms::AlgorithmInfo& info : algorithms::listAlgorithms())
    for (const auto& params : namedSettings(info)) {
      if (info.shape == algorithms::Shape::ranks) {
        for (int ranks = std::max(2, info.minRanks); ranks <= 8; ++ranks)
          cases.push_back({info.name, ranks, 0, 0, params});
      } else {
        for (int nodes = 1; nodes <= 4; ++nodes)
          for (int gpus = 1; gpus <= 4; ++gpus)
            if (nodes * gpus >= std::max(2, info.minRanks) && nodes * gpus <= 8)
              cases.push_back({info.name, 0, nodes, gpus, params});
      }
    }
  return cases;
}

inline std::string libraryCaseName(const LibrarySweepCase& c) {
  std::string name = c.algorithm + "_" +
                     (c.ranks != 0 ? std::to_string(c.ranks) + "r"
                                   : std::to_string(c.nodes) + "x" + std::to_string(c.gpus));
  for (const auto& [key, value] : c.params)
    name += "_" + key + "_" + std::to_string(value);
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

inline bool takesParam(const algorithms::AlgorithmInfo& info, const std::string& name) {
  return std::any_of(info.params.begin(), info.params.end(),
                     [&](const algorithms::ParamInfo& param) { return param.name == name; });
}

// A library algorithm by name and rank count, on `protocol`.
inline ir::Algorithm compileOnProtocol(const std::string& name, int ranks, ir::Protocol protocol) {
  algorithms::BuildRequest request;
  request.algorithm = name;
  request.ranks = ranks;
  request.protocol = protocol;
  return algorithms::compileAlgorithm(request).algorithm;
}

inline ir::Algorithm compileSweepCase(const LibrarySweepCase& c, ir::Protocol protocol) {
  algorithms::BuildRequest request;
  request.algorithm = c.algorithm;
  request.ranks = c.ranks;
  request.nodes = c.nodes;
  request.gpusPerNode = c.gpus;
  request.params = c.params;
  request.protocol = protocol;
  return algorithms::compileAlgorithm(request).algorithm;
}

// Exact inputs (run_check.h), `count` elements, a 60 s timeout.
inline runtime::RunOptions exactRun(std::size_t count,
                                    runtime::DataType type = runtime::DataType::int32,
                                    ReduceOp op = ReduceOp::sum) {
  runtime::RunOptions options;
  options.count = count;
  options.type = type;
  options.op = op;
  options.timeout = std::chrono::milliseconds(60'000);
  return options;
}

// An executor's exact run of a plan (runOnThreads, device::runKernelsOnHost, ...).
using ExactRunner =
    std::function<runtime::RunReport(const ir::Algorithm&, const runtime::RunOptions&)>;

// Every plan of the reference MSCCL XML files (valid_msccl_files.h) runs exactly on `run`.
inline void expectReferenceFilesExact(const ExactRunner& run, std::size_t count) {
  for (const std::string& file : validFiles())
    for (const ir::Algorithm& algorithm : ir::readMscclXmlFile(file)) {
      const runtime::RunReport report = run(algorithm, exactRun(count));
      EXPECT_TRUE(report.ok()) << file << ": " << report.firstWrong;
    }
}

// A ring AllReduce of `ranks` on every protocol runs exactly on `run` with every type and
// operator.
inline void expectEveryTypeAndOperatorExact(const ExactRunner& run, int ranks, std::size_t count) {
  for (ir::Protocol protocol : {ir::Protocol::simple, ir::Protocol::ll, ir::Protocol::ll128}) {
    const ir::Algorithm algorithm = compileOnProtocol("allreduce.ring", ranks, protocol);
    for (runtime::DataType type : runtime::allDataTypes())
      for (ReduceOp op : runtime::allReduceOps()) {
        const runtime::RunReport report = run(algorithm, exactRun(count, type, op));
        EXPECT_TRUE(report.ok()) << ir::protocolName(protocol) << " " << runtime::dataTypeName(type)
                                 << " " << runtime::reduceOpName(op) << ": " << report.firstWrong;
      }
  }
}

// Two ranks that both receive first: every block waits for a message that never comes.
inline ir::Algorithm deadlockingPlan() {
  using ir::BufferKind;
  using ir::OpKind;
  ir::Algorithm a =
      verify::testing::makeAlgorithm("deadlock", ir::CollectiveKind::allreduce, 2, 1, true);
  for (int r = 0; r < 2; ++r) {
    a.ranks[static_cast<std::size_t>(r)].inputChunks = 1;
    ir::Threadblock tb = verify::testing::makeTb(0, 1 - r, 1 - r);
    tb.steps.push_back(
        verify::testing::makeStep(OpKind::recv, BufferKind::input, 0, BufferKind::input, 0));
    tb.steps.push_back(
        verify::testing::makeStep(OpKind::send, BufferKind::input, 0, BufferKind::input, 0));
    a.ranks[static_cast<std::size_t>(r)].threadblocks = {tb};
  }
  return a;
}

}  // namespace chorus::testing_support
