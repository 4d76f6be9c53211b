// The error a failed call of the device interpreter throws (device layer), from the ranks'
// KernelStatus: the root cause (a rank's timeout or size mismatch) before the aborts it caused,
// naming the rank, threadblock, step, tile and what the step waited for.
#pragma once

#include <chrono>
#include <string_view>
#include <vector>

#include "device/kernel_types.h"
#include "ir/algorithm.h"

namespace chorus::device {

// Throws TimeoutError for a timed-out wait, CommError for a message of the wrong size or a
// group aborted from outside (`abortReason`, when not empty). `where`: "the device
// interpreter (host build)", "GPU 0", ...
[[noreturn]] void throwKernelFailure(const ir::Algorithm& algorithm,
                                     const std::vector<KernelStatus>& statuses,
                                     std::chrono::milliseconds timeout, std::string_view where,
                                     std::string_view abortReason = {});

// How one rank's call failed (`status.error` is not none), as the executors of one rank report
// it: CommError "stopped: <stopReason>" when its host stopped the blocks for a failure the
// transport reported, "stopped because rank R failed" for an abort another rank raised
// (`failedRankPlusOne`: the group's first-failure word), else throwKernelFailure.
[[noreturn]] void throwRankFailure(const ir::Algorithm& algorithm, int rank,
                                   const KernelStatus& status, std::uint32_t failedRankPlusOne,
                                   std::chrono::milliseconds timeout, std::string_view where,
                                   std::string_view stopReason);

}  // namespace chorus::device
