// Runs an ir::Algorithm on N ranks that are threads of this process (a transport whose group is
// made in one process: the thread transport by default) on the executor options.executor names,
// with exact, integer-valued inputs, and checks every output element against the collective's
// definition and, out of place, that no input element changed (run_check.h). Used by
// `chorus run --transport thread` and the runtime tests.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/algorithm.h"
#include "runtime/run_check.h"
#include "transport/thread/thread_group.h"  // the default transport of these runs

namespace chorus::runtime {

using ThreadRunOptions = RunOptions;
using ThreadRunReport = RunReport;

// Throws PlanError before starting when a step names its own peer or channel
// (ir::requireStepEndpoints), OptionError for an unknown transport or executor, or a transport
// whose ranks connect on their own (runOnProcesses runs those); then what a rank threw
// (TimeoutError, CommError, ...) after all rank threads have ended.
// `outputs`, when given, receives each rank's output buffer (outputElements() elements) as
// the last iteration left it.
ThreadRunReport runOnThreads(const ir::Algorithm& algorithm, const ThreadRunOptions& options,
                             std::vector<std::vector<std::uint8_t>>* outputs = nullptr);

}  // namespace chorus::runtime
