// The op table (src/ir/step_semantics.h), the reference applyStep (src/ir/apply_step.h) and the
// shared tiling (src/ir/tiling.h): the meaning every layer derives from them.
#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "ir/algorithm.h"
#include "ir/apply_step.h"
#include "ir/step_semantics.h"
#include "ir/tiling.h"

namespace chorus::ir {
namespace {

// What each MSCCL op does (GC3 §4; the MSCCL runtime's reading of receive-reduce
// operands, docs/ir.md): the facts the layers relied on before the table existed, written
// out by hand so a changed row shows here.
struct ExpectedFacts {
  OpKind op;
  bool receives, readsSrc, readsDst, writesDst, sends, reducesReceived, landsMessage;
};
constexpr ExpectedFacts kExpectedFacts[] = {
    {OpKind::send, false, true, false, false, true, false, false},
    {OpKind::recv, true, false, false, true, false, false, true},
    {OpKind::recvCopySend, true, false, false, true, true, false, true},
    {OpKind::recvReduceCopy, true, true, false, true, false, true, false},
    {OpKind::recvReduceSend, true, true, false, false, true, true, false},
    {OpKind::recvReduceCopySend, true, true, false, true, true, true, false},
    {OpKind::copy, false, true, false, true, false, false, false},
    {OpKind::reduce, false, true, true, true, false, false, false},
    {OpKind::nop, false, false, false, false, false, false, false},
    // One-sided ops (MSCCL++): put writes the peer's dst, get and getReduce read the peer's src.
    {OpKind::put, false, true, false, true, false, false, false},
    {OpKind::get, false, true, false, true, false, false, false},
    {OpKind::getReduce, false, true, true, true, false, false, false},
    {OpKind::signal, false, false, false, false, false, false, false},
    {OpKind::wait, false, false, false, false, false, false, false},
    {OpKind::relaxedSignal, false, false, false, false, false, false, false},
    {OpKind::relaxedWait, false, false, false, false, false, false, false},
    {OpKind::flush, false, false, false, false, false, false, false},
    {OpKind::barrier, false, false, false, false, false, false, false},
    {OpKind::semAcquire, false, false, false, false, false, false, false},
    {OpKind::semRelease, false, false, false, false, false, false, false},
};

TEST(OpTable, PredicatesMatchTheMscclOps) {
  EXPECT_EQ(std::size(kExpectedFacts), std::size_t{kOpKinds})
      << "an op was added to the table: write its expected facts here";
  for (const ExpectedFacts& e : kExpectedFacts) {
    SCOPED_TRACE(std::string(opName(e.op)));
    EXPECT_EQ(opReceives(e.op), e.receives);
    EXPECT_EQ(opReadsSrc(e.op), e.readsSrc);
    EXPECT_EQ(opReadsDst(e.op), e.readsDst);
    EXPECT_EQ(opWritesDst(e.op), e.writesDst);
    EXPECT_EQ(opSends(e.op), e.sends);
    EXPECT_EQ(opReducesReceived(e.op), e.reducesReceived);
    EXPECT_EQ(opLandsMessage(e.op), e.landsMessage);
    EXPECT_EQ(opReduces(e.op), e.reducesReceived || e.readsDst);
    const bool oneSided = static_cast<int>(e.op) >= static_cast<int>(OpKind::put);
    EXPECT_EQ(opIsOneSided(e.op), oneSided);
    EXPECT_EQ(opTakesStepPeer(e.op),
              oneSided && static_cast<int>(e.op) < static_cast<int>(OpKind::barrier));
  }
  EXPECT_EQ(opRemoteOperand(OpKind::put), RemoteOperand::dst);
  EXPECT_EQ(opRemoteOperand(OpKind::get), RemoteOperand::src);
  EXPECT_EQ(opRemoteOperand(OpKind::getReduce), RemoteOperand::src);
  EXPECT_EQ(opRemoteOperand(OpKind::copy), RemoteOperand::none);
  EXPECT_TRUE(opCopiesSrcToDst(OpKind::copy));
  EXPECT_FALSE(opCopiesSrcToDst(OpKind::send));
  EXPECT_TRUE(opMovesNoData(OpKind::nop));
  EXPECT_FALSE(opSendsLocalData(OpKind::recvReduceSend));  // the sum exists only in the message
  EXPECT_TRUE(opSendsLocalData(OpKind::recvReduceCopySend));
  EXPECT_TRUE(opSendsLocalData(OpKind::send));
}

TEST(OpTable, NamesAndMscclCodesRoundTrip) {
  for (const OpSemantics& row : kOpTable.rows) {
    EXPECT_EQ(parseOpName(opName(row.op)), row.op);
    if (row.mscclCode) {
      EXPECT_EQ(parseOpMscclCode(opMscclCode(row.op)), row.op);
    }
  }
  for (const ExpectedFacts& e : kExpectedFacts)  // MSCCL's own ops all have a code, no other
    EXPECT_EQ(opMscclCode(e.op).empty(), opIsOneSided(e.op)) << opName(e.op);
  EXPECT_EQ(opNameList(),
            "send, recv, recvCopySend, recvReduceCopy, recvReduceSend, recvReduceCopySend, copy, "
            "reduce, nop, put, get, getReduce, signal, wait, relaxedSignal, relaxedWait, flush, "
            "barrier, semAcquire, semRelease");
  EXPECT_EQ(opMscclCodeList(), "s, r, rcs, rrc, rrs, rrcs, cpy, re, nop");
  EXPECT_EQ(parseOpName("put"), OpKind::put);
  EXPECT_EQ(parseOpMscclCode("put"), std::nullopt);   // MSCCL XML has no one-sided ops
  EXPECT_EQ(parseOpMscclCode("recv"), std::nullopt);  // codes and long names do not mix
}

// applyStep on int32 with ⊕ = +: src = 10+i, dst = 100+i, received = 1000+i.
struct Operands {
  std::vector<std::int32_t> src{10, 11, 12}, dst{100, 101, 102}, received{1000, 1001, 1002},
      sent{-1, -1, -1};
};

Operands apply(OpKind op) {
  Operands o;
  const StepOperands<std::int32_t> io{o.src.data(), o.dst.data(), o.received.data(), o.sent.data()};
  applyStep(op, io, o.src.size(), [](std::int32_t a, std::int32_t b) { return a + b; });
  return o;
}

TEST(ApplyStep, EveryOpComputesItsValueAndStoresOrSendsIt) {
  using V = std::vector<std::int32_t>;
  const V untouchedDst{100, 101, 102}, unsent{-1, -1, -1};
  EXPECT_EQ(apply(OpKind::send).sent, (V{10, 11, 12}));
  EXPECT_EQ(apply(OpKind::send).dst, untouchedDst);
  EXPECT_EQ(apply(OpKind::recv).dst, (V{1000, 1001, 1002}));
  EXPECT_EQ(apply(OpKind::recv).sent, unsent);
  EXPECT_EQ(apply(OpKind::recvCopySend).dst, (V{1000, 1001, 1002}));
  EXPECT_EQ(apply(OpKind::recvCopySend).sent, (V{1000, 1001, 1002}));
  EXPECT_EQ(apply(OpKind::recvReduceCopy).dst, (V{1010, 1012, 1014}));
  EXPECT_EQ(apply(OpKind::recvReduceCopy).sent, unsent);
  EXPECT_EQ(apply(OpKind::recvReduceSend).dst, untouchedDst);
  EXPECT_EQ(apply(OpKind::recvReduceSend).sent, (V{1010, 1012, 1014}));
  EXPECT_EQ(apply(OpKind::recvReduceCopySend).dst, (V{1010, 1012, 1014}));
  EXPECT_EQ(apply(OpKind::recvReduceCopySend).sent, (V{1010, 1012, 1014}));
  EXPECT_EQ(apply(OpKind::copy).dst, (V{10, 11, 12}));
  EXPECT_EQ(apply(OpKind::reduce).dst, (V{110, 112, 114}));
  EXPECT_EQ(apply(OpKind::reduce).sent, unsent);
  EXPECT_EQ(apply(OpKind::nop).dst, untouchedDst);
  EXPECT_EQ(apply(OpKind::nop).sent, unsent);
  for (const OpSemantics& row : kOpTable.rows)
    EXPECT_EQ(apply(row.op).src, (V{10, 11, 12})) << row.name << " never writes its source";
}

TEST(ApplyStep, CombineTakesTheReceivedOrDstOperandFirst) {
  // A non-commutative ⊕ shows the operand order executors must keep (a - b).
  std::int32_t src = 3, dst = 10, received = 100, sent = 0;
  const auto minus = [](std::int32_t a, std::int32_t b) { return a - b; };
  applyStep(OpKind::recvReduceCopy, StepOperands<std::int32_t>{&src, &dst, &received, &sent}, 1,
            minus);
  EXPECT_EQ(dst, 97);
  dst = 10;
  applyStep(OpKind::reduce, StepOperands<std::int32_t>{&src, &dst, nullptr, nullptr}, 1, minus);
  EXPECT_EQ(dst, 7);
}

TEST(ApplyStep, ACopyOrReduceOntoItsOwnSourceIsElementwise) {
  std::vector<std::int32_t> buffer{1, 2, 3};
  const auto plus = [](std::int32_t a, std::int32_t b) { return a + b; };
  applyStep(OpKind::reduce,
            StepOperands<std::int32_t>{buffer.data(), buffer.data(), nullptr, nullptr}, 3, plus);
  EXPECT_EQ(buffer, (std::vector<std::int32_t>{2, 4, 6}));
  applyStep(OpKind::copy,
            StepOperands<std::int32_t>{buffer.data(), buffer.data(), nullptr, nullptr}, 3, plus);
  EXPECT_EQ(buffer, (std::vector<std::int32_t>{2, 4, 6}));
}

static_assert(tileChunks(0, 4, 4096, 1).tiles == 0, "empty chunks have no tiles");

TEST(Tiling, TilesFillTheMessageAndCoverTheChunk) {
  // 1000 float32 per chunk, 4 KiB messages of 2 pieces: 512 elements per tile, 2 tiles.
  Tiling t = tileChunks(1000, 4, 4096, 2);
  EXPECT_EQ(t.tileElems, 512u);
  EXPECT_EQ(t.tiles, 2u);
  EXPECT_EQ(t.lastTileElems, 488u);
  // A message smaller than one element still carries one element per piece.
  t = tileChunks(5, 8, 4, 3);
  EXPECT_EQ(t.tileElems, 1u);
  EXPECT_EQ(t.tiles, 5u);
  EXPECT_EQ(t.lastTileElems, 1u);
  // A chunk that fits one message is one tile.
  t = tileChunks(100, 4, 1 << 20, 1);
  EXPECT_EQ(t.tileElems, 100u);
  EXPECT_EQ(t.tiles, 1u);
  EXPECT_EQ(t.lastTileElems, 100u);
  // Exact multiples leave a full last tile.
  t = tileChunks(1024, 4, 1024, 1);
  EXPECT_EQ(t.tiles, 4u);
  EXPECT_EQ(t.lastTileElems, 256u);
}

TEST(Tiling, MessagesAreCutAtTheProtocolCap) {
  EXPECT_EQ(messageBytes(Protocol::simple, 256 << 10), std::size_t{256} << 10);
  EXPECT_EQ(messageBytes(Protocol::ll, 256 << 10), kLlMessageCap);
  EXPECT_EQ(messageBytes(Protocol::ll128, 256 << 10), kLl128MessageCap);
  EXPECT_EQ(messageBytes(Protocol::ll128, 4096), 4096u);
}

TEST(Tiling, TheLargestMessageCountsOnlyStepsThatSendOrReceive) {
  Algorithm a;
  a.nranks = 1;
  a.ranks.resize(1);
  Threadblock tb;
  Step copy;
  copy.op = OpKind::copy;
  copy.count = 7;  // local: never a message
  Step send;
  send.op = OpKind::send;
  send.count = 3;
  tb.steps = {copy, send};
  a.ranks[0].threadblocks = {tb};
  EXPECT_EQ(largestMessageChunks(a), 3u);
  a.ranks[0].threadblocks[0].steps = {copy};
  EXPECT_EQ(largestMessageChunks(a), 1u);
}

}  // namespace
}  // namespace chorus::ir
