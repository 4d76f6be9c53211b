// Error types for chorus (public): user mistakes throw typed UserError subclasses; chorus's own
// bugs fail CHORUS_INTERNAL_ASSERT. Every layer and the public API use these (CONTRIBUTING.md
// "Errors").
#pragma once

#include <source_location>
#include <stdexcept>
#include <string>

namespace chorus {

// Base of every error caused by user input (programs, files, options). The message names what
// was wrong and how to fix it.
class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message) : std::runtime_error(message) {}
};

// A DSL program broke a trace-time rule (uninitialized read, stale reference, bad range...).
// The message starts with the user's source location.
class ProgramError : public UserError {
 public:
  ProgramError(const std::string& message, const std::source_location& where);
  // For language bindings: `location` ("file.py:12") names the user's call; where() is then
  // the binding's own location.
  ProgramError(const std::string& message, const std::string& location,
               const std::source_location& where = std::source_location::current());
  const std::source_location& where() const { return where_; }

 private:
  std::source_location where_;
};

// A file or text could not be parsed (XML, JSON, text IR); names the file, line and element.
class ParseError : public UserError {
 public:
  using UserError::UserError;
};

// An IR is well formed but cannot be emitted in a target format (e.g. MSCCL runtime limits).
class FormatLimitError : public UserError {
 public:
  using UserError::UserError;
};

// Bad option values or names (unknown algorithm, parameter out of range, bad size string).
class OptionError : public UserError {
 public:
  using UserError::UserError;
};

// A compiler pass found the program cannot be scheduled under the given constraints.
class CompileError : public UserError {
 public:
  using UserError::UserError;
};

// A wait passed its deadline (CHORUS_TIMEOUT); names what was awaited and from whom.
class TimeoutError : public UserError {
 public:
  using UserError::UserError;
};

// Communication failed: a peer died or was aborted, calls did not match across ranks, a
// transport could not be set up (e.g. /dev/shm full). Names the collective, sequence number
// and peer where known.
class CommError : public UserError {
 public:
  using UserError::UserError;
};

// An IR cannot be simulated: it deadlocks with the simulated FIFOs or a connection has no
// matching threadblock on the peer. Names the blocked ranks, threadblocks and steps.
class SimulationError : public UserError {
 public:
  using UserError::UserError;
};

// A plan (ir::Algorithm) cannot be run or simulated as written: it breaks the IR's rules and
// reached a stage that does not verify it first (e.g. `chorus run FILE`: a two-sided step that
// names its own peer or channel), or it uses an op that stage does not run (a one-sided op).
// Names the rank, threadblock and step, and the fix.
class PlanError : public UserError {
 public:
  using UserError::UserError;
};

// Thrown by CHORUS_INTERNAL_ASSERT: a bug in chorus itself, never caused by user input.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void failInternalAssert(const char* condition, const std::string& message,
                                     const std::source_location& where);

}  // namespace chorus

#define CHORUS_INTERNAL_ASSERT(cond, msg)                                                     \
  do {                                                                                        \
    if (!(cond)) ::chorus::failInternalAssert(#cond, (msg), std::source_location::current()); \
  } while (0)
