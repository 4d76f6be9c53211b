#include "cuda/cuda_group.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "cuda/cuda_memory.h"
#include "cuda/kernel_launch.h"
#include "device/call_layout.h"
#include "device/kernel_failure.h"
#include "device/kernel_plan.h"
#include "support/error.h"

namespace chorus::cuda {

namespace {

// A connection's flags and counters, in the receiver's memory: ready[slots], sizes[slots], then
// the ack and the two ends' message counters.
std::size_t controlWords(std::uint32_t slots) {
  return 2 * static_cast<std::size_t>(slots) + 3;
}

}  // namespace

int visibleDevices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it
    return 0;
  }
  return count;
}

std::string describeDevice(int device) {
  cudaDeviceProp prop{};
  if (device < 0 || device >= visibleDevices() ||
      cudaGetDeviceProperties(&prop, device) != cudaSuccess)
    return "";
  return fmt::format("{} (sm_{}{}, {:.1f} GiB)", prop.name, prop.major, prop.minor,
                     static_cast<double>(prop.totalGlobalMem) / (1u << 30));
}

namespace cuda_group_detail {

struct Connection {
  int sender = 0, receiver = 0;
  DeviceBytes control, slots;
  std::uint64_t* words = nullptr;
};

struct Rank {
  int device = 0;
  int lane = 0;                 // index into State::lanes
  std::size_t completedAt = 0;  // its blocks' counters in the lane's `completed`
  device::KernelPlan plan;
  cudaEvent_t ready = nullptr;  // recorded on the caller's stream before each call
  DeviceBytes blocks, steps, deps, io, bounces;
  std::vector<device::KernelBlockIo> uploadedIo;  // what `io` holds
  std::size_t bounceBytes = 0;                    // what `bounces` holds
  CudaCallMemory memory;
};

// The ranks on one GPU: one stream, one launch per call, one array of completion counters.
struct Lane {
  int device = 0;
  cudaStream_t stream = nullptr;
  cudaEvent_t done = nullptr;  // recorded after each call, for the callers' streams
  std::vector<int> ranks;
  DeviceBytes completed;
  std::size_t counters = 0;
  std::map<std::pair<DataType, ReduceOp>, int> resident;  // residentBlocks, asked once
};

}  // namespace cuda_group_detail

struct CudaKernelGroup::State {
  ir::Algorithm algorithm;
  CudaGroupOptions options;
  device::GroupWiring wiring;
  std::vector<cuda_group_detail::Connection> connections;
  std::vector<cuda_group_detail::Rank> ranks;
  std::vector<cuda_group_detail::Lane> lanes;
  MappedHost<std::uint32_t> abortFlag{1};
  std::unique_ptr<MappedHost<device::KernelStatus>> statuses;
  std::unique_ptr<MappedHost<std::uint32_t>> claimed;
  std::mutex abortMutex;
  std::string abortReason;
  std::size_t slotStride = 0;            // of the connections' slots now
  std::chrono::milliseconds timeout{0};  // of the calls in flight
  bool pending = false;
  bool failed = false;

  // Waits for everything on the lanes' GPUs, the synchronous set-up copies and memsets included:
  // those run on the legacy stream, which the lanes' non-blocking streams do not wait for.
  void settle() {
    for (cuda_group_detail::Lane& lane : lanes) {
      check(cudaSetDevice(lane.device), "cudaSetDevice");
      check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    }
  }

  void syncLanes() {
    for (cuda_group_detail::Lane& lane : lanes) {
      check(cudaSetDevice(lane.device), "cudaSetDevice");
      const cudaError_t e = cudaStreamSynchronize(lane.stream);
      if (e != cudaSuccess) failed = true;
      check(e, "cudaStreamSynchronize");
    }
  }
};

CudaKernelGroup::CudaKernelGroup(const ir::Algorithm& algorithm, const CudaGroupOptions& options)
    : state_(nullptr) {
  const int visible = visibleDevices();
  if (visible == 0)
    throw CommError(
        "no CUDA GPU is visible to this process: run it where one is (check nvidia-smi and "
        "CUDA_VISIBLE_DEVICES), or use the CPU executor");
  if (options.slots == 0 || options.slotBytes == 0)
    throw OptionError("CudaGroupOptions: slots and slotBytes must be at least 1");
  const int n = algorithm.nranks;
  if (!options.devices.empty() && static_cast<int>(options.devices.size()) != n)
    throw OptionError(fmt::format("'{}' runs on {} ranks but {} GPUs were named", algorithm.name, n,
                                  options.devices.size()));
  state_ = std::make_unique<State>();
  State& s = *state_;
  s.algorithm = algorithm;
  s.options = options;
  s.wiring = device::wireGroup(algorithm);
  const CurrentDeviceGuard guard;
  const int current = guard.device();
  s.ranks.resize(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    cuda_group_detail::Rank& rank = s.ranks[static_cast<std::size_t>(r)];
    rank.device = options.devices.empty() ? current : options.devices[static_cast<std::size_t>(r)];
    if (rank.device < 0 || rank.device >= visible)
      throw CommError(fmt::format("rank {} is to run on GPU {}, but this process sees {} GPU(s)", r,
                                  rank.device, visible));
    rank.plan = device::flattenRank(algorithm, r);
    auto lane = std::find_if(s.lanes.begin(), s.lanes.end(), [&](const cuda_group_detail::Lane& l) {
      return l.device == rank.device;
    });
    if (lane == s.lanes.end()) {
      cuda_group_detail::Lane& added = s.lanes.emplace_back();
      added.device = rank.device;
      check(cudaSetDevice(rank.device), "cudaSetDevice");
      check(cudaStreamCreateWithFlags(&added.stream, cudaStreamNonBlocking), "cudaStreamCreate");
      check(cudaEventCreateWithFlags(&added.done, cudaEventDisableTiming), "cudaEventCreate");
      lane = s.lanes.end() - 1;
    }
    rank.lane = static_cast<int>(lane - s.lanes.begin());
    lane->ranks.push_back(r);
    rank.completedAt = lane->counters;
    lane->counters += rank.plan.blocks.size();
    rank.memory.device = rank.device;
    rank.memory.stream = lane->stream;
    check(cudaEventCreateWithFlags(&rank.ready, cudaEventDisableTiming), "cudaEventCreate");
    upload(rank.blocks, rank.device, rank.plan.blocks);
    upload(rank.steps, rank.device, rank.plan.steps);
    upload(rank.deps, rank.device, rank.plan.deps);
  }
  s.connections.resize(static_cast<std::size_t>(s.wiring.connections));
  for (int c = 0; c < s.wiring.connections; ++c) {
    cuda_group_detail::Connection& conn = s.connections[static_cast<std::size_t>(c)];
    conn.sender = s.wiring.senderOf[static_cast<std::size_t>(c)];
    conn.receiver = s.wiring.receiverOf[static_cast<std::size_t>(c)];
    const int from = s.ranks[static_cast<std::size_t>(conn.sender)].device;
    const int to = s.ranks[static_cast<std::size_t>(conn.receiver)].device;
    if (from != to) {  // the sender writes into the receiver's memory
      int can = 0;
      check(cudaDeviceCanAccessPeer(&can, from, to), "cudaDeviceCanAccessPeer");
      if (!can)
        throw CommError(fmt::format(
            "rank {} on GPU {} sends to rank {} on GPU {}, but GPU {} cannot map GPU {}'s "
            "memory (no peer access): place them on GPUs that can, or on one GPU",
            conn.sender, from, conn.receiver, to, from, to));
      check(cudaSetDevice(from), "cudaSetDevice");
      const cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled)
        cudaGetLastError();
      else
        check(e, "cudaDeviceEnablePeerAccess");
    }
    const std::size_t bytes = controlWords(options.slots) * sizeof(std::uint64_t);
    conn.words = reinterpret_cast<std::uint64_t*>(conn.control.reserve(to, bytes));
    check(cudaMemset(conn.words, 0, bytes), "cudaMemset");
  }
  for (cuda_group_detail::Lane& lane : s.lanes)
    lane.completed.reserve(lane.device, lane.counters * sizeof(std::uint64_t));
  s.statuses = std::make_unique<MappedHost<device::KernelStatus>>(static_cast<std::size_t>(n));
  s.claimed = std::make_unique<MappedHost<std::uint32_t>>(static_cast<std::size_t>(n));
  s.settle();
}

CudaKernelGroup::~CudaKernelGroup() {
  if (!state_) return;
  for (cuda_group_detail::Lane& lane : state_->lanes)
    if (lane.stream) {
      cudaSetDevice(lane.device);
      cudaStreamSynchronize(lane.stream);
      cudaStreamDestroy(lane.stream);
      if (lane.done) cudaEventDestroy(lane.done);
    }
  for (cuda_group_detail::Rank& rank : state_->ranks)
    if (rank.ready) cudaEventDestroy(rank.ready);
}

void CudaKernelGroup::abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(state_->abortMutex);
    if (state_->abortReason.empty()) state_->abortReason = reason;
  }
  std::atomic_ref<std::uint32_t>(*state_->abortFlag.host()).store(1, std::memory_order_release);
}

void CudaKernelGroup::run(const std::vector<runtime::CollectiveArgs>& args,
                          std::chrono::milliseconds timeout) {
  enqueue(args, timeout);
  synchronize();
}

void CudaKernelGroup::enqueue(const std::vector<runtime::CollectiveArgs>& args,
                              std::chrono::milliseconds timeout,
                              const std::vector<cudaStream_t>* streams) {
  State& s = *state_;
  const int n = static_cast<int>(s.ranks.size());
  if (s.failed)
    throw CommError(
        fmt::format("'{}' on the GPU: an earlier call failed; make a new group", s.algorithm.name));
  if (static_cast<int>(args.size()) != n)
    throw OptionError(fmt::format("'{}' runs on {} ranks but {} ranks' buffers were given",
                                  s.algorithm.name, n, args.size()));
  for (const runtime::CollectiveArgs& a : args)
    if (a.count != args[0].count || a.type != args[0].type || a.op != args[0].op)
      throw OptionError(fmt::format(
          "'{}' on the GPU: every rank of a call must pass the same count, type and operator",
          s.algorithm.name));
  if (streams && static_cast<int>(streams->size()) != n)
    throw OptionError(fmt::format("'{}' runs on {} ranks but {} streams were given",
                                  s.algorithm.name, n, streams->size()));
  const std::size_t elemSize = runtime::dataTypeSize(args[0].type);
  const device::KernelGeometry geometry =
      device::kernelGeometry(s.algorithm, args[0].count, elemSize, s.options.slotBytes);
  const std::uint32_t slots = s.options.slots;
  const CurrentDeviceGuard guard;
  for (cuda_group_detail::Lane& lane : s.lanes) {
    auto [known, added] = lane.resident.try_emplace({args[0].type, args[0].op}, 0);
    if (added)
      check(residentBlocks(args[0].type, args[0].op, lane.device, &known->second),
            "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    if (lane.counters > static_cast<std::size_t>(known->second))
      throw CommError(fmt::format(
          "'{}' needs {} blocks running at once on GPU {} ({} ranks there), but it holds {} of "
          "the interpreter's: its blocks wait for each other, so put fewer ranks on that GPU or "
          "use a plan with fewer threadblocks",
          s.algorithm.name, lane.counters, lane.device, lane.ranks.size(), known->second));
  }
  // The call starts after the callers' streams' work so far.
  if (streams)
    for (int r = 0; r < n; ++r) {
      cuda_group_detail::Rank& rank = s.ranks[static_cast<std::size_t>(r)];
      check(cudaSetDevice(rank.device), "cudaSetDevice");
      check(cudaEventRecord(rank.ready, (*streams)[static_cast<std::size_t>(r)]),
            "cudaEventRecord");
      check(cudaStreamWaitEvent(s.lanes[static_cast<std::size_t>(rank.lane)].stream, rank.ready, 0),
            "cudaStreamWaitEvent");
    }
  // Larger slots or new FIFO addresses: let the calls in flight finish before anything they
  // read moves.
  const bool regrow = geometry.slotStride > s.slotStride;
  if (regrow && s.pending) {
    s.syncLanes();
    s.pending = false;
  }
  bool setUp = false;  // synchronous set-up work the launches must wait for (settle())
  std::vector<device::KernelFifo> sendEnd(s.connections.size()), recvEnd(s.connections.size());
  for (std::size_t c = 0; c < s.connections.size(); ++c) {
    cuda_group_detail::Connection& conn = s.connections[c];
    unsigned char* before = conn.slots.data();
    unsigned char* data = conn.slots.reserve(
        s.ranks[static_cast<std::size_t>(conn.receiver)].device, slots * geometry.slotStride);
    // New slot memory may hold anything, LL lines of an earlier group included: zero it, so no
    // line carries a flag this connection's messages will use.
    if (data != before) {
      check(cudaMemset(data, 0, slots * geometry.slotStride), "cudaMemset");
      setUp = true;
    }
    std::uint64_t* w = conn.words;
    sendEnd[c] = {data, w, w + slots, w + 2 * slots, w + 2 * slots + 1};
    recvEnd[c] = {data, w, w + slots, w + 2 * slots, w + 2 * slots + 2};
  }
  if (regrow) s.slotStride = geometry.slotStride;
  for (cuda_group_detail::Lane& lane : s.lanes) {
    check(cudaSetDevice(lane.device), "cudaSetDevice");
    check(cudaMemsetAsync(lane.completed.data(), 0, lane.counters * sizeof(std::uint64_t),
                          lane.stream),
          "cudaMemsetAsync");
  }
  std::vector<device::KernelArgs> kernelArgs(static_cast<std::size_t>(n));
  std::vector<device::CallBuffers> calls(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    cuda_group_detail::Rank& rank = s.ranks[static_cast<std::size_t>(r)];
    cuda_group_detail::Lane& lane = s.lanes[static_cast<std::size_t>(rank.lane)];
    check(cudaSetDevice(rank.device), "cudaSetDevice");
    const std::size_t blocks = rank.plan.blocks.size();
    const std::size_t bounceBytes = 2 * blocks * geometry.bounceBytes;
    unsigned char* bounces = rank.bounces.data();
    std::vector<device::KernelBlockIo> io(blocks);
    for (std::size_t b = 0; b < blocks; ++b) {
      const int send = s.wiring.sendConnection[static_cast<std::size_t>(r)][b];
      const int recv = s.wiring.recvConnection[static_cast<std::size_t>(r)][b];
      if (send >= 0) io[b].send = sendEnd[static_cast<std::size_t>(send)];
      if (recv >= 0) io[b].recv = recvEnd[static_cast<std::size_t>(recv)];
    }
    // The bounce buffers and the FIFO addresses change only when messages grow.
    const auto sameIo = [&] {
      if (rank.uploadedIo.size() != blocks || bounceBytes > rank.bounceBytes) return false;
      for (std::size_t b = 0; b < blocks; ++b) {
        io[b].sendBounce = rank.uploadedIo[b].sendBounce;
        io[b].recvBounce = rank.uploadedIo[b].recvBounce;
      }
      return std::memcmp(io.data(), rank.uploadedIo.data(),
                         blocks * sizeof(device::KernelBlockIo)) == 0 &&
             !regrow;
    };
    if (!sameIo()) {
      if (s.pending) {
        s.syncLanes();
        s.pending = false;
      }
      bounces = rank.bounces.reserve(rank.device, bounceBytes);
      rank.bounceBytes = std::max(rank.bounceBytes, bounceBytes);
      for (std::size_t b = 0; b < blocks; ++b) {
        io[b].sendBounce = bounces + 2 * b * geometry.bounceBytes;
        io[b].recvBounce = bounces + (2 * b + 1) * geometry.bounceBytes;
      }
      upload(rank.io, rank.device, io);
      rank.uploadedIo = io;
      setUp = true;
    }
    device::KernelArgs& a = kernelArgs[static_cast<std::size_t>(r)];
    a.blocks = reinterpret_cast<const device::KernelBlock*>(rank.blocks.data());
    a.blockCount = static_cast<std::int32_t>(blocks);
    a.steps = reinterpret_cast<const device::KernelStep*>(rank.steps.data());
    a.deps = reinterpret_cast<const device::KernelDep*>(rank.deps.data());
    a.io = reinterpret_cast<device::KernelBlockIo*>(rank.io.data());
    a.completed = reinterpret_cast<std::uint64_t*>(lane.completed.data()) + rank.completedAt;
    calls[static_cast<std::size_t>(r)] = device::prepareCall(
        s.algorithm, r, args[static_cast<std::size_t>(r)], geometry, rank.memory);
    for (int k = 0; k < 3; ++k)
      a.base[k] = calls[static_cast<std::size_t>(r)].base[k];
    device::setCallFields(a, geometry, s.algorithm.protocol, slots, elemSize, timeout);
    a.rank = r;
    a.abortFlag = s.abortFlag.device();
    a.status = s.statuses->device() + r;
    a.statusClaimed = s.claimed->device() + r;
  }
  if (setUp) s.settle();
  // One launch per GPU (per kMaxRanksPerLaunch ranks of it), then each rank's copies out.
  for (cuda_group_detail::Lane& lane : s.lanes) {
    check(cudaSetDevice(lane.device), "cudaSetDevice");
    for (std::size_t first = 0; first < lane.ranks.size(); first += kMaxRanksPerLaunch) {
      GroupLaunch launch;
      for (std::size_t i = first; i < lane.ranks.size() && i < first + kMaxRanksPerLaunch; ++i) {
        const device::KernelArgs& a = kernelArgs[static_cast<std::size_t>(lane.ranks[i])];
        launch.ranks[launch.rankCount] = a;
        launch.blockStart[launch.rankCount + 1] =
            launch.blockStart[launch.rankCount] + a.blockCount;
        ++launch.rankCount;
      }
      check(launchGroup(launch, args[0].type, args[0].op, lane.stream), "kernel launch");
    }
  }
  for (int r = 0; r < n; ++r) {
    cuda_group_detail::Rank& rank = s.ranks[static_cast<std::size_t>(r)];
    const runtime::CollectiveArgs& call = args[static_cast<std::size_t>(r)];
    check(cudaSetDevice(rank.device), "cudaSetDevice");
    device::finishCall(s.algorithm, r, call, geometry, calls[static_cast<std::size_t>(r)],
                       rank.memory);
    if (call.op == ReduceOp::avg && call.output && device::outputIsReduced(s.algorithm, r))
      check(launchDivide(call.output, runtime::outputElements(s.algorithm, r, call.count),
                         call.type, n, rank.memory.stream),
            "kernel launch");
  }
  // The callers' later work waits for the call.
  if (streams) {
    for (cuda_group_detail::Lane& lane : s.lanes) {
      check(cudaSetDevice(lane.device), "cudaSetDevice");
      check(cudaEventRecord(lane.done, lane.stream), "cudaEventRecord");
    }
    for (int r = 0; r < n; ++r) {
      const cuda_group_detail::Rank& rank = s.ranks[static_cast<std::size_t>(r)];
      check(cudaSetDevice(rank.device), "cudaSetDevice");
      check(cudaStreamWaitEvent((*streams)[static_cast<std::size_t>(r)],
                                s.lanes[static_cast<std::size_t>(rank.lane)].done, 0),
            "cudaStreamWaitEvent");
    }
  }
  s.timeout = timeout;
  s.pending = true;
}

void CudaKernelGroup::synchronize() {
  State& s = *state_;
  const int n = static_cast<int>(s.ranks.size());
  const CurrentDeviceGuard guard;
  s.syncLanes();
  s.pending = false;
  if (std::atomic_ref<std::uint32_t>(*s.abortFlag.host()).load(std::memory_order_acquire) != 0) {
    s.failed = true;
    std::vector<device::KernelStatus> statuses(s.statuses->host(), s.statuses->host() + n);
    std::string reason;
    {
      std::lock_guard<std::mutex> lock(s.abortMutex);
      reason = s.abortReason;
    }
    device::throwKernelFailure(s.algorithm, statuses, s.timeout, "the GPU", reason);
  }
}

runtime::RunReport runKernelsOnGpu(const ir::Algorithm& algorithm,
                                   const runtime::RunOptions& options,
                                   const CudaGroupOptions& group) {
  const int n = algorithm.nranks;
  CudaKernelGroup kernels(algorithm, group);
  const CurrentDeviceGuard guard;
  const std::size_t elemSize = runtime::dataTypeSize(options.type);
  std::vector<std::unique_ptr<runtime::RankBuffers>> buffers;
  std::vector<DeviceBytes> deviceIn(static_cast<std::size_t>(n)),
      deviceOut(static_cast<std::size_t>(n));
  std::vector<runtime::CollectiveArgs> args(static_cast<std::size_t>(n));
  std::vector<std::size_t> inBytes(static_cast<std::size_t>(n)),
      outBytes(static_cast<std::size_t>(n));
  std::vector<std::ptrdiff_t> aliasAt(static_cast<std::size_t>(n), -1);  // input inside output
  for (int r = 0; r < n; ++r) {
    const auto i = static_cast<std::size_t>(r);
    buffers.push_back(std::make_unique<runtime::RankBuffers>(algorithm, r, options));
    const int device = group.devices.empty() ? guard.device() : group.devices[i];
    inBytes[i] = runtime::inputElements(algorithm, r, options.count) * elemSize;
    outBytes[i] = runtime::outputElements(algorithm, r, options.count) * elemSize;
    const auto* in = static_cast<const unsigned char*>(buffers[i]->input());
    const auto* out = static_cast<const unsigned char*>(buffers[i]->output());
    if (in >= out && in < out + outBytes[i]) aliasAt[i] = in - out;
    unsigned char* dOut = deviceOut[i].reserve(device, outBytes[i]);
    unsigned char* dIn =
        aliasAt[i] >= 0 ? dOut + aliasAt[i] : deviceIn[i].reserve(device, inBytes[i]);
    args[i] = {dIn, dOut, options.count, options.type, options.op};
  }
  runtime::RunReport report;
  for (int iteration = 0; iteration < std::max(1, options.iterations); ++iteration) {
    for (int r = 0; r < n; ++r) {
      const auto i = static_cast<std::size_t>(r);
      buffers[i]->reset();
      check(cudaMemcpy(args[i].output, buffers[i]->output(), outBytes[i], cudaMemcpyHostToDevice),
            "cudaMemcpy");
      if (aliasAt[i] < 0)
        check(cudaMemcpy(const_cast<void*>(args[i].input), buffers[i]->input(), inBytes[i],
                         cudaMemcpyHostToDevice),
              "cudaMemcpy");
    }
    // The copies above ran on the legacy stream; the group's streams do not wait for it.
    for (int r = 0; r < n; ++r) {
      check(cudaSetDevice(group.devices.empty() ? guard.device()
                                                : group.devices[static_cast<std::size_t>(r)]),
            "cudaSetDevice");
      check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    }
    const auto start = std::chrono::steady_clock::now();
    kernels.run(args, options.timeout);
    report.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  for (int r = 0; r < n; ++r) {
    const auto i = static_cast<std::size_t>(r);
    check(cudaMemcpy(buffers[i]->output(), args[i].output, outBytes[i], cudaMemcpyDeviceToHost),
          "cudaMemcpy");
    if (aliasAt[i] < 0)
      check(cudaMemcpy(const_cast<void*>(buffers[i]->input()), args[i].input, inBytes[i],
                       cudaMemcpyDeviceToHost),
            "cudaMemcpy");
    runtime::checkRankOutput(algorithm, r, options, buffers[i]->output(), &report);
    runtime::checkRankInput(algorithm, r, options, buffers[i]->input(), &report);
  }
  return report;
}

}  // namespace chorus::cuda
