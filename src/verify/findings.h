// Finding collection and the wording shared by every verifier check: how steps, chunk ranges
// and connections are named in messages (verify stage).
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "ir/algorithm.h"
#include "verify/verify.h"

namespace chorus::verify {

// Collects findings up to a cap; checks poll full() to stop early.
class FindingSink {
 public:
  explicit FindingSink(std::size_t maxFindings);
  void add(FindingKind kind, int rank, int tb, int step, std::string message);
  bool full() const { return findings_.size() >= maxFindings_; }
  bool truncated() const { return truncated_; }
  void markTruncated() { truncated_ = true; }
  bool has(FindingKind kind) const;
  std::size_t size() const { return findings_.size(); }
  std::vector<Finding> take() { return std::move(findings_); }

 private:
  std::size_t maxFindings_;
  bool truncated_ = false;
  std::vector<Finding> findings_;
};

// "input[3]" for one chunk, "input[3..5)" for a range.
std::string describeRange(ir::BufferKind buffer, int index, int count);
// "rank 0 tb 1 step 3".
std::string describeStepRef(int rank, int tb, int step);
// What the step does, for messages: "recv from rank 1 into output[2]", "send input[0] to rank 1",
// "recvReduceCopySend from rank 3 to rank 1 (input[2])", "copy input[0] to output[0]", "nop".
std::string describeOp(const ir::Threadblock& tb, const ir::Step& step);

}  // namespace chorus::verify
