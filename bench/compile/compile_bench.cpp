// Compile + verify time of library algorithms at scale, and chorus's all-pairs AllReduce next to
// the reference compiler's output for the same algorithm.
//
// Run: build/bench/bench_compile [--repeat N] [--json FILE]
// Prints one row per shape: median wall time of trace, compile (all passes, verifier excluded)
// and verify over N runs, plus the size of the result.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "algorithms/registry.h"
#include "compiler/pipeline.h"
#include "ir/msccl_xml.h"
#include "verify/verify.h"

namespace {

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Shape {
  std::string label;
  chorus::algorithms::BuildRequest request;
};

struct Row {
  std::string label;
  double trace = 0, compile = 0, verify = 0;
  std::size_t steps = 0, xmlSteps = 0, nops = 0, threadblocks = 0, deps = 0;
};

// XML steps and nops as MSCCL counts them (each dependency beyond the first is a nop).
std::pair<std::size_t, std::size_t> xmlStepsAndNops(const chorus::ir::Algorithm& a) {
  std::size_t steps = 0, nops = 0;
  for (const auto& r : a.ranks)
    for (const auto& tb : r.threadblocks)
      for (const auto& s : tb.steps) {
        const std::size_t extra = s.deps.size() > 1 ? s.deps.size() - 1 : 0;
        nops += extra + (s.op == chorus::ir::OpKind::nop ? 1 : 0);
        steps += 1 + extra;
      }
  return {steps, nops};
}

Row measure(const Shape& shape, int repeat) {
  Row row;
  row.label = shape.label;
  std::vector<double> trace, compile, verify;
  for (int i = 0; i < repeat; ++i) {
    auto t0 = Clock::now();
    auto program = chorus::algorithms::buildProgram(shape.request);
    trace.push_back(secondsSince(t0));
    chorus::compiler::CompileOptions options;
    options.verify = false;
    auto t1 = Clock::now();
    auto result = chorus::compiler::compileProgram(program->dag(), options);
    compile.push_back(secondsSince(t1));
    auto t2 = Clock::now();
    const auto report = chorus::verify::verifyAlgorithm(result.algorithm);
    verify.push_back(secondsSince(t2));
    if (!report.ok()) {
      std::fprintf(stderr, "%s failed verification:\n%s\n", shape.label.c_str(),
                   report.describe().c_str());
      std::exit(1);
    }
    row.steps = chorus::ir::stepCount(result.algorithm);
    row.threadblocks = chorus::ir::threadblockCount(result.algorithm);
    row.deps = chorus::ir::dependencyCount(result.algorithm);
    std::tie(row.xmlSteps, row.nops) = xmlStepsAndNops(result.algorithm);
  }
  row.trace = median(trace);
  row.compile = median(compile);
  row.verify = median(verify);
  return row;
}

Shape ranksShape(const char* algorithm, int ranks) {
  Shape s;
  s.label = fmt::format("{} --ranks {}", algorithm, ranks);
  s.request.algorithm = algorithm;
  s.request.ranks = ranks;
  return s;
}
Shape nodesShape(const char* algorithm, int nodes, int gpus) {
  Shape s;
  s.label = fmt::format("{} --nodes {} --gpus-per-node {}", algorithm, nodes, gpus);
  s.request.algorithm = algorithm;
  s.request.nodes = nodes;
  s.request.gpusPerNode = gpus;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 5;
  std::string json;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc)
      repeat = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--json") && i + 1 < argc)
      json = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_compile [--repeat N] [--json FILE]\n");
      return 2;
    }
  }
  const std::vector<Shape> shapes = {
      ranksShape("allreduce.ring", 8),
      ranksShape("allreduce.ring", 64),
      ranksShape("allreduce.ring", 128),
      ranksShape("allreduce.ring", 256),
      nodesShape("alltoall.two-step", 16, 8),
      ranksShape("allreduce.allpairs", 8),
      nodesShape("allreduce.hierarchical", 4, 8),
  };
  std::printf("%-46s %9s %9s %9s %9s %8s %6s %7s %6s\n", "algorithm", "trace s", "compile s",
              "verify s", "total s", "steps", "tbs", "waits", "nops");
  std::vector<Row> rows;
  for (const auto& shape : shapes) {
    const Row row = measure(shape, repeat);
    rows.push_back(row);
    std::printf("%-46s %9.3f %9.3f %9.3f %9.3f %8zu %6zu %7zu %6zu\n", row.label.c_str(), row.trace,
                row.compile, row.verify, row.trace + row.compile + row.verify, row.steps,
                row.threadblocks, row.deps, row.nops);
  }

  // The reference compiler's all-pairs AllReduce at 8 ranks, same algorithm.
  const std::string reference = std::string(CHORUS_SHARED_DIR) +
                                "/interop/msccl-xml/valid/allreduce_allpairs_8r_1inst_LL.xml";
  const auto ref = chorus::ir::readMscclXmlFile(reference)[0];
  const auto [refXmlSteps, refNops] = xmlStepsAndNops(ref);
  const Row& ours = rows[5];
  std::printf("\nall-pairs AllReduce, 8 ranks (MSCCL XML steps, nops count as steps):\n");
  std::printf("  %-28s %8s %6s %6s %7s\n", "", "steps", "nops", "tbs", "waits");
  std::printf("  %-28s %8zu %6zu %6zu %7zu\n", "msccl-tools (reference)", refXmlSteps, refNops,
              chorus::ir::threadblockCount(ref), chorus::ir::dependencyCount(ref));
  std::printf("  %-28s %8zu %6zu %6zu %7zu\n", "chorus", ours.xmlSteps, ours.nops,
              ours.threadblocks, ours.deps);

  if (!json.empty()) {
    std::ofstream out(json);
    out << "[\n";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      out << fmt::format(
          "  {{\"algorithm\": \"{}\", \"trace_s\": {:.4f}, \"compile_s\": {:.4f}, "
          "\"verify_s\": {:.4f}, \"steps\": {}, \"threadblocks\": {}, \"waits\": {}, "
          "\"nops\": {}}}{}\n",
          r.label, r.trace, r.compile, r.verify, r.steps, r.threadblocks, r.deps, r.nops,
          i + 1 < rows.size() ? "," : "");
    }
    out << "]\n";
  }
  return 0;
}
