// The device interpreter (device layer): one block of one rank runs its IR threadblock, tile by
// tile, step by step, as the CPU interpreter does (GC3 §6.2, seed 000; runtime/interpreter.h),
// with each step's meaning taken from the op table (ir/apply_step.h). One source for two
// builds: `P` is cuda/cuda_platform.cuh on the GPU (a block is a CUDA block) or
// host_platform.h in CI (a block is a thread). Protocols (docs/gpu.md "Protocols"; NCCL's
// design, docs/sources.md):
//   Simple: payload written straight into the receiver's slot, a system fence, then the slot's
//           flag (release); the receiver polls the flag (acquire), reads, then acks.
//   LL:     8-byte lines of 4 payload bytes and a 4-byte flag, stored without a fence; the
//           receiver polls every line until its flag is the message's.
//   LL128:  128-byte lines of 120 payload bytes and an 8-byte flag; the lines' data words are
//           stored by lanes of a warp, then, after a warp barrier, the flag (release).
// Every message's flag is its number on the connection over all calls (KernelFifo::counter), so
// nothing is cleared between calls; a sender reuses a slot once the receiver acked the message
// that held it. Every wait polls the group's abort flag and the deadline.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/element_ops.h"
#include "device/kernel_types.h"
#include "ir/apply_step.h"
#include "ir/step_semantics.h"

#if defined(__CUDACC__)
#define CHORUS_KERNEL_FN __device__ __forceinline__
#else
#define CHORUS_KERNEL_FN inline
#endif

namespace chorus::device {

// Where a block is, for the status it reports, and when its waits give up (the platform
// clock's time: a GPU's global timer is not the host's clock).
struct BlockPlace {
  std::int32_t block = 0;
  std::int32_t step = -1;
  std::uint64_t tile = 0;
  std::uint64_t deadlineNs = 0;
};

template <class P>
CHORUS_KERNEL_FN void reportFailure(const KernelArgs& a, const BlockPlace& at, KernelError error,
                                    WaitKind waitingFor = WaitKind{}, std::uint64_t arrived = 0,
                                    std::uint64_t expected = 0) {
  if (error != KernelError::aborted) {
    if (a.failedRank) P::claim(a.failedRank, static_cast<std::uint32_t>(a.rank) + 1);
    P::raiseFlag(a.abortFlag);
  }
  if (!P::claim(a.statusClaimed)) return;
  a.status->error = error;
  a.status->block = at.block;
  a.status->step = at.step;
  a.status->tile = at.tile;
  a.status->arrived = arrived;
  a.status->expected = expected;
  a.status->waitingFor = static_cast<std::uint32_t>(waitingFor);
}

// Polls `done()` until it holds; false, with the failure reported, once the group aborts or
// the deadline passes. Called by the threads that wait (thread 0, or each LL line's reader).
template <class P, class Done>
CHORUS_KERNEL_FN bool spinUntil(const KernelArgs& a, const BlockPlace& at, WaitKind kind,
                                Done done) {
  for (std::uint32_t spins = 1;; ++spins) {
    if (done()) return true;
    if ((spins & 63u) == 0) {
      if (P::loadFlag(a.abortFlag) != 0) {
        reportFailure<P>(a, at, KernelError::aborted);
        return false;
      }
      if (P::nowNs() > at.deadlineNs) {
        reportFailure<P>(a, at, KernelError::timedOut, kind);
        return false;
      }
    }
    P::pause();
  }
}

// Thread 0 waits; every thread learns whether the wait failed.
template <class P, class Done>
CHORUS_KERNEL_FN bool blockWait(const KernelArgs& a, const BlockPlace& at, WaitKind kind,
                                Done done) {
  bool failed = false;
  if (P::thread() == 0) failed = !spinUntil<P>(a, at, kind, done);
  return !P::syncBlockOr(failed);
}

CHORUS_KERNEL_FN std::uint32_t slotOf(const KernelArgs& a, std::uint64_t number) {
  return static_cast<std::uint32_t>((number - 1) % a.slotCount);
}

// Waits until the slot of message `number` is free (its previous message acked), then returns
// where the step writes the message: the receiver's slot (Simple) or the send bounce buffer.
template <class P>
CHORUS_KERNEL_FN unsigned char* beginSend(const KernelArgs& a, const KernelBlockIo& io,
                                          std::uint64_t number, const BlockPlace& at) {
  const bool free = blockWait<P>(a, at, WaitKind::freeSlot, [&] {
    return number <= a.slotCount || P::loadAcquire(io.send.ack) >= number - a.slotCount;
  });
  if (!free) return nullptr;
  if (a.protocol == ir::Protocol::simple) return io.send.slots + slotOf(a, number) * a.slotStride;
  return io.sendBounce;
}

// Publishes message `number` of `bytes` payload bytes (after a block barrier).
template <class P>
CHORUS_KERNEL_FN void commitSend(const KernelArgs& a, const KernelBlockIo& io, std::uint64_t number,
                                 std::size_t bytes) {
  const std::uint32_t slot = slotOf(a, number);
  unsigned char* wire = io.send.slots + slot * a.slotStride;
  if (a.protocol == ir::Protocol::simple) {
    if (P::thread() == 0) {
      P::storeRelaxed(io.send.sizes + slot, bytes);
      P::fenceSystem();
      P::storeRelease(io.send.ready + slot, number);
    }
  } else if (a.protocol == ir::Protocol::ll) {
    const std::size_t lines = (bytes + 3) / 4;
    const std::uint32_t* data = reinterpret_cast<const std::uint32_t*>(io.sendBounce);
    auto* out = reinterpret_cast<std::uint64_t*>(wire);
    const std::uint64_t flag = static_cast<std::uint64_t>(static_cast<std::uint32_t>(number)) << 32;
    for (std::size_t l = P::thread(); l < lines; l += P::threads())
      P::storeRelaxed(out + l, flag | data[l]);
  } else {  // LL128: lanes of a warp store a line's 15 data words, then one lane its flag
    const std::size_t lines = (bytes + 119) / 120;
    const int lane = P::thread() % P::kLineLanes;
    const std::size_t group = static_cast<std::size_t>(P::thread() / P::kLineLanes);
    const std::size_t groups = static_cast<std::size_t>(P::threads() / P::kLineLanes);
    const std::size_t rounds = (lines + groups - 1) / groups;  // the same on every lane
    const auto* data = reinterpret_cast<const std::uint64_t*>(io.sendBounce);
    for (std::size_t r = 0; r < rounds; ++r) {
      const std::size_t line = r * groups + group;
      auto* out = reinterpret_cast<std::uint64_t*>(wire) + line * 16;
      if (line < lines)
        for (int w = lane; w < 15; w += P::kLineLanes)
          P::storeRelaxed(out + w, data[line * 15 + static_cast<std::size_t>(w)]);
      P::syncWarp();
      if (line < lines && lane == P::kLineLanes - 1) P::storeRelease(out + 15, number);
    }
  }
}

// Waits for message `number` of `bytes` bytes and returns where its payload is: the slot
// (Simple) or the receive bounce buffer it was unpacked into (LL, LL128). nullptr on failure.
template <class P>
CHORUS_KERNEL_FN const unsigned char* beginReceive(const KernelArgs& a, const KernelBlockIo& io,
                                                   std::uint64_t number, std::size_t bytes,
                                                   const BlockPlace& at) {
  const std::uint32_t slot = slotOf(a, number);
  const unsigned char* wire = io.recv.slots + slot * a.slotStride;
  if (a.protocol == ir::Protocol::simple) {
    bool failed = false;
    if (P::thread() == 0) {
      failed = !spinUntil<P>(a, at, WaitKind::message,
                             [&] { return P::loadAcquire(io.recv.ready + slot) == number; });
      const std::uint64_t arrived = failed ? bytes : P::loadRelaxed(io.recv.sizes + slot);
      if (arrived != bytes) {
        reportFailure<P>(a, at, KernelError::sizeMismatch, WaitKind{}, arrived, bytes);
        failed = true;
      }
    }
    return P::syncBlockOr(failed) ? nullptr : wire;
  }
  bool failed = false;
  if (a.protocol == ir::Protocol::ll) {
    const std::size_t lines = (bytes + 3) / 4;
    const auto* in = reinterpret_cast<const std::uint64_t*>(wire);
    auto* data = reinterpret_cast<std::uint32_t*>(io.recvBounce);
    const std::uint32_t flag = static_cast<std::uint32_t>(number);
    for (std::size_t l = P::thread(); l < lines && !failed; l += P::threads()) {
      std::uint64_t line = 0;
      failed = !spinUntil<P>(a, at, WaitKind::message, [&] {
        line = P::loadRelaxed(in + l);
        return static_cast<std::uint32_t>(line >> 32) == flag;
      });
      data[l] = static_cast<std::uint32_t>(line);
    }
  } else {
    const std::size_t lines = (bytes + 119) / 120;
    const int lane = P::thread() % P::kLineLanes;
    const std::size_t group = static_cast<std::size_t>(P::thread() / P::kLineLanes);
    const std::size_t groups = static_cast<std::size_t>(P::threads() / P::kLineLanes);
    const std::size_t rounds = (lines + groups - 1) / groups;
    auto* data = reinterpret_cast<std::uint64_t*>(io.recvBounce);
    for (std::size_t r = 0; r < rounds; ++r) {
      const std::size_t line = r * groups + group;
      const auto* in = reinterpret_cast<const std::uint64_t*>(wire) + line * 16;
      if (line < lines && lane == P::kLineLanes - 1 && !failed)
        failed = !spinUntil<P>(a, at, WaitKind::message,
                               [&] { return P::loadAcquire(in + 15) == number; });
      P::syncWarp();
      if (line < lines)
        for (int w = lane; w < 15; w += P::kLineLanes)
          data[line * 15 + static_cast<std::size_t>(w)] = P::loadRelaxed(in + w);
    }
  }
  return P::syncBlockOr(failed) ? nullptr : io.recvBounce;
}

// Releases the slot of message `number` to its sender (after a block barrier).
template <class P>
CHORUS_KERNEL_FN void endReceive(const KernelBlockIo& io, std::uint64_t number) {
  if (P::thread() == 0) P::storeRelease(io.recv.ack, number);
}

// Applies `op` to `n` elements, the block's threads taking 16-byte groups in turn; a group
// whose operands are all 16-byte aligned is loaded and stored as one 16-byte vector.
template <class P, typename T, class Combine>
CHORUS_KERNEL_FN void applyPiece(ir::OpKind op, const ir::StepOperands<T>& io, std::size_t n,
                                 Combine combine) {
  constexpr std::size_t kGroup = sizeof(T) < 16 ? 16 / sizeof(T) : 1;
  struct alignas(16) Pack {
    T v[kGroup];
  };
  const ir::OpSemantics& row = ir::opSemantics(op);
  const bool readsDst = row.value == ir::StepValue::dstOpSrc;
  auto aligned = [](const void* p) {
    return p == nullptr || reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
  };
  for (std::size_t i = static_cast<std::size_t>(P::thread()) * kGroup; i < n;
       i += static_cast<std::size_t>(P::threads()) * kGroup) {
    const std::size_t m = n - i < kGroup ? n - i : kGroup;
    const ir::StepOperands<T> at{io.src ? io.src + i : nullptr, io.dst ? io.dst + i : nullptr,
                                 io.received ? io.received + i : nullptr,
                                 io.sent ? io.sent + i : nullptr};
    if (m == kGroup && sizeof(T) * kGroup == 16 && aligned(at.src) && aligned(at.dst) &&
        aligned(at.received) && aligned(at.sent)) {
      Pack src{}, dst{}, received{}, sent{};
      if (at.src) P::load16(&src, at.src);
      if (at.dst && readsDst) P::load16(&dst, at.dst);
      if (at.received) P::load16(&received, at.received);
      const ir::StepOperands<T> local{at.src ? src.v : nullptr, at.dst ? dst.v : nullptr,
                                      at.received ? received.v : nullptr,
                                      at.sent ? sent.v : nullptr};
      ir::applyStep(op, local, kGroup, combine);
      if (at.dst && row.storesDst) P::store16(at.dst, &dst);
      if (at.sent) P::store16(at.sent, &sent);
    } else {
      ir::applyStep(op, at, m, combine);
    }
  }
}

// Runs one step on tile `tile` (elements offset..offset+len of each chunk it names). `sent` and
// `received` count the block's messages on its connections. False once the block must stop.
template <class P, typename T, ReduceOp Op>
CHORUS_KERNEL_FN bool runStep(const KernelArgs& a, const KernelBlockIo& io, const KernelStep& st,
                              std::size_t offset, std::size_t len, std::uint64_t& sent,
                              std::uint64_t& received, const BlockPlace& at) {
  const ir::OpKind op = st.op;
  const bool receives = ir::opReceives(op), sends = ir::opSends(op);
  if (!receives && !sends && ir::opSemantics(op).value == ir::StepValue::none) return true;
  const std::size_t bytes = static_cast<std::size_t>(st.count) * len * a.elemSize;
  const unsigned char* message = nullptr;
  unsigned char* outgoing = nullptr;
  if (receives && (message = beginReceive<P>(a, io, received + 1, bytes, at)) == nullptr)
    return false;
  if (sends && (outgoing = beginSend<P>(a, io, sent + 1, at)) == nullptr) return false;
  const bool usesSrc = ir::opReadsSrc(op);
  const bool usesDst = ir::opWritesDst(op) || ir::opReadsDst(op);
  for (std::int32_t p = 0; p < st.count; ++p) {
    const std::size_t piece = static_cast<std::size_t>(p) * len;
    ir::StepOperands<T> operands;
    if (usesSrc)
      operands.src = reinterpret_cast<const T*>(a.base[static_cast<int>(st.srcBuffer)]) +
                     static_cast<std::size_t>(st.srcIndex + p) * a.chunkElems + offset;
    if (usesDst)
      operands.dst = reinterpret_cast<T*>(a.base[static_cast<int>(st.dstBuffer)]) +
                     static_cast<std::size_t>(st.dstIndex + p) * a.chunkElems + offset;
    if (receives) operands.received = reinterpret_cast<const T*>(message) + piece;
    if (sends) operands.sent = reinterpret_cast<T*>(outgoing) + piece;
    applyPiece<P>(op, operands, len, Combine<T, Op>{});
  }
  P::syncBlock();
  if (sends) commitSend<P>(a, io, ++sent, bytes);
  if (receives) endReceive<P>(io, ++received);
  return true;
}

// Runs block `b` of the rank's program over every tile. Returns when it finished or failed
// (KernelArgs::status says which).
template <class P, typename T, ReduceOp Op>
CHORUS_KERNEL_FN void interpretBlock(const KernelArgs& a, int b) {
  const KernelBlock& block = a.blocks[b];
  const KernelBlockIo& io = a.io[b];
  std::uint64_t sent = io.send.counter ? *io.send.counter : 0;
  std::uint64_t received = io.recv.counter ? *io.recv.counter : 0;
  BlockPlace at{b, -1, 0, P::nowNs() + a.timeoutNs};
  bool ok = true;
  for (std::size_t tile = 0; ok && tile < a.tiles; ++tile) {
    at.tile = tile;
    const std::size_t offset = tile * a.tileElems;
    const std::size_t len =
        a.chunkElems - offset < a.tileElems ? a.chunkElems - offset : a.tileElems;
    for (std::int32_t s = 0; ok && s < block.stepCount; ++s) {
      at.step = s;
      const KernelStep& st = a.steps[block.firstStep + s];
      for (std::int32_t d = 0; ok && d < st.depCount; ++d) {
        const KernelDep& dep = a.deps[st.firstDep + d];
        const std::uint64_t need =
            tile * static_cast<std::uint64_t>(a.blocks[dep.block].stepCount) +
            static_cast<std::uint64_t>(dep.step) + 1;
        ok = blockWait<P>(a, at, WaitKind::dependency,
                          [&] { return P::loadAcquire(a.completed + dep.block) >= need; });
      }
      ok = ok && runStep<P, T, Op>(a, io, st, offset, len, sent, received, at);
      if (ok && P::thread() == 0)
        P::storeRelease(a.completed + b, tile * static_cast<std::uint64_t>(block.stepCount) +
                                             static_cast<std::uint64_t>(s) + 1);
    }
  }
  // The counters advance even on failure: a failed group is torn down, not reused.
  if (P::thread() == 0) {
    if (io.send.counter) *io.send.counter = sent;
    if (io.recv.counter) *io.recv.counter = received;
  }
}

// avg: data[i] /= divisor over `n` elements, the block's threads taking elements in turn.
template <class P, typename T>
CHORUS_KERNEL_FN void divideRange(T* data, std::size_t n, int divisor) {
  for (std::size_t i = static_cast<std::size_t>(P::thread()); i < n;
       i += static_cast<std::size_t>(P::threads()))
    data[i] = divideValue(data[i], divisor);
}

}  // namespace chorus::device
