#include "device/host_group.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "device/block_interpreter.h"
#include "device/call_layout.h"
#include "device/host_platform.h"
#include "device/kernel_failure.h"
#include "device/kernel_plan.h"
#include "device/type_dispatch.h"
#include "support/error.h"

namespace chorus::device {

// The group's state (named, not anonymous: HostKernelGroup::State holds it).
namespace host_group_detail {

// Zeroed host memory aligned to 128 bytes (a GPU allocation is aligned at least as much).
class AlignedBytes {
 public:
  unsigned char* resize(std::size_t bytes) {
    if (bytes + 128 > storage_.size()) storage_.assign(bytes + 128, 0);
    const auto address = reinterpret_cast<std::uintptr_t>(storage_.data());
    unsigned char* p = storage_.data() + (128 - address % 128) % 128;
    std::fill(p, p + bytes, 0);
    return p;
  }

 private:
  std::vector<unsigned char> storage_;
};

// One connection: its slots, flags and sizes (the receiver's memory), its ack (the sender's)
// and the two ends' message counters. Slots grow with the largest call's messages; lines left
// by earlier messages never match a newer message's flag, so they need no clearing.
struct ConnectionMemory {
  std::vector<unsigned char> slots;
  std::size_t slotBytes = 0;
  std::vector<std::uint64_t> ready, sizes;
  std::uint64_t ack = 0, sentCounter = 0, receivedCounter = 0;
};

class HostCallMemory final : public CallMemory {
 public:
  unsigned char* zeroed(ir::BufferKind kind, std::size_t bytes) override {
    return buffers_[static_cast<int>(kind)].resize(bytes);
  }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    std::memmove(dst, src, bytes);
  }

 private:
  AlignedBytes buffers_[3];
};

struct RankState {
  KernelPlan plan;
  std::vector<KernelBlockIo> io;
  std::vector<AlignedBytes> bounces;  // two per block
  std::vector<std::uint64_t> completed;
  KernelStatus status;
  std::uint32_t statusClaimed = 0;
  HostCallMemory memory;
  KernelArgs args;
};

}  // namespace host_group_detail

struct HostKernelGroup::State {
  using ConnectionMemory = host_group_detail::ConnectionMemory;
  using RankState = host_group_detail::RankState;
  ir::Algorithm algorithm;
  HostGroupOptions options;
  GroupWiring wiring;
  std::vector<ConnectionMemory> connections;
  std::vector<RankState> ranks;
  std::uint32_t abortFlag = 0;
  bool failed = false;
};

HostKernelGroup::HostKernelGroup(const ir::Algorithm& algorithm, const HostGroupOptions& options)
    : state_(std::make_unique<State>()) {
  if (options.slots == 0 || options.slotBytes == 0)
    throw OptionError("HostGroupOptions: slots and slotBytes must be at least 1");
  State& s = *state_;
  s.algorithm = algorithm;
  s.options = options;
  s.ranks.resize(algorithm.ranks.size());
  for (std::size_t r = 0; r < s.ranks.size(); ++r)
    s.ranks[r].plan = flattenRank(algorithm, static_cast<int>(r));
  s.wiring = wireGroup(algorithm);
  s.connections.resize(static_cast<std::size_t>(s.wiring.connections));
  for (State::ConnectionMemory& c : s.connections) {
    c.ready.assign(options.slots, 0);
    c.sizes.assign(options.slots, 0);
  }
}

HostKernelGroup::~HostKernelGroup() = default;

void HostKernelGroup::run(const std::vector<runtime::CollectiveArgs>& args,
                          std::chrono::milliseconds timeout) {
  State& s = *state_;
  const int n = static_cast<int>(s.ranks.size());
  if (s.failed)
    throw CommError(
        fmt::format("'{}' on the device interpreter (host build): an earlier call "
                    "failed; make a new group",
                    s.algorithm.name));
  if (static_cast<int>(args.size()) != n)
    throw OptionError(fmt::format("'{}' runs on {} ranks but {} ranks' buffers were given",
                                  s.algorithm.name, n, args.size()));
  const std::size_t elemSize = runtime::dataTypeSize(args[0].type);
  const KernelGeometry geometry =
      kernelGeometry(s.algorithm, args[0].count, elemSize, s.options.slotBytes);

  // Each connection's slots, at least this call's stride (a KernelFifo per end).
  std::vector<KernelFifo> sendEnd(s.connections.size()), recvEnd(s.connections.size());
  for (std::size_t c = 0; c < s.connections.size(); ++c) {
    State::ConnectionMemory& m = s.connections[c];
    const std::size_t bytes = s.options.slots * geometry.slotStride;
    // Grown slots start zeroed: a stale line read at a new alignment could look like a flag.
    if (m.slots.size() < bytes + 128) m.slots.assign(bytes + 128, 0);
    const auto address = reinterpret_cast<std::uintptr_t>(m.slots.data());
    unsigned char* slots = m.slots.data() + (128 - address % 128) % 128;
    sendEnd[c] = {slots, m.ready.data(), m.sizes.data(), &m.ack, &m.sentCounter};
    recvEnd[c] = {slots, m.ready.data(), m.sizes.data(), &m.ack, &m.receivedCounter};
  }
  std::vector<CallBuffers> calls(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    State::RankState& rank = s.ranks[static_cast<std::size_t>(r)];
    const std::size_t blocks = rank.plan.blocks.size();
    rank.io.resize(blocks);
    rank.bounces.resize(2 * blocks);
    rank.completed.assign(blocks, 0);
    for (std::size_t b = 0; b < blocks; ++b) {
      const int send = s.wiring.sendConnection[static_cast<std::size_t>(r)][b];
      const int recv = s.wiring.recvConnection[static_cast<std::size_t>(r)][b];
      if (send >= 0) rank.io[b].send = sendEnd[static_cast<std::size_t>(send)];
      if (recv >= 0) rank.io[b].recv = recvEnd[static_cast<std::size_t>(recv)];
      rank.io[b].sendBounce = rank.bounces[2 * b].resize(geometry.bounceBytes);
      rank.io[b].recvBounce = rank.bounces[2 * b + 1].resize(geometry.bounceBytes);
    }
    calls[static_cast<std::size_t>(r)] =
        prepareCall(s.algorithm, r, args[static_cast<std::size_t>(r)], geometry, rank.memory);
    KernelArgs& a = rank.args;
    a.blocks = rank.plan.blocks.data();
    a.blockCount = static_cast<std::int32_t>(blocks);
    a.steps = rank.plan.steps.data();
    a.deps = rank.plan.deps.data();
    a.io = rank.io.data();
    a.completed = rank.completed.data();
    std::copy(std::begin(calls[static_cast<std::size_t>(r)].base),
              std::end(calls[static_cast<std::size_t>(r)].base), std::begin(a.base));
    setCallFields(a, geometry, s.algorithm.protocol, s.options.slots, elemSize, timeout);
    a.rank = r;
    a.abortFlag = &s.abortFlag;
    a.status = &rank.status;
    a.statusClaimed = &rank.statusClaimed;
  }

  const runtime::CollectiveArgs& first = args[0];
  std::vector<std::thread> threads;
  for (State::RankState& rank : s.ranks)
    for (int b = 0; b < rank.args.blockCount; ++b)
      threads.emplace_back([&rank, b, &first] {
        dispatchType(first.type, first.op, [&]<typename T, ReduceOp Op>() {
          interpretBlock<HostPlatform, T, Op>(rank.args, b);
        });
      });
  for (std::thread& t : threads)
    t.join();
  if (s.abortFlag != 0) {
    s.failed = true;
    std::vector<KernelStatus> statuses;
    for (const State::RankState& rank : s.ranks)
      statuses.push_back(rank.status);
    throwKernelFailure(s.algorithm, statuses, timeout, "the device interpreter (host build)");
  }
  for (int r = 0; r < n; ++r) {
    State::RankState& rank = s.ranks[static_cast<std::size_t>(r)];
    const runtime::CollectiveArgs& a = args[static_cast<std::size_t>(r)];
    finishCall(s.algorithm, r, a, geometry, calls[static_cast<std::size_t>(r)], rank.memory);
    if (a.op == ReduceOp::avg && a.output && outputIsReduced(s.algorithm, r))
      dispatchType(a.type, ReduceOp::sum, [&]<typename T, ReduceOp>() {
        divideRange<HostPlatform>(static_cast<T*>(a.output),
                                  runtime::outputElements(s.algorithm, r, a.count), n);
      });
  }
}

runtime::RunReport runKernelsOnHost(const ir::Algorithm& algorithm,
                                    const runtime::RunOptions& options,
                                    const HostGroupOptions& group) {
  const int n = algorithm.nranks;
  if (!options.givenInputs.empty() && static_cast<int>(options.givenInputs.size()) != n)
    throw OptionError(fmt::format("'{}' runs on {} ranks but {} input buffers were given",
                                  algorithm.name, n, options.givenInputs.size()));
  HostKernelGroup kernels(algorithm, group);
  std::vector<std::unique_ptr<runtime::RankBuffers>> buffers;
  for (int r = 0; r < n; ++r)
    buffers.push_back(std::make_unique<runtime::RankBuffers>(algorithm, r, options));
  runtime::RunReport report;
  for (int iteration = 0; iteration < std::max(1, options.iterations); ++iteration) {
    std::vector<runtime::CollectiveArgs> args;
    for (auto& b : buffers) {
      b->reset();
      args.push_back({b->input(), b->output(), options.count, options.type, options.op});
    }
    const auto start = std::chrono::steady_clock::now();
    kernels.run(args, options.timeout);
    report.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  for (int r = 0; r < n; ++r) {
    runtime::checkRankOutput(algorithm, r, options, buffers[static_cast<std::size_t>(r)]->output(),
                             &report);
    runtime::checkRankInput(algorithm, r, options, buffers[static_cast<std::size_t>(r)]->input(),
                            &report);
  }
  return report;
}

}  // namespace chorus::device
