// Runs an ir::Algorithm on N ranks that are forked processes of this one, joined through a
// FileStore in a fresh temporary directory and a transport of the registry whose ranks connect
// on their own (shm by default; tcp over loopback), with the exact-result check of
// run_check.h. Used by `chorus run --transport shm|tcp` and the multi-process tests; the process
// machinery underneath (runRankProcesses) also serves fault-injection tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/algorithm.h"
#include "runtime/run_check.h"
#include "transport/connections.h"
#include "transport/fifo.h"

namespace chorus::runtime {

// RunOptions::transport names how the forked ranks reach each other: shared memory by default,
// or tcp over loopback (the same sockets, frames and progress thread as ranks on different
// hosts).
using ProcessRunOptions = RunOptions;
using ProcessRunReport = RunReport;

// Forks one process per rank; each joins the group (options.transport), runs its program
// on the executor options.executor names `options.iterations` times with a call tag and
// published description per call, and checks
// its outputs (and, out of place, its unchanged inputs). Merges the ranks' reports (seconds:
// the slowest rank's last iteration). Throws the root-cause error of a failed rank as the same
// type (OptionError, TimeoutError, CommError, ...) with that rank's message; a rank process that
// dies is a CommError naming it and one still running after (iterations + 1) x timeout + 10 s is
// killed and reported as a TimeoutError. A step that names its own peer or channel is a PlanError
// (ir::requireStepEndpoints), and an unknown transport or executor, or a transport that makes
// its ranks in one process (thread), an OptionError, before anything is forked. The calling
// process may have threads, but the children only run this call.
ProcessRunReport runOnProcesses(const ir::Algorithm& algorithm, const ProcessRunOptions& options);

// ---- the process machinery ----------------------------------------------------------------

enum class RankErrorKind { none, option, parse, compile, timeout, comm, internal, plan, other };

// How one rank process ended.
struct RankOutcome {
  RunReport report;
  RankErrorKind errorKind = RankErrorKind::none;
  std::string error;      // the rank's exception message, or how its process ended
  bool reported = false;  // false: the process died or hung before reporting
  bool ok() const { return errorKind == RankErrorKind::none; }
};

struct RankProcessOptions {
  int nranks = 0;
  // A registered transport whose ranks connect on their own (transport/registry.h); empty: the
  // one for processes on one host (shm).
  std::string transport;
  transport::FifoOptions fifo;
  std::chrono::milliseconds timeout{60'000};    // the group's set-up (connectShm, connectTcp)
  std::chrono::milliseconds waitLimit{70'000};  // then the parent kills what is still running
};

// The body of a rank process, run in the child with the rank's connections. What it throws is
// reported to the parent (and aborts the group so the other ranks stop).
using RankMain = std::function<RunReport(int rank, transport::ConnectionSet& connections)>;

// Forks options.nranks children. Each creates a FileStore in a fresh temporary directory,
// connects through the transport's rank factory (a prefix unique to the run names the shm
// segments or is the tcp group id; tcp ranks listen on loopback), runs `rankMain`, leaves the
// group and sends its
// outcome through a pipe, then ends with _exit (it never returns into the caller). The parent
// waits for all of them (up to options.waitLimit, then SIGKILL), removes the directory and any
// /dev/shm names left behind, and returns the outcomes indexed by rank. Throws OptionError for a
// transport as runOnProcesses does, and CommError if the processes cannot be started.
std::vector<RankOutcome> runRankProcesses(const RankProcessOptions& options,
                                          const RankMain& rankMain);

// The ranks' reports as one: counts summed, the first wrong element, the slowest rank's time.
RunReport mergeRankReports(const std::vector<RankOutcome>& outcomes);

// A name prefix unique to one run ("chorus-run-<pid>-<random>"), for its /dev/shm names.
std::string uniqueRunPrefix();

// Unlinks every /dev/shm name that starts with `prefix` + "-" when it goes out of scope: what
// ranks that were killed could not remove.
class ShmNameSweeper {
 public:
  explicit ShmNameSweeper(std::string prefix) : prefix_(std::move(prefix) + "-") {}
  ShmNameSweeper(const ShmNameSweeper&) = delete;
  ShmNameSweeper& operator=(const ShmNameSweeper&) = delete;
  ~ShmNameSweeper();

 private:
  std::string prefix_;
};

// Returns if every rank succeeded; otherwise throws the root cause: a rank's own error (not a
// CommError), else a rank process that died, else the first CommError; in rank order.
void throwFirstFailure(const std::vector<RankOutcome>& outcomes);

}  // namespace chorus::runtime
