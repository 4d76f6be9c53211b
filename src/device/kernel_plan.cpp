#include "device/kernel_plan.h"

#include <map>
#include <tuple>

#include <fmt/format.h>

#include "ir/step_endpoints.h"
#include "ir/tiling.h"
#include "support/error.h"

namespace chorus::device {

KernelPlan flattenRank(const ir::Algorithm& algorithm, int rank) {
  ir::requireStepEndpoints(algorithm, "run on the device interpreter");
  ir::requireTwoSidedOps(algorithm, "the device interpreter");
  KernelPlan plan;
  const ir::RankProgram& program = algorithm.ranks.at(static_cast<std::size_t>(rank));
  for (const ir::Threadblock& tb : program.threadblocks) {
    plan.blocks.push_back(
        {static_cast<std::int32_t>(plan.steps.size()), static_cast<std::int32_t>(tb.steps.size())});
    for (const ir::Step& s : tb.steps) {
      KernelStep k;
      k.op = s.op;
      k.srcBuffer = s.srcBuffer;
      k.dstBuffer = s.dstBuffer;
      k.srcIndex = s.srcIndex;
      k.dstIndex = s.dstIndex;
      k.count = s.count;
      k.firstDep = static_cast<std::int32_t>(plan.deps.size());
      k.depCount = static_cast<std::int32_t>(s.deps.size());
      for (const ir::StepRef& dep : s.deps)
        plan.deps.push_back({dep.tb, dep.step});
      plan.steps.push_back(k);
    }
  }
  return plan;
}

namespace {

bool blockSends(const ir::Threadblock& tb) {
  for (const ir::Step& s : tb.steps)
    if (ir::opSends(s.op)) return true;
  return false;
}

bool blockReceives(const ir::Threadblock& tb) {
  for (const ir::Step& s : tb.steps)
    if (ir::opReceives(s.op)) return true;
  return false;
}

}  // namespace

GroupWiring wireGroup(const ir::Algorithm& algorithm) {
  GroupWiring wiring;
  using Key = std::tuple<int, int, int>;  // sender, receiver, channel
  struct Ends {
    int sendBlock = -1, recvBlock = -1;
  };
  std::map<Key, Ends> ends;
  const int n = static_cast<int>(algorithm.ranks.size());
  for (int r = 0; r < n; ++r) {
    for (const ir::Threadblock& tb : algorithm.ranks[static_cast<std::size_t>(r)].threadblocks) {
      if (tb.sendPeer >= 0 && blockSends(tb)) {
        Ends& e = ends[{r, tb.sendPeer, tb.channel}];
        if (e.sendBlock >= 0)
          throw PlanError(fmt::format(
              "rank {} threadblocks {} and {} both send to rank {} on channel {}: give each a "
              "channel of its own",
              r, e.sendBlock, tb.id, tb.sendPeer, tb.channel));
        e.sendBlock = tb.id;
      }
      if (tb.recvPeer >= 0 && blockReceives(tb)) {
        Ends& e = ends[{tb.recvPeer, r, tb.channel}];
        if (e.recvBlock >= 0)
          throw PlanError(fmt::format(
              "rank {} threadblocks {} and {} both receive from rank {} on channel {}: give each "
              "a channel of its own",
              r, e.recvBlock, tb.id, tb.recvPeer, tb.channel));
        e.recvBlock = tb.id;
      }
    }
  }
  wiring.sendConnection.resize(static_cast<std::size_t>(n));
  wiring.recvConnection.resize(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    const std::size_t blocks = algorithm.ranks[static_cast<std::size_t>(r)].threadblocks.size();
    wiring.sendConnection[static_cast<std::size_t>(r)].assign(blocks, -1);
    wiring.recvConnection[static_cast<std::size_t>(r)].assign(blocks, -1);
  }
  for (const auto& [key, e] : ends) {
    const auto [from, to, channel] = key;
    if (to < 0 || to >= n || from < 0 || from >= n)
      throw PlanError(
          fmt::format("a threadblock of rank {} names peer rank {}, outside the plan's "
                      "{} ranks",
                      to < 0 || to >= n ? from : to, to < 0 || to >= n ? to : from, n));
    if (e.sendBlock < 0 || e.recvBlock < 0)
      throw PlanError(fmt::format(
          "rank {} {} rank {} on channel {}, but no threadblock of rank {} {} it: the plan's "
          "sends and receives must pair up (chorus verify names the steps)",
          e.sendBlock < 0 ? to : from, e.sendBlock < 0 ? "receives from" : "sends to",
          e.sendBlock < 0 ? from : to, channel, e.sendBlock < 0 ? from : to,
          e.sendBlock < 0 ? "sends to" : "receives from"));
    const int c = wiring.connections++;
    wiring.sendConnection[static_cast<std::size_t>(from)][static_cast<std::size_t>(e.sendBlock)] =
        c;
    wiring.recvConnection[static_cast<std::size_t>(to)][static_cast<std::size_t>(e.recvBlock)] = c;
    wiring.senderOf.push_back(from);
    wiring.receiverOf.push_back(to);
  }
  return wiring;
}

KernelGeometry kernelGeometry(const ir::Algorithm& algorithm, std::size_t count,
                              std::size_t elemSize, std::size_t slotBytes) {
  KernelGeometry g;
  const std::size_t q = ir::chunksPerBlock(algorithm);
  g.chunkElems = (count + q - 1) / q;
  g.divisible = count % q == 0;
  const std::size_t messageChunks = ir::largestMessageChunks(algorithm);
  const ir::Tiling tiling = ir::tileChunks(
      g.chunkElems, elemSize, ir::messageBytes(algorithm.protocol, slotBytes), messageChunks);
  g.tileElems = tiling.tileElems;
  g.tiles = tiling.tiles;
  g.payloadBytes = g.tileElems * messageChunks * elemSize;
  g.slotStride = slotWireBytes(algorithm.protocol, g.payloadBytes);
  // LL reads whole 4-byte words and LL128 whole 120-byte lines of the bounce buffers.
  g.bounceBytes = (g.payloadBytes + 119) / 120 * 120 + 128;
  return g;
}

void setCallFields(KernelArgs& args, const KernelGeometry& geometry, ir::Protocol protocol,
                   std::uint32_t slots, std::size_t elemSize, std::chrono::milliseconds timeout) {
  args.chunkElems = geometry.chunkElems;
  args.elemSize = elemSize;
  args.tileElems = geometry.tileElems;
  args.tiles = geometry.tiles;
  args.protocol = protocol;
  args.slotCount = slots;
  args.slotStride = geometry.slotStride;
  args.timeoutNs = static_cast<std::uint64_t>(std::chrono::nanoseconds(timeout).count());
}

}  // namespace chorus::device
