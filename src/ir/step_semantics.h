// The one table of IR step semantics (ir stage). For each OpKind: its names, the value it
// computes, whether it stores that value in its destination and sends it on, and whose
// connection it uses. Every layer asks this table (the predicates below) instead of listing
// ops: the interpreter, the verifier's symbolic execution and access checks, the simulator's
// pass costs, the formats' name tables, the compiler. ir/apply_step.h gives the reference
// meaning of a step on plain buffers, which every executor is tested against.
// Plain constexpr data with no STL, so device code includes it too (CHORUS_HD).
//
// Adding an op: add it to OpKind and a row to kOpTable (the static_asserts check the order),
// then run the tests: layers that derive their behaviour from the row handle it; layers that
// cannot (an op whose peer comes from the step, which no executor runs yet) refuse it by name.
#pragma once

#include <cstdint>

#include "support/host_device.h"

namespace chorus::ir {

// Step operations (GC3 §4: MSCCL's instruction set). Receive-reduce ops (recvReduceCopy,
// recvReduceSend, recvReduceCopySend) take their LOCAL operand from src: result = received ⊕
// src (the MSCCL runtime's reading; docs/ir.md "The receive-reduce operand question").
enum class OpKind : std::uint8_t {
  send,                // send src[0..count) to the tb's send peer
  recv,                // receive from the tb's recv peer into dst
  recvCopySend,        // receive into dst and forward to the send peer
  recvReduceCopy,      // dst = received ⊕ src
  recvReduceSend,      // send (received ⊕ src) on, no local write
  recvReduceCopySend,  // dst = received ⊕ src, and send it on
  copy,                // dst = src (same rank)
  reduce,              // dst = dst ⊕ src (same rank)
  nop,                 // no data; only waits for its dependencies (one-sided plans: a
                       // threadblock-wide barrier, MSCCL++'s __syncthreads `nop`)
  // One-sided ops (MSCCL++ execution plans, docs/ir.md "One-sided operations"). Data ops name
  // the peer whose memory they touch (Step::peer) and the channel they use (Step::channel, an
  // index into RankProgram::channels; -1 for a memory-channel access that needs none).
  put,            // peer's dst = local src
  get,            // local dst = peer's src
  getReduce,      // local dst = local dst ⊕ peer's src (the remote half of MSCCL++ `rre`)
  signal,         // add one token to the paired channel of the peer; publishes earlier writes
  wait,           // take one token from this channel (blocks until one arrived)
  relaxedSignal,  // signal that orders execution only: it publishes no data
  relaxedWait,    // wait that orders execution only
  flush,          // wait until this port channel's earlier puts have read their sources
  // Same-rank synchronisation; Step::channel names the barrier or semaphore.
  barrier,     // the first Step::count threadblocks of the rank that reach this barrier join
  semAcquire,  // take one unit of RankProgram::semaphores[channel] (blocks at zero)
  semRelease,  // give one unit back
};
inline constexpr int kOpKinds = 20;

// The value a step computes per element; it then stores it in dst and/or sends it.
enum class StepValue : std::uint8_t {
  none,           // no data: the step only waits for its dependencies
  src,            // the step's source chunks
  received,       // the message received on the threadblock's recv connection
  receivedOpSrc,  // received ⊕ src (⊕: the call's reduction operator)
  dstOpSrc,       // dst ⊕ src
};

// Where an op finds the rank it exchanges data with.
enum class OpPeer : std::uint8_t {
  // Two-sided and local ops: the threadblock's send/recv peer and channel, one FIFO per
  // direction; the step's own peer and channel stay unset.
  threadblock,
  // One-sided ops (puts, gets, signals, waits, as in MSCCL++ plans): the step's own peer and
  // channel (opTakesStepPeer). The verifier, the thread runner and the one-sided simulator
  // model them; the other runtimes refuse them by name (opIsOneSided).
  step,
  // Same-rank synchronisation objects (barriers, semaphores) named by Step::channel.
  rankLocal,
};

// Which operand of a one-sided data op lies in the peer's memory.
enum class RemoteOperand : std::uint8_t { none, src, dst };

struct OpSemantics {
  OpKind op;
  const char* name;       // long form: text IR, chorus JSON, DOT, messages ("recvReduceCopySend")
  const char* mscclCode;  // MSCCL XML `type` ("rrcs"); nullptr where MSCCL XML has no such op
  StepValue value;
  bool storesDst;  // writes the value to dst[0..count)
  bool sends;      // sends the value to the send peer (one message of count pieces)
  OpPeer peer;
  RemoteOperand remote;  // src or dst names the peer's buffer (put, get, getReduce)
};

struct OpTable {
  OpSemantics rows[kOpKinds];
};

// clang-format off
inline constexpr OpTable kOpTable = {{
  //  op                          name                  MSCCL   value                       stores sends  peer                 remote
  {OpKind::send,               "send",               "s",    StepValue::src,             false, true,  OpPeer::threadblock, RemoteOperand::none},
  {OpKind::recv,               "recv",               "r",    StepValue::received,        true,  false, OpPeer::threadblock, RemoteOperand::none},
  {OpKind::recvCopySend,       "recvCopySend",       "rcs",  StepValue::received,        true,  true,  OpPeer::threadblock, RemoteOperand::none},
  {OpKind::recvReduceCopy,     "recvReduceCopy",     "rrc",  StepValue::receivedOpSrc,   true,  false, OpPeer::threadblock, RemoteOperand::none},
  {OpKind::recvReduceSend,     "recvReduceSend",     "rrs",  StepValue::receivedOpSrc,   false, true,  OpPeer::threadblock, RemoteOperand::none},
  {OpKind::recvReduceCopySend, "recvReduceCopySend", "rrcs", StepValue::receivedOpSrc,   true,  true,  OpPeer::threadblock, RemoteOperand::none},
  {OpKind::copy,               "copy",               "cpy",  StepValue::src,             true,  false, OpPeer::threadblock, RemoteOperand::none},
  {OpKind::reduce,             "reduce",             "re",   StepValue::dstOpSrc,        true,  false, OpPeer::threadblock, RemoteOperand::none},
  {OpKind::nop,                "nop",                "nop",  StepValue::none,            false, false, OpPeer::threadblock, RemoteOperand::none},
  {OpKind::put,                "put",                nullptr, StepValue::src,            true,  false, OpPeer::step,        RemoteOperand::dst},
  {OpKind::get,                "get",                nullptr, StepValue::src,            true,  false, OpPeer::step,        RemoteOperand::src},
  {OpKind::getReduce,          "getReduce",          nullptr, StepValue::dstOpSrc,       true,  false, OpPeer::step,        RemoteOperand::src},
  {OpKind::signal,             "signal",             nullptr, StepValue::none,           false, false, OpPeer::step,        RemoteOperand::none},
  {OpKind::wait,               "wait",               nullptr, StepValue::none,           false, false, OpPeer::step,        RemoteOperand::none},
  {OpKind::relaxedSignal,      "relaxedSignal",      nullptr, StepValue::none,           false, false, OpPeer::step,        RemoteOperand::none},
  {OpKind::relaxedWait,        "relaxedWait",        nullptr, StepValue::none,           false, false, OpPeer::step,        RemoteOperand::none},
  {OpKind::flush,              "flush",              nullptr, StepValue::none,           false, false, OpPeer::step,        RemoteOperand::none},
  {OpKind::barrier,            "barrier",            nullptr, StepValue::none,           false, false, OpPeer::rankLocal,   RemoteOperand::none},
  {OpKind::semAcquire,         "semAcquire",         nullptr, StepValue::none,           false, false, OpPeer::rankLocal,   RemoteOperand::none},
  {OpKind::semRelease,         "semRelease",         nullptr, StepValue::none,           false, false, OpPeer::rankLocal,   RemoteOperand::none},
}};
// clang-format on

namespace detail {
constexpr bool rowsInEnumOrder() {
  for (int i = 0; i < kOpKinds; ++i)
    if (static_cast<int>(kOpTable.rows[i].op) != i) return false;
  return true;
}
constexpr bool remoteOperandsOnlyOnStepPeerOps() {
  for (const auto& row : kOpTable.rows)
    if (row.remote != RemoteOperand::none && row.peer != OpPeer::step) return false;
  return true;
}
constexpr bool rowsStoreOrSendOnlyValues() {
  for (const auto& row : kOpTable.rows)
    if (row.value == StepValue::none && (row.storesDst || row.sends)) return false;
  return true;
}
}  // namespace detail
static_assert(detail::rowsInEnumOrder(), "kOpTable has one row per OpKind, in enum order");
static_assert(detail::rowsStoreOrSendOnlyValues(), "a row that stores or sends computes a value");
static_assert(detail::remoteOperandsOnlyOnStepPeerOps(), "a remote operand needs the step's peer");
static_assert(static_cast<int>(OpKind::semRelease) + 1 == kOpKinds, "kOpKinds counts every OpKind");

#if defined(__CUDACC__)
// Device code reads its own copy (a host constexpr variable is not addressable there).
static __device__ constexpr OpTable kOpTableOnDevice = kOpTable;
#endif

// The row of `op`. Precondition: `op` is an OpKind value (readers check names and codes).
CHORUS_HD constexpr const OpSemantics& opSemantics(OpKind op) {
#if defined(__CUDA_ARCH__)
  return kOpTableOnDevice.rows[static_cast<int>(op)];
#else
  return kOpTable.rows[static_cast<int>(op)];
#endif
}

// ---- facts derived from the row ------------------------------------------------------------
// op                 receives readsSrc readsDst writesDst sends reducesReceived landsMessage
// send                  .        x        .         .       x         .             .
// recv                  x        .        .         x       .         .             x
// recvCopySend          x        .        .         x       x         .             x
// recvReduceCopy        x        x        .         x       .         x             .
// recvReduceSend        x        x        .         .       x         x             .
// recvReduceCopySend    x        x        .         x       x         x             .
// copy                  .        x        .         x       .         .             .
// reduce                .        x        x         x       .         .             .
// nop                   .        .        .         .       .         .             .
// put                   .        x        .         x(peer) .         .             .
// get                   .        x(peer)  .         x       .         .             .
// getReduce             .        x(peer)  x         x       .         .             .
// signal, wait, relaxed forms, flush, barrier, semAcquire, semRelease: no data

CHORUS_HD constexpr bool valueReceives(StepValue v) {
  return v == StepValue::received || v == StepValue::receivedOpSrc;
}
CHORUS_HD constexpr bool valueReadsSrc(StepValue v) {
  return v == StepValue::src || v == StepValue::receivedOpSrc || v == StepValue::dstOpSrc;
}
CHORUS_HD constexpr bool valueReduces(StepValue v) {
  return v == StepValue::receivedOpSrc || v == StepValue::dstOpSrc;
}

// Takes a message from the recv connection.
CHORUS_HD constexpr bool opReceives(OpKind op) {
  return valueReceives(opSemantics(op).value);
}
// Puts a message on the send connection.
CHORUS_HD constexpr bool opSends(OpKind op) {
  return opSemantics(op).sends;
}
// Reads src[0..count) (of the peer for a get or getReduce, opRemoteOperand).
CHORUS_HD constexpr bool opReadsSrc(OpKind op) {
  return valueReadsSrc(opSemantics(op).value);
}
// Writes dst[0..count) (of the peer for a put, opRemoteOperand).
CHORUS_HD constexpr bool opWritesDst(OpKind op) {
  return opSemantics(op).storesDst;
}
// Reads dst[0..count) before writing it (dst ⊕= src).
CHORUS_HD constexpr bool opReadsDst(OpKind op) {
  return opSemantics(op).value == StepValue::dstOpSrc;
}
// Applies the reduction operator to what it receives (received ⊕ src).
CHORUS_HD constexpr bool opReducesReceived(OpKind op) {
  return opSemantics(op).value == StepValue::receivedOpSrc;
}
// Applies the reduction operator at all.
CHORUS_HD constexpr bool opReduces(OpKind op) {
  return valueReduces(opSemantics(op).value);
}
// Stores the received message unchanged in dst: a transport may write it there directly.
CHORUS_HD constexpr bool opLandsMessage(OpKind op) {
  return opSemantics(op).value == StepValue::received && opSemantics(op).storesDst;
}
// Stores its source unchanged in dst (a copy: one onto itself writes nothing).
CHORUS_HD constexpr bool opCopiesSrcToDst(OpKind op) {
  return opSemantics(op).value == StepValue::src && opSemantics(op).storesDst;
}
// What it sends lies in this rank's memory once the step ran (its source or its stored
// destination), so a transport may send it by reference; else it exists only in the message.
CHORUS_HD constexpr bool opSendsLocalData(OpKind op) {
  return opSemantics(op).sends &&
         (opSemantics(op).storesDst || opSemantics(op).value == StepValue::src);
}
// Moves no data (waits for its dependencies only).
CHORUS_HD constexpr bool opMovesNoData(OpKind op) {
  return opSemantics(op).value == StepValue::none && !opSemantics(op).storesDst &&
         !opSemantics(op).sends;
}
// Exchanges data or tokens with the step's own peer and channel (a one-sided op).
CHORUS_HD constexpr bool opTakesStepPeer(OpKind op) {
  return opSemantics(op).peer == OpPeer::step;
}
// Belongs to the one-sided model (a peer or synchronisation object named by the step), which
// the verifier, the one-sided thread runner and the one-sided simulator handle; the other
// runtimes refuse these ops by name.
CHORUS_HD constexpr bool opIsOneSided(OpKind op) {
  return opSemantics(op).peer != OpPeer::threadblock;
}
// The operand (src or dst) that lies in the step's peer's memory, if any.
CHORUS_HD constexpr RemoteOperand opRemoteOperand(OpKind op) {
  return opSemantics(op).remote;
}

}  // namespace chorus::ir
