// The algorithm library's registry: every built-in algorithm as a named, parameterized entry
// (collective, shape, typed integer parameters) with a builder that traces it into a
// lang::Program, plus the one-call build + check + compile used by `chorus compile`.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chorus/lang.h"
#include "compiler/pipeline.h"
#include "ir/algorithm.h"

namespace chorus::algorithms {

// How an algorithm's size is given on the command line.
enum class Shape {
  ranks,  // --ranks N
  nodes,  // --nodes N --gpus-per-node G (ranks = N*G, rank = node*G + gpu)
};

std::string_view shapeName(Shape shape);  // "ranks" or "nodes x gpus"

// One typed integer parameter of an algorithm (set with `--set name=value`).
struct ParamInfo {
  std::string name;
  int defaultValue = 0;
  int minValue = 0;
  int maxValue = 0;
  std::string description;
  // Optional names of the values minValue..maxValue in order (direction: forward, backward):
  // `--set` then takes a name or its number, and listings print the name.
  std::vector<std::string> valueNames = {};
  // The value's name when it has one, else its number.
  std::string spell(int value) const;
};

// Everything a caller may choose. Unset shape fields are 0.
struct BuildRequest {
  std::string algorithm;                   // registry name, e.g. "allreduce.ring"
  int ranks = 0;                           // Shape::ranks
  int nodes = 0;                           // Shape::nodes
  int gpusPerNode = 0;                     // Shape::nodes
  std::map<std::string, int> params = {};  // overrides of the declared parameters
  int instances = 1;                       // program-wide replication (lang::ProgramOptions)
  ir::Protocol protocol = ir::Protocol::simple;
};

// A validated request as a builder sees it: the shape is consistent with the algorithm and
// every declared parameter has a value in range.
struct BuildArgs {
  int ranks = 0;        // always set (N*G for Shape::nodes)
  int nodes = 1;        // 1 when sized by --ranks
  int gpusPerNode = 0;  // == ranks when sized by --ranks
  std::map<std::string, int> params;
  lang::ProgramOptions programOptions;
  // The value of a declared parameter (internal error if the name was not declared).
  int param(std::string_view name) const;
};

using Builder = std::unique_ptr<lang::Program> (*)(const std::string& name, const BuildArgs& args);

struct AlgorithmInfo {
  std::string name;  // "allreduce.ring"
  // "allreduce", ..., or a custom collective's name ("alltonext"); for alltonext the default
  // one: direction=backward builds the "alltonext-backward" collective.
  std::string collective;
  std::string description;  // one line
  std::string citation;     // seed file and section
  Shape shape = Shape::ranks;
  // A Shape::ranks algorithm that also takes --nodes N --gpus-per-node G (ranks = N*G,
  // rank = node*G + gpu) and may then lay itself out per node (rail rings); --ranks N builds
  // exactly what it builds without this flag.
  bool alsoByNodes = false;
  int minRanks = 2;  // smallest total number of ranks the algorithm supports
  std::vector<ParamInfo> params;
  Builder build = nullptr;
  // Documentation, in the notation of docs/algorithms.md (p ranks, N nodes x G GPUs, n bytes of
  // the largest per-rank buffer, α latency, β seconds per byte, γ reduction seconds per byte).
  // `chorus algorithms --markdown` turns these into the table of docs/algorithms.md.
  std::string steps;      // communication rounds on the critical path, e.g. "2(p−1)"
  std::string bytesSent;  // bytes each rank sends, e.g. "2(p−1)/p · n"
  std::string cost;       // α-β-γ time, e.g. "2(p−1)α + 2(p−1)/p · nβ + (p−1)/p · nγ"
  std::string winsWhen;   // when it is the best choice, e.g. "large buffers, any p"
};

// All built-in algorithms, sorted by name. Thread-safe (built once).
const std::vector<AlgorithmInfo>& listAlgorithms();

// The entry named `name`. Throws OptionError listing the known names and the closest match.
const AlgorithmInfo& findAlgorithm(std::string_view name);

// Parses one `--set` argument "key=value" (value a decimal integer). Throws OptionError.
std::pair<std::string, int> parseParamAssignment(std::string_view text);
// The same for an argument of algorithm `info`: the value may also be one of the parameter's
// valueNames ("direction=backward"). Unknown keys pass through (resolveRequest names them).
std::pair<std::string, int> parseParamAssignment(std::string_view text, const AlgorithmInfo& info);

// Checks the request against the algorithm (shape, parameter names and ranges, instances) and
// fills in defaults. Throws OptionError with a fix on any mistake.
BuildArgs resolveRequest(const BuildRequest& request);

// Validates the request and traces the algorithm. Throws OptionError for bad requests and
// ProgramError if the builder breaks a DSL rule (a chorus bug for built-in algorithms).
std::unique_ptr<lang::Program> buildProgram(const BuildRequest& request);

// Throws CompileError listing (up to 10 of) the traced program's postcondition violations.
void requirePostcondition(const lang::Program& program, std::string_view algorithm);

// buildProgram, then compileTraced: compiler::compileProgram on the program's DAG beside the
// traced postcondition check.
// Compiles a traced program while a second thread checks its postcondition (CompileError
// listing the violations, thrown in preference to any compile error) and frees it.
compiler::CompileResult compileTraced(std::unique_ptr<lang::Program> program,
                                      std::string_view algorithm,
                                      const compiler::CompileOptions& options = {});
compiler::CompileResult compileAlgorithm(const BuildRequest& request,
                                         const compiler::CompileOptions& options = {});

}  // namespace chorus::algorithms
