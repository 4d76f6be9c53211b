// Exact-result runs shared by the thread and process runners: the options and report of a run,
// each rank's buffers filled with small integers that every datatype holds exactly (so any
// reduction order gives identical bits), the check of a rank's outputs against the
// collective's definition and of its (out-of-place) inputs against their values before the
// call, and the identity (tag + description) of a run's calls.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "ir/algorithm.h"
#include "runtime/datatype.h"
#include "runtime/executor.h"
#include "runtime/stream_copy.h"
#include "transport/fifo.h"

namespace chorus::runtime {

struct RunOptions {
  std::size_t count = 0;  // NCCL-style count (see CollectiveArgs)
  DataType type = DataType::float32;
  ReduceOp op = ReduceOp::sum;
  std::chrono::milliseconds timeout{60'000};  // per call
  transport::FifoOptions fifo;
  // The transport's registered name (transport/registry.h); empty: the runner's default, the
  // thread transport for runOnThreads and shm for runOnProcesses.
  std::string transport;
  std::string executor{kDefaultExecutor};  // the executor's name (executor.h)
  std::size_t streamingWorkingSetBytes =
      defaultStreamingWorkingSetBytes();  // ExecutorConfig's (0: never)
  bool alwaysByReference = false;         // ExecutorConfig's (tests)
  int iterations = 1;  // back-to-back runs on the same buffers (inputs refilled each time)
  // Caller-given inputs instead of the generated exact values: one pointer per rank to
  // inputElements(algorithm, rank, count) elements of `type` (chorus.run in Python). Floating
  // outputs are then compared within `relativeTolerance` of the reduction in postcondition
  // order (the plan may reduce in another order); integers and copies stay exact.
  std::vector<const void*> givenInputs;
  double relativeTolerance = 0;
};

struct RunReport {
  std::size_t checkedElements = 0;  // output elements, plus input elements when out-of-place
  std::size_t wrongElements = 0;    // wrong outputs plus changed inputs
  // "rank 2 output[17]: got 5, expected 6" or "rank 1 input[0]: changed from 3 to 5 (...)"
  std::string firstWrong;
  double seconds = 0;  // wall time of the last iteration (all ranks)
  bool ok() const { return wrongElements == 0; }
};

// One rank's user buffers for `options.count`, aliased the way an in-place collective
// prescribes (the aliased buffer is the window of blocks at the canonical chunk index).
class RankBuffers {
 public:
  // `algorithm` must outlive the buffers.
  RankBuffers(const ir::Algorithm& algorithm, int rank, const RunOptions& options);
  // Zeroes the buffers and writes the rank's input values: the exact generated ones, or
  // options.givenInputs[rank] (checkRankInput's reference).
  void reset();
  const void* input() const { return input_; }
  void* output() const { return output_; }

  // The buffers as one run of bytes (the input's storage, then the output's), to mirror them
  // in memory peers map (one-sided runs on processes): its size, where input() and output()
  // lie in it, and copies to and from such a mirror.
  std::size_t mirrorBytes() const { return in_.size() + out_.size(); }
  std::size_t inputOffsetInMirror() const { return offsetInMirror(input_); }
  std::size_t outputOffsetInMirror() const { return offsetInMirror(output_); }
  void copyToMirror(std::uint8_t* mirror) const;
  void copyFromMirror(const std::uint8_t* mirror);

 private:
  std::size_t offsetInMirror(const std::uint8_t* at) const;

  const ir::Algorithm& algorithm_;
  const int rank_;
  const RunOptions options_;
  std::vector<std::uint8_t> in_, out_;  // one may be unused when aliased into the other
  std::uint8_t* input_ = nullptr;
  std::uint8_t* output_ = nullptr;
};

// Checks every output element of `rank` against the collective's postcondition computed from
// the same exact inputs, adding to report->checkedElements / wrongElements and setting
// report->firstWrong at the first wrong element if none was recorded yet.
void checkRankOutput(const ir::Algorithm& algorithm, int rank, const RunOptions& options,
                     const void* output, RunReport* report);

// For an out-of-place collective, checks every element of `rank`'s input (RankBuffers::input())
// still holds the value RankBuffers::reset() wrote: the caller's send buffer is const. Changed
// elements count as wrong, with report->firstWrong naming the first if none was recorded yet.
// Does nothing for in-place collectives, whose input is the output.
void checkRankInput(const ir::Algorithm& algorithm, int rank, const RunOptions& options,
                    const void* input, RunReport* report);

// The end of a thread-rank run: checks every rank's output and (out of place) input into
// `report`, and copies each rank's output buffer into `outputs` when given.
void checkThreadRanks(const ir::Algorithm& algorithm, const RunOptions& options,
                      const std::vector<std::unique_ptr<RankBuffers>>& buffers, RunReport* report,
                      std::vector<std::vector<std::uint8_t>>* outputs);

// Rethrows the root cause among `errors` (null entries ignored): the first that is not a
// CommError (those are failures caused elsewhere), else the first. Returns if there is none.
void rethrowRootCause(const std::vector<std::exception_ptr>& errors);

// What ranks exchange so a peer running a different call is detected (ExecOptions::callTag,
// a hash of the description) and named (ConnectionSet::publishCall).
struct CallIdentity {
  std::string description;  // "allreduce 'ring' #3 (count 1024 float32 sum)"
  std::uint64_t tag = 0;
};

// The identity of call number `sequence` of a run of `algorithm` with `options`' count, type
// and operator.
CallIdentity identifyCall(const ir::Algorithm& algorithm, const RunOptions& options, int sequence);

}  // namespace chorus::runtime
