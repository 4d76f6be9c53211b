// MSCCL XML reader and writer for ir::Algorithm: the interchange format of msccl-tools and the
// MSCCL runtimes (docs/ir.md; docs/sources.md "MSCCL XML and runtime"). Reading folds `nop` steps
// into dependencies; writing expands extra dependencies back into `nop` steps and checks the
// runtime's limits.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/algorithm.h"

namespace chorus::ir {

struct MscclWriteOptions {
  // true: coll="reduce_scatter" for the old runtime (microsoft/msccl); false: the executor's
  // names ("reducescatter"). A custom collective is always written as coll="custom".
  bool legacyNames = false;
  // MSCCL_MAX_NUM_STEPS of the target runtime (64 for the executor as built by default, 256
  // for the old runtime); counts the `nop` steps the writer inserts. The CLI's
  // --msccl-max-steps. Must be at least 1.
  int maxStepsPerThreadblock = 64;
  // Validate the runtime limits (docs/sources.md "MSCCL XML and runtime") and throw
  // FormatLimitError.
  bool checkLimits = true;
};

// Parses every top-level <algo> element of `text` (a file may hold several, not wrapped in a
// single root). `sourceName` prefixes error messages. Throws ParseError naming the source, the
// element (<gpu id=..> <tb id=..> <step s=..>), the attribute and the line.
// The result is canonical: no nops, deps sorted and deduplicated, hasDependents set on every
// step another threadblock waits for.
std::vector<Algorithm> readMscclXml(std::string_view text, const std::string& sourceName);

// Reads and parses a file; throws ParseError naming the path when it cannot be read.
std::vector<Algorithm> readMscclXmlFile(const std::string& path);

// Deterministic XML in msccl-tools' layout (2-space indentation, reference attribute order).
// Each dependency beyond a step's first becomes a preceding `nop` step, the exact inverse of the
// reader. Throws FormatLimitError (naming rank, threadblock, step and the limit) when
// options.checkLimits and the algorithm exceeds a runtime limit, and always when a step sets
// Step::peer or Step::channel (MSCCL XML has no per-step peer; the reader never sets them).
// Thread-safe.
std::string writeMscclXml(const Algorithm& algorithm, const MscclWriteOptions& options = {});

// Several algorithms in one file: the <algo> elements concatenated.
std::string writeMscclXml(const std::vector<Algorithm>& algorithms,
                          const MscclWriteOptions& options = {});

}  // namespace chorus::ir
