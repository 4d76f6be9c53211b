// Lesson 2: a custom collective (AllToNext, GC3 §7.4) and what the verifier says about a
// wrong program.
//
// Run:      build/examples/example_02_custom_collective
// Expected: the correct program prints "verified: ok: ...", the broken one (the last hop is
//           missing) prints a postcondition finding naming "rank 3 output[0]" and the example
//           exits 0 because the finding was expected.
//
//    AllToNext on 4 ranks: rank i's input ends in rank i+1's output; the last rank sends nothing.
//      r0 --in--> r1.out     r1 --in--> r2.out     r2 --in--> r3.out
#include <cstdio>

#include "chorus/lang.h"
#include "compiler/pipeline.h"
#include "verify/verify.h"

namespace {

chorus::ir::Algorithm compileAllToNext(int ranks, bool dropLastHop) {
  using chorus::lang::Buffer;
  chorus::lang::Program program("alltonext", chorus::lang::allToNext(ranks, 1));
  for (int r = 0; r + 1 < ranks; ++r) {
    if (dropLastHop && r + 2 == ranks) continue;
    program.chunk(r, Buffer::input, 0).copy(r + 1, Buffer::output, 0);
  }
  chorus::compiler::CompileOptions options;
  options.verify = false;  // let the example show the verifier's report itself
  return chorus::compiler::compileProgram(program.dag(), options).algorithm;
}

}  // namespace

int main() {
  const auto good = chorus::verify::verifyAlgorithm(compileAllToNext(4, false));
  std::printf("correct program: verified: %s\n", good.describe().c_str());
  const auto bad = chorus::verify::verifyAlgorithm(compileAllToNext(4, true));
  std::printf("broken program:\n%s\n", bad.describe().c_str());
  return good.ok() && !bad.ok() ? 0 : 1;
}
