// Lesson 1: write a ring AllReduce in the chorus DSL, compile it, verify it, print MSCCL XML.
//
// Run:      build/examples/example_01_ring_allreduce
// Expected: "traced 24 chunk operations, postcondition holds", the per-pass timings, "verified:
//           ok: postcondition, deadlock freedom ..." and the XML of a 4-rank ring whose rank 0
//           runs: send, recvReduceSend x2, recvReduceCopySend, recvCopySend x2, recv.
//
// Data movement for chunk 0 on 4 ranks (GC3 §7.1.1, Figure 3b): a reduce-scatter pass
// around the ring accumulates the sum, an all-gather pass copies it back around.
//
//    reduce-scatter:  r1 --in[0]--> r2 (+=) --> r3 (+=) --> r0 (+=)   r0 holds the sum
//    all-gather:      r0 --sum----> r1 -------> r2 -------> r3         everyone holds it
#include <cstdio>

#include "chorus/lang.h"
#include "compiler/pipeline.h"
#include "ir/msccl_xml.h"
#include "verify/verify.h"

int main() {
  using chorus::lang::Buffer;
  constexpr int kRanks = 4;
  // An in-place AllReduce whose buffer is cut into one chunk per rank.
  chorus::lang::Program program("ring_allreduce", chorus::lang::allReduce(kRanks, kRanks, true));
  for (int chunk = 0; chunk < kRanks; ++chunk) {
    // Reduce-scatter: start at the next rank and add each rank's copy on the way round.
    auto c = program.chunk((chunk + 1) % kRanks, Buffer::input, chunk);
    for (int step = 1; step < kRanks; ++step)
      c = program.chunk((chunk + 1 + step) % kRanks, Buffer::input, chunk).reduce(c);
    // All-gather: the rank that finished the sum copies it round the ring.
    for (int step = 1; step < kRanks; ++step)
      c = c.copy((chunk + step) % kRanks, Buffer::input, chunk);
  }
  const auto violations = program.checkPostcondition();
  std::printf("traced %zu chunk operations, postcondition %s\n", program.dag().ops.size(),
              violations.empty() ? "holds" : "FAILS");
  if (!violations.empty()) return 1;

  const auto result = chorus::compiler::compileProgram(program.dag());
  for (const auto& pass : result.passes)
    std::printf("  %-20s %7.3f ms\n", pass.name.c_str(), pass.milliseconds);
  const auto report = chorus::verify::verifyAlgorithm(result.algorithm);
  std::printf("verified: %s\n", report.describe().c_str());
  std::printf("%s", chorus::ir::writeMscclXml(result.algorithm).c_str());
  return report.ok() ? 0 : 1;
}
