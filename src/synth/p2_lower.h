// Lowering of a synthesized P² reduction program (p2_program.h) to ONE chorus DSL program
// (lang::Program): every step's group collectives become ring / chain chunk operations in a
// single trace, so the compiler can pipeline across phases (seed 003 §4 lowers to a sequence
// of library calls instead). The third stage of `chorus synth reduction`.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "chorus/lang.h"
#include "synth/link_matrix.h"
#include "synth/p2_program.h"

namespace chorus::synth {

// The collective a reduction over `groups` implements, in place: output chunk k of device d is
// the sum of input chunk k over d's group. One group of every device is lang::allReduce;
// otherwise ir::makeGroupReduction (named "group-reduction:<groups>", so its MSCCL XML is
// checked by `chorus run`). Throws chorus::OptionError unless the groups partition
// 0..nranks-1.
std::shared_ptr<const ir::Collective> makeGroupReduction(int nranks, int chunkFactor,
                                                         std::vector<std::vector<int>> groups);

struct LowerOptions {
  std::string name = "p2";
  lang::ProgramOptions program;
  // The link matrix of one node of the target topology: every ring and chain visits its
  // group in orderRing(nodeLinks, members) order (ring_order.h), as NCCL orders a
  // communicator's ring along NVLink. Empty: members in reduction-index order.
  LinkMatrix nodeLinks;
};

// Lowers `program` (valid on `hierarchy`) placed by `layout` to one DSL program on all of the
// layout's devices, with chunk factor R·F (R = synthesis devices, F the least refinement that
// lets every AllReduce group split its chunks evenly). Throws like placeProgram.
//
// Algorithm:
//  1. Place the program (placeProgram) and replay the seed 003 Figure 8 semantics on the whole
//     system to know, before each step, which chunks every member holds.
//  2. Per group, with semantic chunk k = DSL chunks k·F .. k·F+F-1 of the input buffer:
//     ReduceScatter = ring ReduceScatter whose block i (the i-th 1/g of the chunks) ends on
//     member i; AllGather = ring AllGather of each member's own chunks; AllReduce = ring
//     ReduceScatter then ring AllGather; Reduce = a chain toward the first member;
//     Broadcast = a chain from the first member (seed 000 §2's ring helpers, on chunk lists).
//     Rings and chains visit the members in orderRing order (options.nodeLinks); each block
//     still ends on, or starts from, the member it belongs to.
//  3. The collective is makeGroupReduction(layout.groups); the trace checks its postcondition.
std::unique_ptr<lang::Program> lowerProgram(const SynthesisHierarchy& hierarchy,
                                            const ReductionLayout& layout,
                                            const ReductionProgram& program,
                                            const LowerOptions& options = {});

}  // namespace chorus::synth
