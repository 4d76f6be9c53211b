// Where a group's FIFO memory lies (device layer): every rank owns one region, its mailbox,
// holding the group's abort and first-failure words (rank 0's are the group's) and, for every
// connection it receives on, that connection's flags, acks, counters and slots. Every rank
// derives every mailbox's layout from the plan alone, so ranks exchange only where each
// mailbox is (an address, a shared-memory name, an IPC handle), never offsets. The slots are
// sized for the protocol's largest message, so no call ever regrows them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "device/kernel_plan.h"
#include "device/kernel_types.h"

namespace chorus::device {

struct MailboxLayout {
  static constexpr std::size_t kAbortWord = 0;  // byte offsets in a mailbox's header
  static constexpr std::size_t kFailedRankWord = 8;
  static constexpr std::size_t kHeaderBytes = 128;
  std::uint32_t slots = 0;
  std::size_t slotStride = 0;             // bytes per slot
  std::size_t maxPayload = 0;             // the largest message's payload
  std::vector<std::size_t> mailboxBytes;  // [rank]
  std::vector<std::size_t> controlAt;     // [connection]: in its receiver's mailbox
  std::vector<std::size_t> slotsAt;       // [connection]: in its receiver's mailbox
};

// `slotBytes`: the most payload of a Simple message (LL and LL128 are capped lower).
MailboxLayout layoutMailboxes(const ir::Algorithm& algorithm, const GroupWiring& wiring,
                              std::uint32_t slots, std::size_t slotBytes);

// The two ends of connection `c` given each rank's mailbox base.
KernelFifo sendEndOf(const MailboxLayout& layout, const GroupWiring& wiring,
                     const std::vector<unsigned char*>& mailboxes, int c);
KernelFifo recvEndOf(const MailboxLayout& layout, const GroupWiring& wiring,
                     const std::vector<unsigned char*>& mailboxes, int c);

}  // namespace chorus::device
