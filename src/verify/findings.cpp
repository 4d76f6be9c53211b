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

std::string describeOp(const ir::Threadblock& tb, const ir::Step& step) {
  using ir::OpKind;
  const std::string src = describeRange(step.srcBuffer, step.srcIndex, step.count);
  const std::string dst = describeRange(step.dstBuffer, step.dstIndex, step.count);
  switch (step.op) {
    case OpKind::send:
      return fmt::format("send {} to rank {}", src, tb.sendPeer);
    case OpKind::recv:
      return fmt::format("recv from rank {} into {}", tb.recvPeer, dst);
    case OpKind::recvCopySend:
      return fmt::format("recvCopySend from rank {} into {} and on to rank {}", tb.recvPeer, dst,
                         tb.sendPeer);
    case OpKind::recvReduceCopy:
      return fmt::format("recvReduceCopy from rank {} with {} into {}", tb.recvPeer, src, dst);
    case OpKind::recvReduceSend:
      return fmt::format("recvReduceSend from rank {} with {} on to rank {}", tb.recvPeer, src,
                         tb.sendPeer);
    case OpKind::recvReduceCopySend:
      return fmt::format("recvReduceCopySend from rank {} with {} into {} and on to rank {}",
                         tb.recvPeer, src, dst, tb.sendPeer);
    case OpKind::copy:
      return fmt::format("copy {} to {}", src, dst);
    case OpKind::reduce:
      return fmt::format("reduce {} into {}", src, dst);
    case OpKind::nop:
      return "nop";
  }
  return "?";
}

}  // namespace chorus::verify
