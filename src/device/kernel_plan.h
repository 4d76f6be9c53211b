// What the host derives from an ir::Algorithm before the device interpreter runs it (device
// layer): each rank's program flattened into KernelBlock/KernelStep/KernelDep arrays, the
// group's connections (which block of which rank sends to which), and a call's geometry (chunk
// size, tiling, slot size), the same tiling the CPU interpreter and the simulator use
// (ir/tiling.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "device/kernel_types.h"
#include "ir/algorithm.h"

namespace chorus::device {

struct KernelPlan {
  std::vector<KernelBlock> blocks;
  std::vector<KernelStep> steps;
  std::vector<KernelDep> deps;
};

// `rank`'s program as arrays. Throws PlanError for a one-sided op or a step naming its own peer
// or channel (ir/step_endpoints.h): the interpreter runs two-sided plans.
KernelPlan flattenRank(const ir::Algorithm& algorithm, int rank);

// The group's connections: one per (sender rank, receiver rank, channel) that some block sends
// on, with exactly one block at each end.
struct GroupWiring {
  int connections = 0;
  std::vector<std::vector<int>> sendConnection;  // [rank][block]: connection or -1
  std::vector<std::vector<int>> recvConnection;  // [rank][block]: connection or -1
  std::vector<int> receiverOf;                   // [connection]: the receiving rank
  std::vector<int> senderOf;                     // [connection]: the sending rank
};

// Throws PlanError when two blocks of a rank send to (receive from) the same peer on the same
// channel, or a block sends where no block of the peer receives (or the reverse).
GroupWiring wireGroup(const ir::Algorithm& algorithm);

// A call's geometry for `count` elements (CollectiveArgs::count) of `elemSize` bytes.
struct KernelGeometry {
  std::size_t chunkElems = 0;  // ceil(block elements / chunks per block)
  bool divisible = false;      // the chunks cut the call's blocks exactly (no staging)
  std::size_t tileElems = 0;
  std::size_t tiles = 0;
  std::size_t payloadBytes = 0;  // the largest message's payload
  std::size_t slotStride = 0;    // bytes per slot (its lines for LL and LL128), 128-aligned
  std::size_t bounceBytes = 0;   // per block and direction, for LL and LL128 (un)packing
};

// `slotBytes`: the most payload one Simple message carries; LL and LL128 messages are also
// capped at ir::protocolMessageCap.
KernelGeometry kernelGeometry(const ir::Algorithm& algorithm, std::size_t count,
                              std::size_t elemSize, std::size_t slotBytes);

// Sets the fields of `args` that one call fixes for every rank: the geometry, the plan's
// protocol, the slots per FIFO, the element size and the timeout of every wait.
void setCallFields(KernelArgs& args, const KernelGeometry& geometry, ir::Protocol protocol,
                   std::uint32_t slots, std::size_t elemSize, std::chrono::milliseconds timeout);

}  // namespace chorus::device
