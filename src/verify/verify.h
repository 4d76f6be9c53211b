// The verifier: checks any ir::Algorithm (compiled or read from a file) for (1) the
// collective's postcondition by symbolic execution, (2) cross-rank deadlocks under blocking
// send/recv with bounded FIFOs and cross-threadblock waits, (3) data races between
// threadblocks of one rank, (4) out-of-place plans writing the caller's input buffer, plus
// structural errors (bad peers, ranges, unmatched sends).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/algorithm.h"
#include "ir/collective.h"

namespace chorus::verify {

enum class FindingKind {
  malformed,      // structure: out-of-range index, bad peer, unmatched send/recv, bad dep
  uninitialized,  // a step reads a chunk that holds no value
  postcondition,  // an output chunk is wrong, missing or double-counted
  deadlock,       // threadblocks wait on each other in a cycle
  race,           // two unordered accesses to one chunk, at least one a write
  writesInput,    // an out-of-place plan writes its input (the caller's const send buffer)
};

struct Finding {
  FindingKind kind = FindingKind::malformed;
  int rank = -1;  // -1 when not tied to one rank
  int tb = -1;
  int step = -1;
  std::string message;  // complete sentence naming rank, buffer, chunk, tb, step and a hint
};

struct VerifyOptions {
  int fifoSlots = 8;   // slots per connection (outstanding sends before a send blocks)
  int iterations = 2;  // tiles simulated back to back (the runtime runs the program per tile)
  bool checkPostcondition = true;
  bool checkDeadlock = true;
  bool checkRaces = true;
  bool checkWritesInput = true;  // out-of-place plans must leave the input buffer unchanged
  // Collective to check against; default: ir::collectiveOf(algorithm).
  std::shared_ptr<const ir::Collective> collective;
  std::size_t maxFindings = 20;  // stop collecting after this many
};

struct VerifyReport {
  std::vector<Finding> findings;
  bool postconditionChecked = false;  // false for custom collectives chorus does not know
  // What was checked, for describe(): set by verifyAlgorithm.
  bool deadlockChecked = false;
  bool racesChecked = false;
  bool oneSided = false;  // checked in the one-sided model (verify/check_one_sided.h)
  int nranks = 0;
  int fifoSlots = 0;
  int iterations = 0;
  std::string postconditionSkipped;  // why the postcondition was not checked ("" if it was)
  bool truncated = false;            // more findings existed than maxFindings allowed
  bool ok() const { return findings.empty(); }
  // One line per finding, or "ok" with what was checked.
  std::string describe() const;
};

// Never throws on a bad algorithm: every problem becomes a Finding.
VerifyReport verifyAlgorithm(const ir::Algorithm& algorithm, const VerifyOptions& options = {});

std::string_view findingKindName(FindingKind kind);

}  // namespace chorus::verify
