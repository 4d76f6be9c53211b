// The plain data one rank's device interpreter runs on (device layer): its plan flattened into
// arrays (blocks, steps, cross-block dependencies), the FIFOs each block sends and receives on,
// the call's buffers and tiling, and where it reports how it ended. Built on the host
// (kernel_plan.h, host_group.h, the CUDA launcher), read by the interpreter on the host build
// and on the GPU alike: no pointers to host-only objects, no virtuals, no STL.
#pragma once

#include <cstddef>
#include <cstdint>

#include "chorus/types.h"
#include "ir/algorithm.h"
#include "support/host_device.h"

namespace chorus::device {

struct KernelStep {
  ir::OpKind op = ir::OpKind::nop;
  ir::BufferKind srcBuffer = ir::BufferKind::input;
  ir::BufferKind dstBuffer = ir::BufferKind::input;
  std::int32_t srcIndex = 0;
  std::int32_t dstIndex = 0;
  std::int32_t count = 1;
  std::int32_t firstDep = 0;  // into KernelArgs::deps
  std::int32_t depCount = 0;
};

struct KernelDep {
  std::int32_t block = 0;
  std::int32_t step = 0;
};

struct KernelBlock {
  std::int32_t firstStep = 0;  // into KernelArgs::steps
  std::int32_t stepCount = 0;
};

// One direction of one connection as a block sees it. Slots, their flags and the sizes live in
// the receiver's memory; `ack` (messages the receiver has finished with) in the sender's; each
// side's `counter` (messages it sent or received on the connection, over all calls) in its own.
// The counters make every message's flag unique to it, so nothing is cleared between calls.
struct KernelFifo {
  unsigned char* slots = nullptr;  // slot s at slots + s * KernelArgs::slotStride
  std::uint64_t* ready = nullptr;  // Simple: per slot, the number (counter + 1) of its message
  std::uint64_t* sizes = nullptr;  // Simple: per slot, its message's payload bytes
  std::uint64_t* ack = nullptr;    // number of the last message the receiver released
  std::uint64_t* counter = nullptr;
};

// Per block: its FIFOs (null slots when it neither sends nor receives) and two bounce buffers
// in its own memory where LL and LL128 messages are packed and unpacked.
struct KernelBlockIo {
  KernelFifo send;
  KernelFifo recv;
  unsigned char* sendBounce = nullptr;
  unsigned char* recvBounce = nullptr;
};

// How a block ended. The first failure of a rank is the one reported.
enum class KernelError : std::uint32_t {
  none = 0,
  aborted,       // the group's abort flag was raised (a peer failed, or the caller aborted)
  timedOut,      // a wait passed the deadline
  sizeMismatch,  // a received message's size is not what the step expects
};

struct KernelStatus {
  KernelError error = KernelError::none;
  std::int32_t block = -1;  // where the first failure happened
  std::int32_t step = -1;
  std::uint64_t tile = 0;
  std::uint64_t arrived = 0;     // sizeMismatch: the bytes that arrived
  std::uint64_t expected = 0;    // and the bytes the step expects
  std::uint32_t waitingFor = 0;  // WaitKind of a timed-out wait
};

// What a timed-out wait waited for (KernelStatus::waitingFor).
enum class WaitKind : std::uint32_t { dependency = 1, message = 2, freeSlot = 3 };

struct KernelArgs {
  const KernelBlock* blocks = nullptr;
  std::int32_t blockCount = 0;
  const KernelStep* steps = nullptr;
  const KernelDep* deps = nullptr;
  KernelBlockIo* io = nullptr;         // per block
  std::uint64_t* completed = nullptr;  // per block: steps finished in this call (zeroed first)
  unsigned char* base[3] = {nullptr, nullptr, nullptr};  // by ir::BufferKind, chunk-major
  std::size_t chunkElems = 0;
  std::size_t elemSize = 0;
  std::size_t tileElems = 0;
  std::size_t tiles = 0;
  ir::Protocol protocol = ir::Protocol::simple;
  std::uint32_t slotCount = 0;  // slots per FIFO
  std::size_t slotStride = 0;   // bytes between slots (payload, or its LL/LL128 lines)
  std::int32_t rank = 0;
  std::uint32_t* abortFlag = nullptr;   // shared by the group; non-zero: stop
  std::uint32_t* failedRank = nullptr;  // shared; the first failing rank + 1 (null: not kept)
  std::uint64_t timeoutNs = 0;          // a block's waits give up this long after it starts
  KernelStatus* status = nullptr;       // per rank; written once, by the first failing block
  std::uint32_t* statusClaimed = nullptr;
};

// Bytes one slot needs for `payload` bytes of a message in `protocol`: LL carries 4 bytes of
// data in each 8-byte line, LL128 120 in each 128-byte line; rounded up to 128 bytes.
CHORUS_HD constexpr std::size_t slotWireBytes(ir::Protocol protocol, std::size_t payload) {
  std::size_t wire = payload;
  if (protocol == ir::Protocol::ll) wire = (payload + 3) / 4 * 8;
  if (protocol == ir::Protocol::ll128) wire = (payload + 119) / 120 * 128;
  return (wire + 127) / 128 * 128;
}

}  // namespace chorus::device
