// The compiler pipeline: ir::Dag (traced DSL program) -> ir::Algorithm, one pass per file in
// this folder (CONTRIBUTING.md "Style"). compileProgram() is the one entry point.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "ir/algorithm.h"
#include "ir/dag.h"

namespace chorus::compiler {

inline constexpr int kDefaultFifoSlots = 8;  // NCCL_STEPS: outstanding sends per connection

struct CompileOptions {
  int fifoSlots = kDefaultFifoSlots;  // bound on outstanding sends per connection
  // Threadblock choice for local copies/reduces: how many schedule positions one extra
  // cross-threadblock wait is worth (0 = pure load balance as in GC3; larger = fewer waits).
  int waitCost = 4;
  bool verify = true;  // run the verifier on the result (throws CompileError)
  // By name, e.g. "fuse-instructions" (rcs/rrcs/rrs peephole fusion, GC3 §4.2),
  // "prune-waits".
  std::vector<std::string> disabledPasses;
  std::uint64_t minBytes = 0;
  std::uint64_t maxBytes = 0;
};

// Timing and size of one pass run, for `chorus compile --stats` and the benchmark.
struct PassStats {
  std::string name;
  double milliseconds = 0;
  bool skipped = false;
};

struct CompileResult {
  ir::Algorithm algorithm;
  std::vector<PassStats> passes;
  // The collective the algorithm implements, refined by instances and parallelization (what
  // the verify pass checks against).
  std::shared_ptr<const ir::Collective> collective;
};

// Names of all passes in pipeline order (for --disable-pass and docs).
const std::vector<std::string>& passNames();

// Compiles a traced program. Throws CompileError when it cannot be scheduled (e.g. FIFO bound,
// manual threadblock conflicts) or, with options.verify, when the verifier finds a violation.
// Deterministic: the same Dag and options give the same Algorithm.
CompileResult compileProgram(const ir::Dag& dag, const CompileOptions& options = {});
// The same, freeing the Dag as soon as it is replicated (less memory at scale).
CompileResult compileProgram(ir::Dag&& dag, const CompileOptions& options = {});

// The verify pass alone, for an algorithm compiled with options.verify = false (to check it
// later or beside other work) against CompileResult::collective: throws the CompileError the
// pass would have thrown. Reads `algorithm` only; safe beside other readers.
void verifyCompiled(const ir::Algorithm& algorithm,
                    const std::shared_ptr<const ir::Collective>& collective,
                    const CompileOptions& options);

}  // namespace chorus::compiler
