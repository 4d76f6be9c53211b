#include "device/host_rank.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "device/block_interpreter.h"
#include "device/call_layout.h"
#include "device/host_platform.h"
#include "device/kernel_failure.h"
#include "device/kernel_plan.h"
#include "device/mailbox_layout.h"
#include "device/mailbox_registry.h"
#include "device/type_dispatch.h"
#include "support/error.h"
#include "transport/shm/shm_segment.h"

namespace chorus::device {

// The rank's state (named, not anonymous: HostKernelRank::State holds it).
namespace host_rank_detail {

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

}  // namespace host_rank_detail

namespace {

// The heap mailboxes of this process's ranks (thread peers; device/mailbox_registry.h).
device::MailboxRegistry<host_rank_detail::AlignedBytes>& heapMailboxes() {
  static device::MailboxRegistry<host_rank_detail::AlignedBytes> mailboxes;
  return mailboxes;
}

// A fresh /dev/shm name for this rank's mailbox.
std::string mailboxName(int rank) {
  static std::atomic<std::uint64_t> next{0};
  return fmt::format("/chorus-dev-{}-{}-{}", ::getpid(), rank, next.fetch_add(1));
}

}  // namespace

struct HostKernelRank::State {
  ir::Algorithm algorithm;
  int rank = 0;
  HostGroupOptions options;
  GroupWiring wiring;
  MailboxLayout layout;
  KernelPlan plan;
  // The mailboxes of the group, when its ranks are threads (this rank's among them).
  std::vector<std::shared_ptr<host_rank_detail::AlignedBytes>> heaps;
  std::optional<transport::ShmSegment> ownShm;  // the mailbox, when peers are processes
  std::vector<transport::ShmSegment> peerShm;
  std::vector<unsigned char*> mailboxes;  // [rank]
  std::vector<KernelBlockIo> io;
  std::vector<host_rank_detail::AlignedBytes> bounces;  // two per block
  std::vector<std::uint64_t> completed;
  KernelStatus status;
  std::uint32_t statusClaimed = 0;
  host_rank_detail::HostCallMemory memory;
  bool failed = false;

  // The group's words in rank 0's mailbox header.
  std::uint32_t* abortWord() const {
    return reinterpret_cast<std::uint32_t*>(mailboxes[0] + MailboxLayout::kAbortWord);
  }
  std::uint32_t* failedRankWord() const {
    return reinterpret_cast<std::uint32_t*>(mailboxes[0] + MailboxLayout::kFailedRankWord);
  }
};

HostKernelRank::HostKernelRank(const ir::Algorithm& algorithm, int rank, transport::Store& store,
                               const std::string& prefix, MailboxSharing sharing,
                               const HostGroupOptions& options,
                               std::chrono::milliseconds setupTimeout)
    : HostKernelRank(algorithm, rank,
                     storeExchange(store, prefix, rank, algorithm.nranks, setupTimeout), sharing,
                     options) {}

HostKernelRank::HostKernelRank(const ir::Algorithm& algorithm, int rank,
                               const PeerExchange& exchange, MailboxSharing sharing,
                               const HostGroupOptions& options)
    : state_(std::make_unique<State>()) {
  if (options.slots == 0 || options.slotBytes == 0)
    throw OptionError("HostGroupOptions: slots and slotBytes must be at least 1");
  const int n = algorithm.nranks;
  if (rank < 0 || rank >= n)
    throw OptionError(fmt::format("rank {} is outside '{}''s {} ranks", rank, algorithm.name, n));
  State& s = *state_;
  s.algorithm = algorithm;
  s.rank = rank;
  s.options = options;
  s.plan = flattenRank(algorithm, rank);
  s.wiring = wireGroup(algorithm);
  s.layout = layoutMailboxes(algorithm, s.wiring, options.slots, options.slotBytes);
  const std::size_t bytes = s.layout.mailboxBytes[static_cast<std::size_t>(rank)];

  // Publish this rank's mailbox, then map every peer's. A /dev/shm name lives only until every
  // rank has mapped it, or until the set-up fails: it is removed on the way out either way.
  struct UnlinkOnExit {
    std::string name;
    ~UnlinkOnExit() {
      if (!name.empty()) transport::unlinkShmName(name);
    }
  } ownName;
  std::string published;
  if (sharing == MailboxSharing::threads) {
    auto mailbox = std::make_shared<host_rank_detail::AlignedBytes>();
    unsigned char* box = mailbox->resize(bytes);
    heapMailboxes().add(mailbox, box);
    s.heaps.push_back(std::move(mailbox));
    published = fmt::format("ptr:{:x}", reinterpret_cast<std::uintptr_t>(box));
  } else {
    std::string name;
    while (!s.ownShm) {
      name = mailboxName(rank);
      s.ownShm = transport::createShmSegment(name, bytes, "the device interpreter's mailbox",
                                             "use smaller slots (HostGroupOptions::slotBytes)");
    }
    published = "shm:" + name;
    ownName.name = name;
  }
  const std::vector<std::string> descriptors = exchange(published);
  s.mailboxes.assign(static_cast<std::size_t>(n), nullptr);
  // A peer's segment was created and sized before it was published: the deadline only guards.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int r = 0; r < n; ++r) {
    const std::string& text = descriptors[static_cast<std::size_t>(r)];
    if (text.starts_with("ptr:")) {
      if (sharing != MailboxSharing::threads)
        throw CommError(
            fmt::format("rank {}'s mailbox is memory of another process's thread, "
                        "but rank {} runs in a process of its own: the ranks of a "
                        "group must agree on MailboxSharing",
                        r, rank));
      const std::uintptr_t address = std::stoull(text.substr(4), nullptr, 16);
      if (r != rank) {
        std::shared_ptr<host_rank_detail::AlignedBytes> peer = heapMailboxes().find(address);
        if (!peer)
          throw CommError(fmt::format("rank {}'s mailbox is gone: that rank left the group", r));
        s.heaps.push_back(std::move(peer));
      }
      s.mailboxes[static_cast<std::size_t>(r)] = reinterpret_cast<unsigned char*>(address);
    } else if (!text.starts_with("shm:")) {
      throw CommError(
          fmt::format("rank {} published '{}' as its mailbox; a mailbox is 'ptr:' or "
                      "'shm:' (is it running the same chorus?)",
                      r, text.substr(0, 64)));
    } else if (r == rank) {
      s.mailboxes[static_cast<std::size_t>(r)] = s.ownShm->data();
    } else {
      std::optional<transport::ShmSegment> peer = transport::openShmSegment(
          text.substr(4), deadline, [] { return std::string(); }, "a peer's mailbox");
      if (!peer)
        throw CommError(
            fmt::format("rank {}'s mailbox {} is gone: that rank exited", r, text.substr(4)));
      s.mailboxes[static_cast<std::size_t>(r)] = peer->data();
      s.peerShm.push_back(std::move(*peer));
    }
  }
  // No rank may leave (freeing its heap mailbox or unlinking its /dev/shm name) before every
  // peer holds its mailbox: a rank whose part ends early would otherwise drop it while a slower
  // peer is still looking it up (seen under TSan: "rank 0's mailbox is gone").
  exchange("mapped");

  // The blocks' FIFOs and bounce buffers, fixed for the rank's life.
  const std::size_t blocks = s.plan.blocks.size();
  const std::size_t bounceBytes = (s.layout.maxPayload + 119) / 120 * 120 + 128;
  s.io.resize(blocks);
  s.bounces.resize(2 * blocks);
  s.completed.assign(blocks, 0);
  for (std::size_t b = 0; b < blocks; ++b) {
    const int send = s.wiring.sendConnection[static_cast<std::size_t>(rank)][b];
    const int recv = s.wiring.recvConnection[static_cast<std::size_t>(rank)][b];
    if (send >= 0) s.io[b].send = sendEndOf(s.layout, s.wiring, s.mailboxes, send);
    if (recv >= 0) s.io[b].recv = recvEndOf(s.layout, s.wiring, s.mailboxes, recv);
    s.io[b].sendBounce = s.bounces[2 * b].resize(bounceBytes);
    s.io[b].recvBounce = s.bounces[2 * b + 1].resize(bounceBytes);
  }
}

HostKernelRank::~HostKernelRank() = default;

int HostKernelRank::rank() const {
  return state_->rank;
}

KernelError HostKernelRank::lastError() const {
  return state_->status.error;
}

void HostKernelRank::abort() {
  HostPlatform::raiseFlag(state_->abortWord());
}

void HostKernelRank::run(const runtime::CollectiveArgs& args, std::chrono::milliseconds timeout,
                         const std::function<std::string()>& groupFailure) {
  State& s = *state_;
  const std::string where = "the device interpreter (host build)";
  if (s.failed)
    throw CommError(fmt::format("'{}' on {}: an earlier call of rank {} failed; make a new group",
                                s.algorithm.name, where, s.rank));
  const std::size_t elemSize = runtime::dataTypeSize(args.type);
  const KernelGeometry geometry =
      kernelGeometry(s.algorithm, args.count, elemSize, s.options.slotBytes);
  const CallBuffers call = prepareCall(s.algorithm, s.rank, args, geometry, s.memory);
  std::fill(s.completed.begin(), s.completed.end(), 0);
  KernelArgs a;
  a.blocks = s.plan.blocks.data();
  a.blockCount = static_cast<std::int32_t>(s.plan.blocks.size());
  a.steps = s.plan.steps.data();
  a.deps = s.plan.deps.data();
  a.io = s.io.data();
  a.completed = s.completed.data();
  std::copy(std::begin(call.base), std::end(call.base), std::begin(a.base));
  setCallFields(a, geometry, s.algorithm.protocol, s.options.slots, elemSize, timeout);
  a.slotStride = s.layout.slotStride;  // the mailbox's slots hold the largest message
  a.rank = s.rank;
  a.abortFlag = s.abortWord();
  a.failedRank = s.failedRankWord();
  a.status = &s.status;
  a.statusClaimed = &s.statusClaimed;

  std::atomic<int> finished{0};
  std::vector<std::thread> threads;
  for (int b = 0; b < a.blockCount; ++b)
    threads.emplace_back([&a, b, &args, &finished] {
      dispatchType(args.type, args.op,
                   [&]<typename T, ReduceOp Op>() { interpretBlock<HostPlatform, T, Op>(a, b); });
      finished.fetch_add(1, std::memory_order_release);
    });
  // The host's watch over a running kernel: a failure the transport reports stops the blocks.
  std::string stopReason;
  if (groupFailure)
    while (finished.load(std::memory_order_acquire) < a.blockCount) {
      if (stopReason.empty() && !(stopReason = groupFailure()).empty()) {
        HostPlatform::raiseFlag(s.abortWord());
        break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  for (std::thread& t : threads)
    t.join();
  if (s.status.error != KernelError::none) {
    s.failed = true;
    throwRankFailure(
        s.algorithm, s.rank, s.status,
        std::atomic_ref<std::uint32_t>(*s.failedRankWord()).load(std::memory_order_acquire),
        timeout, where, stopReason);
  }
  finishCall(s.algorithm, s.rank, args, geometry, call, s.memory);
  if (args.op == ReduceOp::avg && args.output && outputIsReduced(s.algorithm, s.rank))
    dispatchType(args.type, ReduceOp::sum, [&]<typename T, ReduceOp>() {
      divideRange<HostPlatform>(static_cast<T*>(args.output),
                                runtime::outputElements(s.algorithm, s.rank, args.count),
                                s.algorithm.nranks);
    });
}

}  // namespace chorus::device
