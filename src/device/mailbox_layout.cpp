#include "device/mailbox_layout.h"

#include "ir/tiling.h"

namespace chorus::device {

namespace {

std::size_t roundTo128(std::size_t bytes) {
  return (bytes + 127) / 128 * 128;
}

// A connection's control words: ready[slots], sizes[slots], ack, sent and received counters.
std::size_t controlBytes(std::uint32_t slots) {
  return roundTo128((2 * static_cast<std::size_t>(slots) + 3) * sizeof(std::uint64_t));
}

}  // namespace

MailboxLayout layoutMailboxes(const ir::Algorithm& algorithm, const GroupWiring& wiring,
                              std::uint32_t slots, std::size_t slotBytes) {
  MailboxLayout layout;
  layout.slots = slots;
  layout.maxPayload = ir::messageBytes(algorithm.protocol, slotBytes);
  layout.slotStride = slotWireBytes(algorithm.protocol, layout.maxPayload);
  layout.mailboxBytes.assign(algorithm.ranks.size(), MailboxLayout::kHeaderBytes);
  layout.controlAt.resize(static_cast<std::size_t>(wiring.connections));
  layout.slotsAt.resize(static_cast<std::size_t>(wiring.connections));
  for (int c = 0; c < wiring.connections; ++c) {
    std::size_t& end =
        layout
            .mailboxBytes[static_cast<std::size_t>(wiring.receiverOf[static_cast<std::size_t>(c)])];
    layout.controlAt[static_cast<std::size_t>(c)] = end;
    end += controlBytes(slots);
    layout.slotsAt[static_cast<std::size_t>(c)] = end;
    end += slots * layout.slotStride;
  }
  return layout;
}

namespace {

KernelFifo fifoOf(const MailboxLayout& layout, const GroupWiring& wiring,
                  const std::vector<unsigned char*>& mailboxes, int c, bool sender) {
  unsigned char* box =
      mailboxes[static_cast<std::size_t>(wiring.receiverOf[static_cast<std::size_t>(c)])];
  auto* words =
      reinterpret_cast<std::uint64_t*>(box + layout.controlAt[static_cast<std::size_t>(c)]);
  const std::uint32_t slots = layout.slots;
  return {box + layout.slotsAt[static_cast<std::size_t>(c)], words, words + slots,
          words + 2 * slots, words + 2 * slots + (sender ? 1 : 2)};
}

}  // namespace

KernelFifo sendEndOf(const MailboxLayout& layout, const GroupWiring& wiring,
                     const std::vector<unsigned char*>& mailboxes, int c) {
  return fifoOf(layout, wiring, mailboxes, c, true);
}

KernelFifo recvEndOf(const MailboxLayout& layout, const GroupWiring& wiring,
                     const std::vector<unsigned char*>& mailboxes, int c) {
  return fifoOf(layout, wiring, mailboxes, c, false);
}

}  // namespace chorus::device
