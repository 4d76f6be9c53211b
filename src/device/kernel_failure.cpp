#include "device/kernel_failure.h"

#include <fmt/format.h>

#include "support/error.h"

namespace chorus::device {

namespace {

std::string waitText(const ir::Threadblock& tb, WaitKind kind) {
  switch (kind) {
    case WaitKind::message:
      return fmt::format("a message from rank {} on channel {}", tb.recvPeer, tb.channel);
    case WaitKind::freeSlot:
      return fmt::format("rank {} to free a slot on channel {}", tb.sendPeer, tb.channel);
    case WaitKind::dependency:
      break;
  }
  return "a step of another threadblock it depends on";
}

}  // namespace

void throwKernelFailure(const ir::Algorithm& algorithm, const std::vector<KernelStatus>& statuses,
                        std::chrono::milliseconds timeout, std::string_view where,
                        std::string_view abortReason) {
  for (std::size_t r = 0; r < statuses.size() && r < algorithm.ranks.size(); ++r) {
    const KernelStatus& s = statuses[r];
    if (s.error == KernelError::none || s.error == KernelError::aborted) continue;
    const auto& blocks = algorithm.ranks[r].threadblocks;
    if (s.block < 0 || static_cast<std::size_t>(s.block) >= blocks.size()) continue;
    const ir::Threadblock& tb = blocks[static_cast<std::size_t>(s.block)];
    if (s.step < 0 || static_cast<std::size_t>(s.step) >= tb.steps.size()) continue;
    const ir::Step& step = tb.steps[static_cast<std::size_t>(s.step)];
    const std::string at =
        fmt::format("'{}' on {}: rank {} threadblock {} step {} ({}) tile {}", algorithm.name,
                    where, r, s.block, s.step, ir::opName(step.op), s.tile);
    if (s.error == KernelError::timedOut)
      throw TimeoutError(fmt::format(
          "{} waited over {} ms for {}; the plan may deadlock (chorus verify checks it) or a "
          "peer is stalled (raise the timeout, CHORUS_TIMEOUT, if it is only slow)",
          at, timeout.count(), waitText(tb, static_cast<WaitKind>(s.waitingFor))));
    throw CommError(fmt::format(
        "{} received a message of {} bytes from rank {} where it expects {}: the ranks run "
        "different calls (count or datatype)",
        at, s.arrived, tb.recvPeer, s.expected));
  }
  if (!abortReason.empty())
    throw CommError(fmt::format("'{}' on {} was aborted: {}", algorithm.name, where, abortReason));
  throw CommError(fmt::format("'{}' on {} was aborted", algorithm.name, where));
}

void throwRankFailure(const ir::Algorithm& algorithm, int rank, const KernelStatus& status,
                      std::uint32_t failedRankPlusOne, std::chrono::milliseconds timeout,
                      std::string_view where, std::string_view stopReason) {
  if (status.error == KernelError::aborted) {
    if (!stopReason.empty())
      throw CommError(
          fmt::format("'{}' on {}: rank {} stopped: {}", algorithm.name, where, rank, stopReason));
    throw CommError(failedRankPlusOne == 0
                        ? fmt::format("'{}' on {}: rank {} stopped: the group was aborted",
                                      algorithm.name, where, rank)
                        : fmt::format("'{}' on {}: rank {} stopped because rank {} failed",
                                      algorithm.name, where, rank, failedRankPlusOne - 1));
  }
  std::vector<KernelStatus> statuses(static_cast<std::size_t>(algorithm.nranks));
  statuses.at(static_cast<std::size_t>(rank)) = status;
  throwKernelFailure(algorithm, statuses, timeout, where);
}

}  // namespace chorus::device
