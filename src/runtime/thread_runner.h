// Runs an ir::Algorithm on N ranks that are threads of this process (thread transport) with
// exact, integer-valued inputs, and checks every output element against the collective's
// definition. Used by `chorus run --transport thread` and the runtime tests.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "ir/algorithm.h"
#include "runtime/datatype.h"
#include "transport/thread/thread_group.h"

namespace chorus::runtime {

struct ThreadRunOptions {
  std::size_t count = 0;  // NCCL-style count (see CollectiveArgs)
  DataType type = DataType::float32;
  ReduceOp op = ReduceOp::sum;
  std::chrono::milliseconds timeout{60'000};
  transport::FifoOptions fifo;
  int iterations = 1;  // back-to-back runs on the same buffers (inputs refilled each time)
};

struct ThreadRunReport {
  std::size_t checkedElements = 0;
  std::size_t wrongElements = 0;
  std::string firstWrong;  // "rank 2 output[17]: got 5, expected 6" when wrong
  double seconds = 0;      // wall time of the last iteration (all ranks)
  bool ok() const { return wrongElements == 0; }
};

// Throws what a rank threw (TimeoutError, CommError, ...) after all rank threads have ended.
ThreadRunReport runOnThreads(const ir::Algorithm& algorithm, const ThreadRunOptions& options);

}  // namespace chorus::runtime
