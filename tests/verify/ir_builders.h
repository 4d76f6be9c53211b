// Small ir::Algorithm builders for the verifier tests: programs written directly in the IR
// (no DSL, no compiler), so each test controls every step.
#pragma once

#include <string>
#include <vector>

#include "ir/algorithm.h"

namespace chorus::verify::testing {

inline ir::Step makeStep(ir::OpKind op, ir::BufferKind srcBuffer, int srcIndex,
                         ir::BufferKind dstBuffer, int dstIndex, int count = 1) {
  ir::Step step;
  step.op = op;
  step.srcBuffer = srcBuffer;
  step.srcIndex = srcIndex;
  step.dstBuffer = dstBuffer;
  step.dstIndex = dstIndex;
  step.count = count;
  return step;
}

// A step on one buffer (src and dst name the same chunk), as msccl-tools writes ring steps.
inline ir::Step onChunk(ir::OpKind op, ir::BufferKind buffer, int index, int count = 1) {
  return makeStep(op, buffer, index, buffer, index, count);
}

inline ir::Threadblock makeTb(int id, int sendPeer, int recvPeer, int channel = 0) {
  ir::Threadblock tb;
  tb.id = id;
  tb.sendPeer = sendPeer;
  tb.recvPeer = recvPeer;
  tb.channel = channel;
  return tb;
}

// An empty algorithm with one program per rank.
inline ir::Algorithm makeAlgorithm(std::string name, ir::CollectiveKind collective, int nranks,
                                   int chunksPerLoop, bool inPlace) {
  ir::Algorithm a;
  a.name = std::move(name);
  a.collective = collective;
  a.nranks = nranks;
  a.chunksPerLoop = chunksPerLoop;
  a.inPlace = inPlace;
  for (int r = 0; r < nranks; ++r) {
    ir::RankProgram program;
    program.rank = r;
    a.ranks.push_back(program);
  }
  return a;
}

inline int mod(int a, int n) {
  return ((a % n) + n) % n;
}

// In-place ring AllReduce, one tb per rank, as msccl-tools emits it
// (interop/msccl-xml/valid/allreduce_ring_4r_1ch_1inst_simple.xml):
// rank r: s i[r]; rrs i[r-1] .. i[r-(n-2)]; rrcs i[r+1]; rcs i[r] .. i[r-(n-3)]; r i[r+2].
inline ir::Algorithm makeRingAllReduce(int n) {
  using ir::BufferKind;
  using ir::OpKind;
  ir::Algorithm a = makeAlgorithm("allreduce_ring", ir::CollectiveKind::allreduce, n, n, true);
  for (int r = 0; r < n; ++r) {
    ir::RankProgram& program = a.ranks[r];
    program.inputChunks = n;
    ir::Threadblock tb = makeTb(0, mod(r + 1, n), mod(r - 1, n));
    tb.steps.push_back(onChunk(OpKind::send, BufferKind::input, r));
    for (int k = 1; k <= n - 2; ++k)
      tb.steps.push_back(onChunk(OpKind::recvReduceSend, BufferKind::input, mod(r - k, n)));
    tb.steps.push_back(onChunk(OpKind::recvReduceCopySend, BufferKind::input, mod(r + 1, n)));
    for (int k = 0; k <= n - 3; ++k)
      tb.steps.push_back(onChunk(OpKind::recvCopySend, BufferKind::input, mod(r - k, n)));
    tb.steps.push_back(onChunk(OpKind::recv, BufferKind::input, mod(r + 2, n)));
    program.threadblocks.push_back(tb);
  }
  return a;
}

// Ring AllGather with cf = 1. In place: everything happens in the output buffer (rank r's
// input is output[r]). Out of place: rank r sends input[0], and a second tb copies input[0] to
// output[r].
inline ir::Algorithm makeRingAllGather(int n, bool inPlace) {
  using ir::BufferKind;
  using ir::OpKind;
  ir::Algorithm a = makeAlgorithm("allgather_ring", ir::CollectiveKind::allgather, n, n, inPlace);
  for (int r = 0; r < n; ++r) {
    ir::RankProgram& program = a.ranks[r];
    program.inputChunks = inPlace ? 0 : 1;
    program.outputChunks = n;
    ir::Threadblock tb = makeTb(0, mod(r + 1, n), mod(r - 1, n));
    tb.steps.push_back(inPlace
                           ? onChunk(OpKind::send, BufferKind::output, r)
                           : makeStep(OpKind::send, BufferKind::input, 0, BufferKind::output, r));
    for (int k = 1; k <= n - 2; ++k)
      tb.steps.push_back(onChunk(OpKind::recvCopySend, BufferKind::output, mod(r - k, n)));
    tb.steps.push_back(onChunk(OpKind::recv, BufferKind::output, mod(r + 1, n)));
    program.threadblocks.push_back(tb);
    if (!inPlace) {
      ir::Threadblock local = makeTb(1, -1, -1);
      local.steps.push_back(makeStep(OpKind::copy, BufferKind::input, 0, BufferKind::output, r));
      program.threadblocks.push_back(local);
    }
  }
  return a;
}

}  // namespace chorus::verify::testing
