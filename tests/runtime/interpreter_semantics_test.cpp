// The CPU interpreter against the reference step semantics (ir::applyStep): every op of the
// op table, run by the interpreter on two thread ranks over several tiles, slot by slot and by
// reference, must leave exactly what applyStep computes on plain buffers. A new op added to
// the table is checked here without a new test.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "ir/algorithm.h"
#include "ir/apply_step.h"
#include "ir/step_semantics.h"
#include "runtime/interpreter.h"
#include "transport/thread/thread_group.h"

namespace chorus {
namespace {

constexpr int kProbeChunks = 4;  // input, output and scratch chunks of each rank
constexpr int kProbeCount = 2;   // the probed step's count: multi-piece messages

// Rank 0 runs `op` on input[0..2) -> output[1..3); rank 1 sends it input[0..2) when the op
// receives, and receives what it sends into output[0..2). A custom collective: the
// interpreter only needs its buffer sizes.
ir::Algorithm probePlan(ir::OpKind op) {
  ir::Algorithm a;
  a.name = "step-semantics-probe";
  a.collective = ir::CollectiveKind::custom;
  a.nranks = 2;
  a.chunksPerLoop = kProbeChunks;
  a.ranks.resize(2);
  for (int r = 0; r < 2; ++r) {
    a.ranks[r].rank = r;
    a.ranks[r].inputChunks = kProbeChunks;
    a.ranks[r].outputChunks = kProbeChunks;
    a.ranks[r].scratchChunks = kProbeChunks;
  }
  ir::Step probe;
  probe.op = op;
  probe.srcBuffer = ir::BufferKind::input;
  probe.srcIndex = 0;
  probe.dstBuffer = ir::BufferKind::output;
  probe.dstIndex = 1;
  probe.count = kProbeCount;
  ir::Threadblock prober;
  prober.sendPeer = ir::opSends(op) ? 1 : -1;
  prober.recvPeer = ir::opReceives(op) ? 1 : -1;
  prober.steps = {probe};
  a.ranks[0].threadblocks = {prober};

  ir::Threadblock partner;
  partner.sendPeer = prober.recvPeer >= 0 ? 0 : -1;
  partner.recvPeer = prober.sendPeer >= 0 ? 0 : -1;
  if (partner.sendPeer >= 0) {
    ir::Step send;
    send.op = ir::OpKind::send;
    send.count = kProbeCount;
    partner.steps.push_back(send);
  }
  if (partner.recvPeer >= 0) {
    ir::Step recv;
    recv.op = ir::OpKind::recv;
    recv.dstBuffer = ir::BufferKind::output;
    recv.count = kProbeCount;
    partner.steps.push_back(recv);
  }
  if (!partner.steps.empty()) a.ranks[1].threadblocks = {partner};
  return a;
}

struct ProbeRun {
  std::vector<std::int32_t> in[2], out[2];
};

// Distinct values per rank, buffer and element, so any misplaced element shows.
ProbeRun freshBuffers(std::size_t count) {
  ProbeRun run;
  for (int r = 0; r < 2; ++r)
    for (std::size_t i = 0; i < count; ++i) {
      run.in[r].push_back(static_cast<std::int32_t>(1'000'000 * (r + 1) + i));
      run.out[r].push_back(static_cast<std::int32_t>(-1'000'000 * (r + 1) - i));
    }
  return run;
}

void runOnInterpreter(const ir::Algorithm& a, ProbeRun& run, std::size_t count, bool byReference) {
  transport::ThreadGroup group(2, {4, 4096});  // small slots: several tiles per chunk
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] {
      runtime::ExecOptions options;
      options.timeout = std::chrono::milliseconds(60'000);
      options.alwaysByReference = byReference;
      runtime::executeRank(a, r,
                           {run.in[r].data(), run.out[r].data(), count, runtime::DataType::int32},
                           group.rank(r), options);
    });
  for (auto& t : ranks)
    t.join();
}

// What applyStep leaves: chunks are contiguous, so the step's pieces are one range each.
ProbeRun expectedRun(ir::OpKind op, std::size_t count) {
  ProbeRun want = freshBuffers(count);
  const std::size_t chunk = count / kProbeChunks;
  std::vector<std::int32_t> sent(kProbeCount * chunk);
  const ir::StepOperands<std::int32_t> io{want.in[0].data(), want.out[0].data() + chunk,
                                          want.in[1].data(), sent.data()};
  ir::applyStep(op, io, kProbeCount * chunk, [](std::int32_t x, std::int32_t y) { return x + y; });
  if (ir::opSends(op)) std::copy(sent.begin(), sent.end(), want.out[1].begin());
  return want;
}

TEST(InterpreterSemantics, EveryOpLeavesWhatApplyStepComputes) {
  // 3000 int32 per chunk in 4 KiB slots of 2-piece messages: 6 tiles, the last one short.
  const std::size_t count = kProbeChunks * 3000;
  for (const ir::OpSemantics& row : ir::kOpTable.rows) {
    if (ir::opIsOneSided(row.op)) continue;  // one-sided: refused by name, not run
    for (const bool byReference : {false, true}) {
      SCOPED_TRACE(std::string(row.name) + (byReference ? " by reference" : " through slots"));
      const ir::Algorithm a = probePlan(row.op);
      ProbeRun got = freshBuffers(count);
      runOnInterpreter(a, got, count, byReference);
      const ProbeRun want = expectedRun(row.op, count);
      for (int r = 0; r < 2; ++r) {
        EXPECT_EQ(got.in[r], want.in[r]) << "rank " << r << " input";
        EXPECT_EQ(got.out[r], want.out[r]) << "rank " << r << " output";
      }
    }
  }
}

}  // namespace
}  // namespace chorus
