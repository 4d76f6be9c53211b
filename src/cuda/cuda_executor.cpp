#include "cuda/cuda_executor.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cuda/call_watcher.h"
#include "cuda/cuda_group.h"
#include "cuda/cuda_memory.h"
#include "cuda/kernel_launch.h"
#include "device/abort_on_failure.h"
#include "device/kernel_failure.h"
#include "device/kernel_plan.h"
#include "device/mailbox_layout.h"
#include "device/mailbox_registry.h"
#include "device/peer_exchange.h"
#include "support/error.h"

namespace chorus::cuda {

namespace {

// FIFO shape of the CUDA executor (as CudaGroupOptions' defaults: NCCL's 8 steps of 512 KiB).
constexpr std::size_t kSlotBytes = std::size_t{512} << 10;
constexpr std::uint32_t kSlots = 8;

// The device mailboxes of this process's ranks (thread peers; device/mailbox_registry.h).
device::MailboxRegistry<DeviceBytes>& deviceMailboxes() {
  static device::MailboxRegistry<DeviceBytes> mailboxes;
  return mailboxes;
}

std::string toHex(const void* data, std::size_t bytes) {
  std::string hex;
  for (std::size_t i = 0; i < bytes; ++i)
    hex += fmt::format("{:02x}", static_cast<const unsigned char*>(data)[i]);
  return hex;
}

bool fromHex(const std::string& hex, void* data, std::size_t bytes) {
  if (hex.size() != 2 * bytes) return false;
  for (std::size_t i = 0; i < bytes; ++i) {
    unsigned value = 0;
    if (std::sscanf(hex.c_str() + 2 * i, "%2x", &value) != 1) return false;
    static_cast<unsigned char*>(data)[i] = static_cast<unsigned char>(value);
  }
  return true;
}

}  // namespace

struct CudaExecutor::PlanRank {
  ir::Algorithm algorithm;
  device::GroupWiring wiring;
  device::MailboxLayout layout;
  device::KernelPlan plan;
  DeviceBytes blocks, steps, deps, io, bounces, completed;
  std::shared_ptr<DeviceBytes> mailbox;            // this rank's
  std::vector<std::shared_ptr<DeviceBytes>> held;  // peers' that are threads of this process
  std::vector<void*> opened;                       // peers' opened from IPC handles
  std::vector<unsigned char*> mailboxes;           // [rank], as this process addresses them
  MappedHost<device::KernelStatus> status{1};
  MappedHost<std::uint32_t> claimed{1};
  CudaCallMemory memory;
  int residentBlocks = -1;  // for the last (type, op) asked
  DataType residentType = DataType::float32;
  ReduceOp residentOp = ReduceOp::sum;
  std::atomic<bool> failed{false};  // set by whoever polls the calls

  PlanRank() = default;
  PlanRank(const PlanRank&) = delete;
  PlanRank& operator=(const PlanRank&) = delete;
  ~PlanRank() {
    for (void* p : opened)
      cudaIpcCloseMemHandle(p);
  }
  std::uint32_t* abortWord() const {
    return reinterpret_cast<std::uint32_t*>(mailboxes[0] + device::MailboxLayout::kAbortWord);
  }
  std::uint32_t* failedRankWord() const {
    return reinterpret_cast<std::uint32_t*>(mailboxes[0] + device::MailboxLayout::kFailedRankWord);
  }
};

CudaExecutor::CudaExecutor(int rank, transport::ConnectionSet& connections,
                           const runtime::ExecutorConfig& config)
    : Executor(rank, connections), ranksAreThreads_(config.ranksAreThreads) {
  if (visibleDevices() == 0)
    throw CommError(
        "executor 'cuda' found no CUDA GPU visible to this process: run it where one is (check "
        "nvidia-smi and CUDA_VISIBLE_DEVICES), or use executor 'device' (the same runtime on "
        "CPU threads) or 'cpu'");
  if (connections.ranksOnThisHost() < connections.nranks())
    throw OptionError(fmt::format(
        "executor '{}' needs every rank on one host (peers map each other's GPU memory), but "
        "only {} of the {} ranks run on rank {}'s; use the cpu executor across hosts",
        kName, connections.ranksOnThisHost(), connections.nranks(), rank));
  check(cudaGetDevice(&device_), "cudaGetDevice");
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaStreamCreateWithFlags(&watch_, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming), "cudaEventCreate");
  watcher_ = std::make_unique<CallWatcher>(device_, rank, connections);
}

CudaExecutor::~CudaExecutor() {
  const int current = [] {
    int d = 0;
    cudaGetDevice(&d);
    return d;
  }();
  cudaSetDevice(device_);
  watcher_.reset();  // waits for the calls still queued
  cudaStreamSynchronize(stream_);
  plans_ = {};
  cudaEventDestroy(ready_);
  cudaStreamDestroy(stream_);
  cudaStreamDestroy(watch_);
  cudaSetDevice(current);
}

std::unique_ptr<CudaExecutor::PlanRank> CudaExecutor::setUp(const ir::Algorithm& algorithm,
                                                            std::chrono::milliseconds timeout) {
  auto p = std::make_unique<PlanRank>();
  const int n = algorithm.nranks;
  p->algorithm = algorithm;
  p->plan = device::flattenRank(algorithm, rank());
  p->wiring = device::wireGroup(algorithm);
  p->layout = device::layoutMailboxes(algorithm, p->wiring, kSlots, kSlotBytes);
  const std::size_t bytes = p->layout.mailboxBytes[static_cast<std::size_t>(rank())];
  p->mailbox = std::make_shared<DeviceBytes>();
  deviceMailboxes().add(p->mailbox, p->mailbox->reserve(device_, bytes));
  check(cudaMemset(p->mailbox->data(), 0, bytes), "cudaMemset of the mailbox");
  upload(p->blocks, device_, p->plan.blocks);
  upload(p->steps, device_, p->plan.steps);
  upload(p->deps, device_, p->plan.deps);
  p->completed.reserve(device_, p->plan.blocks.size() * sizeof(std::uint64_t));
  p->memory.device = device_;
  p->memory.stream = stream_;
  // The zeroed mailbox must be in place before any peer learns where it is.
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");

  std::string published;
  if (ranksAreThreads_) {
    published = fmt::format("cuptr:{:x}", reinterpret_cast<std::uintptr_t>(p->mailbox->data()));
  } else {
    cudaIpcMemHandle_t handle;
    check(cudaIpcGetMemHandle(&handle, p->mailbox->data()), "cudaIpcGetMemHandle");
    published = "cuipc:" + toHex(&handle, sizeof(handle));
  }
  const device::PeerExchange exchange =
      device::connectionExchange(connections(), fmt::format("executor '{}'", kName), timeout);
  const std::vector<std::string> descriptors = exchange(published);
  p->mailboxes.assign(static_cast<std::size_t>(n), nullptr);
  for (int r = 0; r < n; ++r) {
    const std::string& text = descriptors[static_cast<std::size_t>(r)];
    unsigned char*& box = p->mailboxes[static_cast<std::size_t>(r)];
    if (r == rank()) {
      box = p->mailbox->data();
    } else if (text.starts_with("cuptr:") && ranksAreThreads_) {
      std::shared_ptr<DeviceBytes> peer =
          deviceMailboxes().find(std::stoull(text.substr(6), nullptr, 16));
      if (!peer)
        throw CommError(fmt::format("rank {}'s mailbox is gone: that rank left the group", r));
      cudaPointerAttributes attributes{};
      check(cudaPointerGetAttributes(&attributes, peer->data()), "cudaPointerGetAttributes");
      if (attributes.device != device_) {
        int can = 0;
        check(cudaDeviceCanAccessPeer(&can, device_, attributes.device), "cudaDeviceCanAccessPeer");
        if (!can)
          throw CommError(fmt::format(
              "rank {} on GPU {} cannot map the memory of rank {} on GPU {} (no peer access): "
              "place the ranks on GPUs that can, or on one GPU",
              rank(), device_, r, attributes.device));
        const cudaError_t e = cudaDeviceEnablePeerAccess(attributes.device, 0);
        if (e == cudaErrorPeerAccessAlreadyEnabled)
          cudaGetLastError();
        else
          check(e, "cudaDeviceEnablePeerAccess");
      }
      box = peer->data();
      p->held.push_back(std::move(peer));
    } else if (text.starts_with("cuipc:") && !ranksAreThreads_) {
      cudaIpcMemHandle_t handle;
      if (!fromHex(text.substr(6), &handle, sizeof(handle)))
        throw CommError(fmt::format("rank {} published a malformed CUDA IPC handle", r));
      void* mapped = nullptr;
      check(cudaIpcOpenMemHandle(&mapped, handle, cudaIpcMemLazyEnablePeerAccess),
            fmt::format("cudaIpcOpenMemHandle of rank {}'s mailbox", r));
      p->opened.push_back(mapped);
      box = static_cast<unsigned char*>(mapped);
    } else {
      throw CommError(fmt::format(
          "rank {} published '{}' as its mailbox, but rank {} expects {}: every rank of the "
          "communicator must use executor '{}', all as threads of one process or all as "
          "processes",
          r, text.substr(0, 24), rank(), ranksAreThreads_ ? "'cuptr:'" : "'cuipc:'", kName));
    }
  }

  // No rank may free its mailbox before every peer holds or has opened it (host_rank.cpp).
  exchange("mapped");

  // The blocks' FIFOs and bounce buffers, fixed for the plan's life.
  const std::size_t blocks = p->plan.blocks.size();
  const std::size_t bounceBytes = (p->layout.maxPayload + 119) / 120 * 120 + 128;
  unsigned char* bounces = p->bounces.reserve(device_, 2 * blocks * bounceBytes);
  std::vector<device::KernelBlockIo> io(blocks);
  const auto rankIndex = static_cast<std::size_t>(rank());
  for (std::size_t b = 0; b < blocks; ++b) {
    const int send = p->wiring.sendConnection[rankIndex][b];
    const int recv = p->wiring.recvConnection[rankIndex][b];
    if (send >= 0) io[b].send = device::sendEndOf(p->layout, p->wiring, p->mailboxes, send);
    if (recv >= 0) io[b].recv = device::recvEndOf(p->layout, p->wiring, p->mailboxes, recv);
    io[b].sendBounce = bounces + 2 * b * bounceBytes;
    io[b].recvBounce = bounces + (2 * b + 1) * bounceBytes;
  }
  upload(p->io, device_, io);
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return p;
}

void* CudaExecutor::spare(std::size_t bytes) {
  if (!spare_) spare_ = std::make_unique<DeviceBytes>();
  if (!spare_->fits(bytes)) watcher_->waitAll();  // queued calls may still use the old one
  return spare_->reserve(device_, bytes);
}

void CudaExecutor::checkBuffer(const void* buffer, const char* which) const {
  if (buffer == nullptr) return;
  cudaPointerAttributes attributes{};
  const cudaError_t e = cudaPointerGetAttributes(&attributes, buffer);
  if (e != cudaSuccess) cudaGetLastError();
  const bool reachable =
      e == cudaSuccess &&
      (attributes.type == cudaMemoryTypeManaged ||
       (attributes.type == cudaMemoryTypeDevice && attributes.device == device_) ||
       (attributes.type == cudaMemoryTypeHost && attributes.devicePointer == buffer));
  if (!reachable)
    throw OptionError(fmt::format(
        "rank {}: the {} buffer {} is not memory GPU {} can use: executor '{}' takes device "
        "memory of the rank's GPU (cudaMalloc), managed memory or mapped pinned host memory",
        rank(), which, buffer, device_, kName));
}

void CudaExecutor::run(const ir::Algorithm& algorithm, const runtime::CollectiveArgs& args,
                       const runtime::CallOptions& options) {
  if (algorithm.nranks != connections().nranks())
    throw OptionError(fmt::format("plan '{}' is for {} ranks but the group has {}", algorithm.name,
                                  algorithm.nranks, connections().nranks()));
  const CurrentDeviceGuard guard;
  check(cudaSetDevice(device_), "cudaSetDevice");
  checkBuffer(args.input, "input");
  checkBuffer(args.output, "output");
  device::abortGroupOnFailure(connections(), rank(), [&] {
    requireNoAsyncError();
    // A plan's set-up may drop the least recently used plan: no call of it may still run.
    PlanRank& p = plans_.get(algorithm, [&] {
      watcher_->waitAll();
      return setUp(algorithm, options.timeout);
    });
    if (p.failed)
      throw CommError(fmt::format("'{}' on GPU {}: an earlier call of rank {} failed",
                                  algorithm.name, device_, rank()));
    if (p.residentBlocks < 0 || p.residentType != args.type || p.residentOp != args.op) {
      check(residentBlocks(args.type, args.op, device_, &p.residentBlocks),
            "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
      p.residentType = args.type;
      p.residentOp = args.op;
    }
    if (static_cast<int>(p.plan.blocks.size()) > p.residentBlocks)
      throw CommError(fmt::format(
          "'{}' needs {} blocks of rank {} running at once on GPU {}, which holds {} of the "
          "interpreter's: use a plan with fewer threadblocks",
          algorithm.name, p.plan.blocks.size(), rank(), device_, p.residentBlocks));

    // A call on the caller's stream starts after the work queued there before it, and that
    // stream's later work starts after the call; the executor's own stream keeps its calls in
    // order (NCCL's strong stream). A call without one starts after the legacy default
    // stream's work (a kernel launched with no stream that fills the input), as NCCL's does.
    const auto caller = static_cast<cudaStream_t>(options.stream);
    check(cudaEventRecord(ready_, caller != nullptr ? caller : cudaStreamLegacy),
          "cudaEventRecord on the call's stream");
    check(cudaStreamWaitEvent(stream_, ready_, 0), "cudaStreamWaitEvent");
    launch(p, args, options);
    const std::uint64_t ticket = watcher_->add(
        stream_, caller, p.abortWord(),
        [this, &p, timeout = options.timeout](std::string_view stopReason) {
          return callFailure(p, timeout, stopReason);
        },
        /*willWait=*/caller == nullptr);
    if (caller == nullptr) watcher_->wait(ticket);
  });
}

void CudaExecutor::launch(PlanRank& p, const runtime::CollectiveArgs& args,
                          const runtime::CallOptions& options) {
  const ir::Algorithm& algorithm = p.algorithm;
  const std::size_t elemSize = runtime::dataTypeSize(args.type);
  const device::KernelGeometry geometry =
      device::kernelGeometry(algorithm, args.count, elemSize, kSlotBytes);
  check(
      cudaMemsetAsync(p.completed.data(), 0, p.plan.blocks.size() * sizeof(std::uint64_t), stream_),
      "cudaMemsetAsync");
  const device::CallBuffers call = device::prepareCall(algorithm, rank(), args, geometry, p.memory);
  GroupLaunch launch;
  device::KernelArgs& a = launch.ranks[0];
  a.blocks = reinterpret_cast<const device::KernelBlock*>(p.blocks.data());
  a.blockCount = static_cast<std::int32_t>(p.plan.blocks.size());
  a.steps = reinterpret_cast<const device::KernelStep*>(p.steps.data());
  a.deps = reinterpret_cast<const device::KernelDep*>(p.deps.data());
  a.io = reinterpret_cast<device::KernelBlockIo*>(p.io.data());
  a.completed = reinterpret_cast<std::uint64_t*>(p.completed.data());
  for (int k = 0; k < 3; ++k)
    a.base[k] = call.base[k];
  device::setCallFields(a, geometry, algorithm.protocol, kSlots, elemSize, options.timeout);
  a.slotStride = p.layout.slotStride;  // the mailbox's slots hold the largest message
  a.rank = rank();
  a.abortFlag = p.abortWord();
  a.failedRank = p.failedRankWord();
  a.status = p.status.device();
  a.statusClaimed = p.claimed.device();
  launch.blockStart[1] = a.blockCount;
  launch.rankCount = 1;
  check(launchGroup(launch, args.type, args.op, stream_), "kernel launch");
  device::finishCall(algorithm, rank(), args, geometry, call, p.memory);
  if (args.op == ReduceOp::avg && args.output && device::outputIsReduced(algorithm, rank()))
    check(launchDivide(args.output, runtime::outputElements(algorithm, rank(), args.count),
                       args.type, algorithm.nranks, stream_),
          "kernel launch");
}

std::exception_ptr CudaExecutor::callFailure(PlanRank& p, std::chrono::milliseconds timeout,
                                             std::string_view stopReason) {
  const device::KernelStatus status = *p.status.host();
  if (status.error == device::KernelError::none) return nullptr;
  p.failed = true;
  try {
    std::uint32_t failedRank = 0;
    check(cudaMemcpyAsync(&failedRank, p.failedRankWord(), sizeof(failedRank),
                          cudaMemcpyDeviceToHost, watch_),
          "cudaMemcpyAsync of the failed-rank word");
    check(cudaStreamSynchronize(watch_), "cudaStreamSynchronize");
    device::throwRankFailure(p.algorithm, rank(), status, failedRank, timeout,
                             fmt::format("GPU {}", device_), stopReason);
  } catch (...) {
    return std::current_exception();
  }
}

void CudaExecutor::requireNoAsyncError() const {
  const std::string failure = watcher_->asyncError();
  if (!failure.empty())
    throw CommError(fmt::format(
        "rank {}: a call queued earlier on a stream failed ({}); destroy the communicator", rank(),
        failure));
}

void CudaExecutor::waitForStream(void* stream) {
  const CurrentDeviceGuard guard;
  check(cudaSetDevice(device_), "cudaSetDevice");
  watcher_->waitAll();
  requireNoAsyncError();
  if (stream != nullptr)
    check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)),
          "cudaStreamSynchronize of the call's stream");
}

void CudaExecutor::copyBytes(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0 || dst == src) return;
  const auto d = reinterpret_cast<std::uintptr_t>(dst);
  const auto s = reinterpret_cast<std::uintptr_t>(src);
  if (d < s + bytes && s < d + bytes) {  // overlapping (a send to the own rank): via the host
    std::vector<unsigned char> staged(bytes);
    copyBytes(staged.data(), src, bytes);
    copyBytes(dst, staged.data(), bytes);
    return;
  }
  check(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy of a send/recv buffer");
}

std::string CudaExecutor::asyncError() const {
  return watcher_->asyncError();
}

void registerCudaExecutors() {
  runtime::registerExecutorIfAbsent(
      {std::string(CudaExecutor::kName),
       "the device interpreter on the CUDA GPU current when the communicator is made "
       "(buffers in GPU memory; ranks on one host)",
       [](int rank, transport::ConnectionSet& connections,
          const runtime::ExecutorConfig& config) -> std::unique_ptr<runtime::Executor> {
         return std::make_unique<CudaExecutor>(rank, connections, config);
       }});
}

}  // namespace chorus::cuda
