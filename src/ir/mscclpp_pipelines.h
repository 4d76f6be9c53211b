// When reading an MSCCL++ `pipeline` op's body once, over whole chunks, computes what MSCCL++'s
// executor computes by running it unit by unit (ir stage; used by ir/mscclpp_plan.cpp).
//
// MSCCL++ (execution_plan.cc:592-598, execution_kernel.hpp handlePipeline, at 1f5f065) runs a
// pipeline's body ceil(num_chunks * chunk bytes / unit_size) times; iteration i runs every data
// op over bytes [i*unit, (i+1)*unit) of each of its operands, and every sync op once more. That
// is the body run once per slice of the operands. chorus reads the body once, which is the same
// computation per element when (checked here):
//   - every data operand of a body spans num_chunks chunks (else MSCCL++ moves too little, or
//     past the operand's end: its sizes go below zero);
//   - any two pipeline operands on the same memory coincide or are disjoint, so slice i of one
//     is slice i of the other;
//   - on every channel and semaphore some pipeline signals or waits on, one threadblock
//     signals (releases) and one waits (acquires), and their ops fall into the same segments:
//     as many outside pipelines, then as many per iteration in a pipeline of the same iteration
//     count, and so on. Then the k-th signal of an iteration meets the k-th wait of that
//     iteration, as the body read once pairs them. A counter used on one side only is left to
//     the verifier: its waits starve (or its tokens are left over) however the loop runs.
// Ops outside pipelines see a pipeline finished or not started, as in the body read once.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/algorithm.h"

namespace chorus::ir::mscclpp_reader {

// One `pipeline` op of the plan.
struct PipelineLoop {
  std::string path;  // its JSON path, "plan.gpus[0].threadblocks[1].ops[5]"
  long long unitBytes = 0;
  int numChunks = 0;
  // The chunk count MSCCL++ sizes a chunk by on this loop's rank (input_chunks, else
  // output_chunks): loops with equal (unitBytes, numChunks, chunkBasis) run as many iterations.
  int chunkBasis = 0;
  int scale = 1;  // the reader's chunk scale: operands span numChunks * scale chunks
};

// Where a step of the plan came from: the loop whose body holds it (an index into the loops)
// and its op's position in that body, or loop -1 for a step outside every pipeline.
struct PipelineTag {
  int loop = -1;
  int op = -1;
};
// Per rank, per threadblock, per step.
using PipelineTags = std::vector<std::vector<std::vector<PipelineTag>>>;

struct PipelineProblem {
  std::string path;     // the JSON path to name
  std::string message;  // what is wrong and what to change
};

// The first rule above that `algorithm` (read with every pipeline's body once) breaks, or none.
std::optional<PipelineProblem> findPipelineProblem(const Algorithm& algorithm,
                                                   const std::vector<PipelineLoop>& loops,
                                                   const PipelineTags& tags);

}  // namespace chorus::ir::mscclpp_reader
