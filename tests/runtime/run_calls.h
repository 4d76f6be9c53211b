// Runs one rank's part of a plan repeatedly inside runRankProcesses, for the failure tests of
// every process transport (tests/runtime/shm_run_test.cpp, tcp_run_test.cpp).
#pragma once

#include <chrono>
#include <cstddef>

#include "ir/algorithm.h"
#include "runtime/interpreter.h"
#include "runtime/process_runner.h"

namespace chorus::testing_support {

// Runs `rank`'s part of `a` on `count` elements `calls` times, each call tagged and published,
// each waiting at most `timeout` on a peer; `byReference`: every message the FIFOs accept goes
// by reference.
inline runtime::RunReport runCalls(const ir::Algorithm& a, int rank,
                                   transport::ConnectionSet& connections, std::size_t count,
                                   int calls, std::chrono::milliseconds timeout,
                                   bool byReference = false) {
  runtime::RunOptions options;
  options.count = count;
  options.timeout = timeout;
  runtime::RankBuffers buffers(a, rank, options);
  for (int call = 0; call < calls; ++call) {
    buffers.reset();
    const auto id = runtime::identifyCall(a, options, call);
    connections.publishCall(id.description);
    runtime::ExecOptions exec;
    exec.timeout = options.timeout;
    exec.callTag = id.tag;
    exec.collectiveLabel = id.description.c_str();
    exec.alwaysByReference = byReference;
    runtime::executeRank(a, rank, {buffers.input(), buffers.output(), count}, connections, exec);
  }
  return {};
}

}  // namespace chorus::testing_support
