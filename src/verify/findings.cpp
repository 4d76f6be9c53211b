#include "verify/findings.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace chorus::verify {

FindingSink::FindingSink(std::size_t maxFindings)
    : maxFindings_(std::max<std::size_t>(1, maxFindings)) {}

void FindingSink::add(FindingKind kind, int rank, int tb, int step, std::string message) {
  if (full()) {
    truncated_ = true;
    return;
  }
  findings_.push_back(Finding{kind, rank, tb, step, std::move(message)});
}

bool FindingSink::has(FindingKind kind) const {
  return std::any_of(findings_.begin(), findings_.end(),
                     [kind](const Finding& f) { return f.kind == kind; });
}

std::string describeRange(ir::BufferKind buffer, int index, int count) {
  if (count == 1) return fmt::format("{}[{}]", ir::bufferName(buffer), index);
  return fmt::format("{}[{}..{})", ir::bufferName(buffer), index, index + count);
}

std::string describeStepRef(int rank, int tb, int step) {
  return fmt::format("rank {} tb {} step {}", rank, tb, step);
}

// Algorithm, from the op's row: its name; the source it copies or sends ("send input[0]");
// the peer it receives from ("from rank 2"); the local operand of a reduction ("with
// input[0]" for received ⊕ src, "input[0]" for dst ⊕ src); where it stores ("to" a copy, "into"
// otherwise); the peer it sends to ("and on to", "on to" after a receive, else "to").
namespace {

// One-sided ops name their peer, channel, barrier or semaphore on the step itself.
// "input[0..2)", or "packets of scratch[1]" for an LL packet operand.
std::string describeOperand(ir::BufferKind buffer, int index, int count, bool packets) {
  return (packets ? "packets of " : "") + describeRange(buffer, index, count);
}

std::string describeOneSidedOp(const ir::Step& step) {
  const std::string src =
      describeOperand(step.srcBuffer, step.srcIndex, step.count, step.srcPackets);
  const std::string dst =
      describeOperand(step.dstBuffer, step.dstIndex, step.count, step.dstPackets);
  const std::string channel =
      step.channel >= 0 ? fmt::format(" on channel {}", step.channel) : std::string();
  switch (step.op) {
    case ir::OpKind::put:
      return fmt::format("put {} to rank {}'s {}{}", src, step.peer, dst, channel);
    case ir::OpKind::get:
    case ir::OpKind::getReduce:
      return fmt::format("{} rank {}'s {} into {}", ir::opName(step.op), step.peer, src, dst);
    case ir::OpKind::signal:
    case ir::OpKind::relaxedSignal:
    case ir::OpKind::flush:
      return fmt::format("{} to rank {}{}", ir::opName(step.op), step.peer, channel);
    case ir::OpKind::wait:
    case ir::OpKind::relaxedWait:
      return fmt::format("{} for rank {}{}", ir::opName(step.op), step.peer, channel);
    case ir::OpKind::barrier:
      return fmt::format("barrier {} ({} threadblocks)", step.channel, step.count);
    case ir::OpKind::copy:
      return fmt::format("copy {} to {}", src, dst);
    case ir::OpKind::reduce:
      return fmt::format("reduce {} into {}", src, dst);
    default:
      return fmt::format("{} semaphore {}", ir::opName(step.op), step.channel);
  }
}

}  // namespace

std::string describeOp(const ir::Threadblock& tb, const ir::Step& step) {
  if (ir::opIsOneSided(step.op) || step.srcPackets || step.dstPackets)
    return describeOneSidedOp(step);
  const ir::OpSemantics& row = ir::opSemantics(step.op);
  const std::string src = describeRange(step.srcBuffer, step.srcIndex, step.count);
  const std::string dst = describeRange(step.dstBuffer, step.dstIndex, step.count);
  std::string out(row.name);
  if (row.value == ir::StepValue::src || row.value == ir::StepValue::dstOpSrc) out += " " + src;
  if (ir::valueReceives(row.value)) out += fmt::format(" from rank {}", tb.recvPeer);
  if (row.value == ir::StepValue::receivedOpSrc) out += " with " + src;
  if (row.storesDst) out += (row.value == ir::StepValue::src ? " to " : " into ") + dst;
  if (row.sends)
    out += fmt::format(" {} rank {}",
                       row.storesDst                  ? "and on to"
                       : ir::valueReceives(row.value) ? "on to"
                                                      : "to",
                       tb.sendPeer);
  return out;
}

}  // namespace chorus::verify
