// The ucx transport's ranks (ucx_transport.h): a UCP worker per rank, an endpoint per peer,
// FIFOs of local slots moved as active messages, credits back, control messages for calls,
// aborts and clean leaves. Every UCP call runs under workerMutex_ (the worker is
// UCS_THREAD_MODE_SERIALIZED); UCP's callbacks run inside ucp_worker_progress, so under it too.
#include <fcntl.h>
#include <poll.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "chorus/error.h"
#include "support/env.h"
#include "support/error.h"
#include "support/index.h"
#include "transport/departures.h"
#include "transport/peer_join.h"
#include "transport/process_identity.h"
#include "transport/shm/peer_liveness.h"
#include "transport/ucx/ucx_devices.h"
#include "transport/ucx/ucx_fifo.h"
#include "transport/ucx/ucx_registrations.h"
#include "transport/ucx/ucx_transport.h"

namespace chorus::transport {
namespace {

// Active message ids: a worker belongs to one communicator, so they need not be unique.
constexpr unsigned kDataAm = 1;
constexpr unsigned kCreditAm = 2;
constexpr unsigned kControlAm = 3;

struct CreditHeader {
  std::uint32_t from = 0;
  std::uint32_t channel = 0;
  std::uint64_t count = 0;
};
enum class Control : std::uint32_t { call = 1, abort = 2, bye = 3 };
struct ControlHeader {
  std::uint32_t from = 0;
  Control kind = Control::call;
  // call: the collective number + 1 (0: a plain description); bye: collectives started.
  std::uint64_t value = 0;
};

constexpr std::size_t kMaxControlText = 4096;
constexpr auto kLeaveLimit = std::chrono::seconds(5);
constexpr auto kIdleWait = std::chrono::milliseconds(100);
// While the interpreter has polled within this long it drives the worker itself, and the
// progress thread does not wait on the worker's events (tcp_connections.cpp does the same).
constexpr std::chrono::steady_clock::duration kUcxHandOffAfter = std::chrono::milliseconds(2);
// Messages of at least this many bytes are read in UCX's receive buffer when UCX lets us hold it;
// smaller ones are copied into their slot, which costs less than returning the buffer later.
constexpr std::size_t kHoldFromBytes = 4096;
class UcxConnections;

// A message whose header (and payload) must outlive its send: freed by its completion.
struct OwnedSend {
  UcxConnections* owner = nullptr;
  int peer = 0;
  std::vector<std::uint8_t> header;
  std::string payload;
};

// What a receive that UCP finishes later needs.
struct PendingReceive {
  UcxConnections* owner = nullptr;
  UcxRecvFifo* fifo = nullptr;
  std::uint64_t seq = 0;
  bool posted = false;             // into the message's posted region
  std::vector<ucp_dt_iov_t> iov;   // that region's pieces, until the fetch completes
  std::uint64_t registration = 0;  // UcxRegistrations::acquire's use, until the fetch completes
};

class UcxConnections final : public ConnectionSet, public UcxFifoOwner {
 public:
  UcxConnections(int rank, int nranks, const UcxOptions& options)
      : rank_(rank),
        nranks_(nranks),
        options_(options),
        eps_(ix(nranks), nullptr),
        epArgs_(ix(nranks)),
        peerCalls_(ix(nranks)),
        peerNumbers_(ix(nranks), 0),
        departures_(rank, nranks) {}

  ~UcxConnections() override { leave(); }

  void connect(Store& store) {
    ucp_config_t* config = nullptr;
    check(ucp_config_read(nullptr, nullptr, &config), "reading UCX's configuration (UCX_*)");
    const std::string tls = envString("UCX_TLS").value_or("");
    eagerOnly_ = !envString("UCX_RNDV_THRESH") && ucxRdmaDevices(tls).empty();
    if (eagerOnly_ && ucxTlsAllows(tls, "tcp")) {
      // Without RDMA, UCX's tcp transport carries whole slots in fewer, larger pieces (only
      // tcp has these fields: a UCT setting applies to every transport that has the name).
      for (const auto& [name, value] :
           {std::pair{"TX_SEG_SIZE", "64k"}, std::pair{"RX_SEG_SIZE", "256k"}})
        if (!envString(fmt::format("UCX_TCP_{}", name).c_str()))
          check(ucp_config_modify(config, name, value), fmt::format("setting UCX_TCP_{}", name));
    }
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
    const ucs_status_t initialized = ucp_init(&params, config, &context_);
    ucp_config_release(config);
    check(initialized, "ucp_init");
    registrations_ = std::make_unique<UcxRegistrations>(context_);
    ucp_worker_params_t workerParams{};
    workerParams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    workerParams.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    check(ucp_worker_create(context_, &workerParams, &worker_), "ucp_worker_create");
    check(ucp_worker_get_efd(worker_, &efd_), "ucp_worker_get_efd");
    setHandler(kDataAm, &UcxConnections::onData);
    setHandler(kCreditAm, &UcxConnections::onCredit);
    setHandler(kControlAm, &UcxConnections::onControl);
    if (::pipe2(wakePipe_, O_CLOEXEC | O_NONBLOCK) != 0)
      throw CommError(
          fmt::format("ucx transport: rank {}: pipe2: {}", rank_, std::strerror(errno)));
    // Progress from here on: wiring the endpoints up needs both sides' workers to progress.
    progress_ = std::thread([this] { progressLoop(); });

    ucp_address_t* address = nullptr;
    std::size_t length = 0;
    {
      std::lock_guard lock(workerMutex_);
      check(ucp_worker_get_address(worker_, &address, &length), "ucp_worker_get_address");
    }
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(address);
    store.set(key("address", rank_), std::vector<std::uint8_t>(bytes, bytes + length));
    {
      std::lock_guard lock(workerMutex_);
      ucp_worker_release_address(worker_, address);
    }
    const std::string here = networkNamespaceId();
    store.set(key("host", rank_), toBytes(here));
    const RankIdentity identity = identifyThisProcess();
    std::vector<std::string> processes(ix(nranks_));
    processes[ix(rank_)] =
        fmt::format("{}/{} {}", identity.bootId, identity.pidNamespace, identity.pid);
    store.set(key("process", rank_), toBytes(processes[ix(rank_)]));
    const auto deadline = deadlineAfter(options_.timeout);
    std::vector<std::string> hosts(ix(nranks_));
    hosts[ix(rank_)] = here;
    for (int peer = 0; peer < nranks_; ++peer) {
      if (!reaches(peer)) continue;
      const std::vector<std::uint8_t> theirs = awaitPeerJoin(
          store, key("address", peer), peer, nranks_, rank_, deadline, options_.timeout);
      hosts[ix(peer)] = toString(store.get(key("host", peer), left(deadline)));
      processes[ix(peer)] = toString(store.get(key("process", peer), left(deadline)));
      const bool sameHost = hosts[ix(peer)] == here;
      if (sameHost) ++ranksOnThisHost_;
      epArgs_[ix(peer)] = {this, peer};
      ucp_ep_params_t ep{};
      ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
      ep.address = reinterpret_cast<const ucp_address_t*>(theirs.data());
      ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
      ep.err_handler.cb = &UcxConnections::onEndpointError;
      ep.err_handler.arg = &epArgs_[ix(peer)];
      if (sameHost) {
        // UCX's shared-memory transports report no peer failures (UCX 1.13 refuses them under
        // UCP_ERR_HANDLING_MODE_PEER): a peer on this host is reached without that guarantee,
        // and one that dies is caught by the call's deadline instead.
        ep.field_mask &= ~static_cast<std::uint64_t>(UCP_EP_PARAM_FIELD_ERR_HANDLER);
        ep.err_mode = UCP_ERR_HANDLING_MODE_NONE;
      }
      std::lock_guard lock(workerMutex_);
      check(ucp_ep_create(worker_, &ep, &eps_[ix(peer)]),
            fmt::format("creating the endpoint to rank {}", peer));
    }
    wireUp(deadline);
    // Everyone's endpoints are wired before anyone sends.
    store.set(key("ready", rank_), toBytes("1"));
    for (int peer = 0; peer < nranks_; ++peer)
      if (reaches(peer)) store.get(key("ready", peer), left(deadline));
    if (options_.peers.empty()) hostOfRank_ = numberHosts(hosts);
    watchLocalPeers(processes);
  }

  int ranksOnThisHost() const override { return ranksOnThisHost_; }
  std::vector<int> hostOfRank() const override { return hostOfRank_; }

  int rank() const override { return rank_; }
  int fifoRank() const override { return rank_; }
  std::uint64_t currentCall() const override {
    return currentCall_.load(std::memory_order_relaxed);
  }
  int nranks() const override { return nranks_; }

  Fifo& sendFifo(int peer, int channel) override {
    checkPeer(peer, channel);
    std::lock_guard lock(fifoMutex_);
    auto& made = sends_[{peer, channel}];
    if (!made) {
      made = std::make_unique<UcxSendFifo>(*this, peer, channel, options_.fifo);
      if (const auto back = recvs_.find({peer, channel}); back != recvs_.end())
        made->pairWith(back->second.get());
    }
    return *made;
  }
  Fifo& recvFifo(int peer, int channel) override {
    checkPeer(peer, channel);
    return recvFifoOf(peer, channel);
  }

  void abort(const std::string& reason) override {
    if (!fail(reason)) return;
    std::lock_guard lock(workerMutex_);
    for (int peer = 0; peer < nranks_; ++peer)
      if (peer != rank_) sendControlLocked(peer, Control::abort, 0, reason.substr(0, 4000));
  }

  std::string abortReason() const override {
    if (!failed_.load(std::memory_order_acquire) && !checkPeerProcesses()) return {};
    std::lock_guard lock(failureMutex_);
    return failure_;
  }

  bool aborted() const override { return failed_.load(std::memory_order_acquire); }

  void publishCall(std::string_view description) override {
    departures_.otherCallStarts();
    currentCall_.store(0, std::memory_order_relaxed);
    shapeKey_ = 0;
    sendCall(0, std::string(description.substr(0, 200)));
  }

  // A collective starts: peers learn its name and details when the shape changes, and its
  // number with every data message; a peer that left before starting it fails the group.
  void publishNumberedCall(std::uint64_t shapeKey, std::string_view name, std::uint64_t number,
                           std::string_view details) override {
    currentCall_.store(number + 1, std::memory_order_relaxed);
    if (shapeKey == 0 || shapeKey != shapeKey_) {
      shapeKey_ = shapeKey;
      std::string text(name.substr(0, 100));
      text.push_back('\0');
      text.append(details.substr(0, 100));
      sendCall(number + 1, std::move(text));
    }
    if (std::string reason = departures_.collectiveStarts(number); !reason.empty()) fail(reason);
  }

  std::string peerCall(int peer) const override {
    checkPeer(peer, 0);
    std::lock_guard lock(failureMutex_);
    const std::string& text = peerCalls_[ix(peer)];
    const std::uint64_t number = peerNumbers_[ix(peer)];
    const std::size_t split = text.find('\0');
    if (number == 0 || split == std::string::npos) return text;
    char out[kMaxCallTextBytes];
    return std::string(out,
                       formatNumberedCall(out, sizeof out, std::string_view(text).substr(0, split),
                                          number - 1, std::string_view(text).substr(split + 1)));
  }

  bool peerDeparted(int peer) const override { return departures_.departed(peer); }

  int progressThreads() const override { return 1; }

  // ---- for the FIFOs ----------------------------------------------------------------------------

  // Sends message `header` to `peer`: `bytes` at `data`, or (`region` not nullptr) the pieces of
  // `region`; `slot` tracks completion.
  void sendData(int peer, const UcxDataHeader* header, const std::uint8_t* data, std::size_t bytes,
                const RemoteRegion* region, UcxSlotSend* slot) override {
    std::lock_guard lock(workerMutex_);
    slot->busy.store(true, std::memory_order_relaxed);
    slot->ticket = header->seq + 1;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = &UcxConnections::onSlotSent;
    param.user_data = slot;
    if (eagerOnly_) {
      param.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
      param.flags = UCP_AM_SEND_FLAG_EAGER;
    }
    const void* buffer = data;
    std::size_t count = bytes;
    if (region != nullptr && contiguous(*region)) {
      buffer = reinterpret_cast<const void*>(region->address);
      count = region->bytes();
      withRegistration(*region, &param, &slot->registration);
    } else if (region != nullptr) {
      regionIov(*region, &slot->iov);
      param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
      param.datatype = UCP_DATATYPE_IOV;
      buffer = slot->iov.data();
      count = slot->iov.size();
    }
    const ucs_status_ptr_t request =
        ucp_am_send_nbx(eps_[ix(peer)], kDataAm, header, sizeof *header, buffer, count, &param);
    if (request == nullptr) {
      slotSent(slot);
    } else if (UCS_PTR_IS_ERR(request)) {
      slotSent(slot);
      lost(peer, UCS_PTR_STATUS(request));
    }
  }

  // Nothing to receive or no credit: move what the worker holds now and send pending credits,
  // unless another thread is doing so.
  void poke() override {
    lastPoke_.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                    std::memory_order_relaxed);
    std::unique_lock lock(workerMutex_, std::try_to_lock);
    if (!lock.owns_lock()) return;
    progressLocked();
  }

  // A receive FIFO released enough slots: credit them now.
  void creditNow(UcxRecvFifo& fifo) override {
    std::lock_guard lock(workerMutex_);
    sendCreditsLocked(fifo);
  }

  // A receive FIFO has credits to return (its first since the last were sent): the next
  // progress sends them.
  void creditLater(UcxRecvFifo& fifo) override {
    std::lock_guard lock(creditQueueMutex_);
    creditQueue_.push_back(&fifo);
  }

  std::mutex& workerMutex() override { return workerMutex_; }
  // Returns a receive buffer UCX let a FIFO hold (UCP_AM_RECV_ATTR_FLAG_DATA).
  void releaseData(void* data) override {
    std::lock_guard lock(workerMutex_);
    ucp_am_data_release(worker_, data);
  }
  // Under the worker lock: moves what the worker holds now.
  void progressWorkerLocked() override { ucp_worker_progress(worker_); }

 private:
  struct EpArg {
    UcxConnections* self = nullptr;
    int peer = 0;
  };

  std::string key(const char* what, int rank) const {
    return fmt::format("ucx/{}/{}/{}", options_.groupId, what, rank);
  }

  static std::chrono::milliseconds left(std::chrono::steady_clock::time_point deadline) {
    return std::max(std::chrono::milliseconds(0),
                    std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now()));
  }

  void check(ucs_status_t status, const std::string& what) const {
    if (status != UCS_OK)
      throw CommError(
          fmt::format("ucx transport: rank {}: {} failed: {} (UCX's UCX_TLS, "
                      "UCX_NET_DEVICES and ucx_info -d say what UCX can use here)",
                      rank_, what, ucs_status_string(status)));
  }

  // Whether this rank connects to `peer` (UcxOptions::peers).
  bool reaches(int peer) const {
    return peer != rank_ && (options_.peers.empty() || options_.peers[ix(peer)]);
  }

  // Hosts numbered in order of their lowest rank; empty when every rank is on one host.
  static std::vector<int> numberHosts(const std::vector<std::string>& hosts) {
    std::vector<std::string> seen;
    std::vector<int> out;
    for (const std::string& host : hosts) {
      const auto known = std::find(seen.begin(), seen.end(), host);
      out.push_back(static_cast<int>(known - seen.begin()));
      if (known == seen.end()) seen.push_back(host);
    }
    if (seen.size() <= 1) out.clear();
    return out;
  }

  void checkPeer(int peer, int channel) const {
    if (peer < 0 || peer >= nranks_ || !reaches(peer))
      throw CommError(fmt::format("rank {}: peer {} is not another rank of this {}-rank group",
                                  rank_, peer, nranks_));
    if (channel < 0 || channel >= (1 << 16))
      throw CommError(fmt::format("rank {}: channel {} to rank {} is out of range (0..65535)",
                                  rank_, channel, peer));
  }

  UcxRecvFifo& recvFifoOf(int peer, int channel) {
    std::lock_guard lock(fifoMutex_);
    auto& made = recvs_[{peer, channel}];
    if (!made) {
      made = std::make_unique<UcxRecvFifo>(*this, peer, channel, options_.fifo);
      if (const auto back = sends_.find({peer, channel}); back != sends_.end())
        back->second->pairWith(made.get());
    }
    return *made;
  }

  // Credits `count` for messages this rank sent `peer` on `channel`; "" or what is wrong.
  std::string addCredits(std::uint32_t peer, std::uint32_t channel, std::uint64_t count) {
    UcxSendFifo* fifo = nullptr;
    {
      std::lock_guard lock(fifoMutex_);
      const auto it = sends_.find({static_cast<int>(peer), static_cast<int>(channel)});
      if (it != sends_.end()) fifo = it->second.get();
    }
    if (fifo == nullptr || count > fifo->outstanding())
      return fmt::format("rank {} returned {} credits on channel {} for messages never sent", peer,
                         count, channel);
    fifo->addCredits(count);
    return {};
  }

  void setHandler(unsigned id, ucp_am_recv_callback_t callback) {
    ucp_am_handler_param_t param{};
    param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                       UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    param.id = id;
    param.cb = callback;
    param.arg = this;
    param.flags = UCP_AM_FLAG_WHOLE_MSG;
    check(ucp_worker_set_am_recv_handler(worker_, &param), "setting an active message handler");
  }

  // Records the group's first failure; false if one was recorded already.
  bool fail(const std::string& reason) const {
    std::lock_guard lock(failureMutex_);
    if (failed_.load(std::memory_order_relaxed)) return false;
    failure_ = reason;
    failed_.store(true, std::memory_order_release);
    return true;
  }

  // Under the worker lock: passes UCP the handle of the registered memory holding `region`
  // (contiguous), if it is some; `use` is for registrations_->release() when UCP is done.
  void withRegistration(const RemoteRegion& region, ucp_request_param_t* param,
                        std::uint64_t* use) {
    if (const ucp_mem_h memh = registrations_->acquire(region, use)) {
      param->op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
      param->memh = memh;
    }
  }

  // At most every kPeerLivenessInterval, one thread at a time: a watched peer process that exited
  // without leaving fails the group. True when the group has failed.
  bool checkPeerProcesses() const {
    if (!liveness_) return false;
    const auto now = std::chrono::steady_clock::now();
    if (now.time_since_epoch().count() < nextLivenessCheck_.load(std::memory_order_relaxed))
      return false;
    std::unique_lock checking(livenessMutex_, std::try_to_lock);
    if (!checking.owns_lock()) return false;
    nextLivenessCheck_.store((now + kPeerLivenessInterval).time_since_epoch().count(),
                             std::memory_order_relaxed);
    for (int exited = liveness_->findExited(); exited >= 0; exited = liveness_->findExited()) {
      if (departures_.departed(exited)) {
        liveness_->forget(exited);
        continue;
      }
      fail(fmt::format(
          "ucx transport: rank {} (pid {}) exited before the group finished: it crashed, was "
          "killed or returned early; see that rank's own error",
          exited, liveness_->pidOf(exited)));
      return true;
    }
    return false;
  }

  // Watches the peers on this host that run in another process (`processes[r]`: "<boot id>/<pid
  // namespace> <pid>" of rank r, empty for peers not reached).
  void watchLocalPeers(const std::vector<std::string>& processes) {
    const std::string& mine = processes[ix(rank_)];
    const std::string here = mine.substr(0, mine.rfind(' '));
    std::vector<pid_t> pids(ix(nranks_), 0);
    std::vector<bool> watch(ix(nranks_), false);
    bool any = false;
    for (int peer = 0; peer < nranks_; ++peer) {
      const std::string& theirs = processes[ix(peer)];
      const std::size_t space = theirs.rfind(' ');
      if (!reaches(peer) || space == std::string::npos || theirs.substr(0, space) != here ||
          theirs == mine)  // ranks that are threads of this process share its pid
        continue;
      pids[ix(peer)] = static_cast<pid_t>(std::stol(theirs.substr(space + 1)));
      watch[ix(peer)] = any = true;
    }
    if (any) liveness_ = std::make_unique<PeerLiveness>(std::move(pids), watch);
  }

  void lost(int peer, ucs_status_t status) {
    if (departures_.departed(peer)) return;  // it left cleanly: its endpoint closing is no loss
    fail(
        fmt::format("ucx transport: rank {} lost rank {}: {}; it exited, crashed or its network "
                    "failed: see that rank's own error",
                    rank_, peer, ucs_status_string(status)));
  }

  void sendCall(std::uint64_t number, std::string text) {
    std::lock_guard lock(workerMutex_);
    for (int peer = 0; peer < nranks_; ++peer)
      if (peer != rank_) sendControlLocked(peer, Control::call, number, text);
  }

  void sendOwnedLocked(int peer, unsigned id, std::unique_ptr<OwnedSend> owned) {
    if (eps_[ix(peer)] == nullptr) return;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = &UcxConnections::onOwnedSent;
    param.user_data = owned.get();
    // Control and credit messages are small, and their handlers take them whole: always eager.
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_AM_SEND_FLAG_EAGER;
    const ucs_status_ptr_t request =
        ucp_am_send_nbx(eps_[ix(peer)], id, owned->header.data(), owned->header.size(),
                        owned->payload.data(), owned->payload.size(), &param);
    if (request == nullptr) return;  // done; `owned` goes
    if (UCS_PTR_IS_ERR(request)) {
      lost(peer, UCS_PTR_STATUS(request));
      return;
    }
    owned.release();  // onOwnedSent frees it
    ownedInFlight_.fetch_add(1, std::memory_order_relaxed);
  }

  template <class Header>
  std::unique_ptr<OwnedSend> owned(int peer, const Header& header, std::string payload = {}) {
    auto out = std::make_unique<OwnedSend>();
    out->owner = this;
    out->peer = peer;
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(&header);
    out->header.assign(bytes, bytes + sizeof header);
    out->payload = std::move(payload);
    return out;
  }

  void sendControlLocked(int peer, Control kind, std::uint64_t value, const std::string& text) {
    const ControlHeader header{static_cast<std::uint32_t>(rank_), kind, value};
    sendOwnedLocked(peer, kControlAm, owned(peer, header, text));
  }

  void sendCreditsLocked(UcxRecvFifo& fifo) {
    const std::uint64_t count = fifo.takeCredits();
    if (count == 0) return;
    const CreditHeader header{static_cast<std::uint32_t>(rank_),
                              static_cast<std::uint32_t>(fifo.channel()), count};
    sendOwnedLocked(fifo.peer(), kCreditAm, owned(fifo.peer(), header));
  }

  void progressLocked() {
    {
      std::lock_guard lock(creditQueueMutex_);
      creditQueue_.swap(creditsToSend_);  // both keep their capacity: no allocation per call
    }
    for (UcxRecvFifo* fifo : creditsToSend_)
      sendCreditsLocked(*fifo);
    creditsToSend_.clear();
    while (ucp_worker_progress(worker_) != 0) {
    }
  }

  void progressLoop() {
    while (!stopping_.load(std::memory_order_acquire)) {
      ucs_status_t armed = UCS_OK;
      const auto sincePoke = std::chrono::steady_clock::now().time_since_epoch().count() -
                             lastPoke_.load(std::memory_order_relaxed);
      // While the interpreter polls, waking this thread for every arrival would only take a
      // core from it: check back every millisecond instead.
      const bool interpreterPolls = sincePoke < kUcxHandOffAfter.count();
      {
        std::lock_guard lock(workerMutex_);
        progressLocked();
        if (!interpreterPolls) armed = ucp_worker_arm(worker_);
      }
      if (armed == UCS_ERR_BUSY) continue;  // more arrived meanwhile
      pollfd fds[2] = {{wakePipe_[0], POLLIN, 0}, {efd_, POLLIN, 0}};
      ::poll(fds, interpreterPolls ? 1 : 2,
             interpreterPolls ? 1 : static_cast<int>(kIdleWait.count()));
      char drain[64];
      while (::read(wakePipe_[0], drain, sizeof drain) > 0) {
      }
    }
  }

  // Leaving: stops the progress thread, tells every peer (with the collectives started), then
  // flushes and closes the endpoints (bounded by kLeaveLimit) and frees UCX's objects.
  void leave() noexcept {
    if (progress_.joinable()) {
      stopping_.store(true, std::memory_order_release);
      [[maybe_unused]] const ssize_t wrote = ::write(wakePipe_[1], "x", 1);
      progress_.join();
    }
    if (worker_ != nullptr) {
      std::lock_guard lock(workerMutex_);
      const auto deadline = std::chrono::steady_clock::now() + kLeaveLimit;
      // Messages already committed go out first (a rendezvous needs this side's progress
      // until the peer has fetched it), unless the group failed.
      while (!failed_.load(std::memory_order_acquire) && sendsInFlight() &&
             std::chrono::steady_clock::now() < deadline)
        ucp_worker_progress(worker_);
      try {
        for (int peer = 0; peer < nranks_; ++peer)
          if (peer != rank_ && eps_[ix(peer)] != nullptr)
            sendControlLocked(peer, Control::bye, departures_.collectivesStarted(), {});
      } catch (...) {  // leaving never throws; peers then see the endpoint close
      }
      std::vector<ucs_status_ptr_t> closing;
      for (ucp_ep_h& ep : eps_) {
        if (ep == nullptr) continue;
        ucp_request_param_t param{};
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        // Flush first, unless the peer has left (nobody would answer the flush).
        const bool departed = departures_.departed(static_cast<int>(&ep - eps_.data()));
        param.flags = departed || failed_.load() ? UCP_EP_CLOSE_FLAG_FORCE : 0;
        const ucs_status_ptr_t request = ucp_ep_close_nbx(ep, &param);
        if (request != nullptr && !UCS_PTR_IS_ERR(request)) closing.push_back(request);
        ep = nullptr;
      }
      for (ucs_status_ptr_t request : closing) {
        while (ucp_request_check_status(request) == UCS_INPROGRESS &&
               std::chrono::steady_clock::now() < deadline)
          ucp_worker_progress(worker_);
        if (ucp_request_check_status(request) == UCS_INPROGRESS)
          ucp_request_cancel(worker_, request);
        ucp_request_free(request);
      }
      while (ucp_worker_progress(worker_) != 0) {
      }
      {
        std::lock_guard fifos(fifoMutex_);
        for (auto& [where, fifo] : recvs_)
          fifo->releaseHeld(worker_);
        recvs_.clear();
        sends_.clear();
      }
      ucp_worker_destroy(worker_);
      worker_ = nullptr;
    }
    registrations_.reset();  // unmaps, before the context goes
    if (context_ != nullptr) ucp_cleanup(context_);
    context_ = nullptr;
    for (int& fd : wakePipe_)
      if (fd >= 0) ::close(std::exchange(fd, -1));
  }

  // Flushes every endpoint, which completes its wire-up (UCP wires endpoints lazily; closing one
  // whose wire-up is still under way trips an assertion in UCX 1.13's tcp transport).
  void wireUp(std::chrono::steady_clock::time_point deadline) {
    std::vector<std::pair<int, ucs_status_ptr_t>> flushing;
    {
      std::lock_guard lock(workerMutex_);
      for (int peer = 0; peer < nranks_; ++peer) {
        if (eps_[ix(peer)] == nullptr) continue;
        ucp_request_param_t param{};
        const ucs_status_ptr_t request = ucp_ep_flush_nbx(eps_[ix(peer)], &param);
        if (UCS_PTR_IS_ERR(request))
          check(UCS_PTR_STATUS(request), fmt::format("wiring up the endpoint to rank {}", peer));
        if (request != nullptr) flushing.emplace_back(peer, request);
      }
    }
    for (auto [peer, request] : flushing) {
      ucs_status_t status = UCS_INPROGRESS;
      while (true) {
        {
          std::lock_guard lock(workerMutex_);
          ucp_worker_progress(worker_);
          status = ucp_request_check_status(request);
          if (status != UCS_INPROGRESS) ucp_request_free(request);
        }
        if (status != UCS_INPROGRESS) break;
        if (std::chrono::steady_clock::now() > deadline) {
          std::lock_guard lock(workerMutex_);
          ucp_request_cancel(worker_, request);
          ucp_request_free(request);
          throw TimeoutError(fmt::format(
              "ucx transport: rank {}: the endpoint to rank {} was not wired up within {} ms; is "
              "rank {} running, and can UCX reach it (UCX_TLS, UCX_NET_DEVICES)?",
              rank_, peer, options_.timeout.count(), peer));
        }
        std::this_thread::yield();
      }
      check(status, fmt::format("wiring up the endpoint to rank {}", peer));
    }
  }

  // Whether a data, control or credit message is still on its way out.
  bool sendsInFlight() {
    if (ownedInFlight_.load(std::memory_order_relaxed) > 0) return true;
    std::lock_guard lock(fifoMutex_);
    for (const auto& [where, fifo] : sends_)
      if (fifo->busy()) return true;
    return false;
  }

  // ---- UCP callbacks (under workerMutex_)
  // --------------------------------------------------------

  static ucs_status_t onData(void* arg, const void* header, std::size_t headerBytes, void* data,
                             std::size_t length, const ucp_am_recv_param_t* param) {
    auto* self = static_cast<UcxConnections*>(arg);
    UcxDataHeader h;
    if (headerBytes != sizeof h) return self->protocolError("a data message with a bad header");
    std::memcpy(&h, header, sizeof h);
    if (h.from >= static_cast<std::uint32_t>(self->nranks_) || h.channel >= (1u << 16))
      return self->protocolError("a data message naming no rank or channel of this group");
    {
      std::lock_guard lock(self->failureMutex_);
      self->peerNumbers_[h.from] = h.call;
    }
    if (h.credits > 0)
      if (std::string problem = self->addCredits(h.from, h.channel, h.credits); !problem.empty())
        return self->protocolError(problem);
    UcxRecvFifo& fifo = self->recvFifoOf(static_cast<int>(h.from), static_cast<int>(h.channel));
    std::uint8_t* at = nullptr;
    const RemoteRegion* post = nullptr;
    const std::uint64_t seq = h.seq;
    if (std::string problem = fifo.land(seq, length, h.tag, &at, &post); !problem.empty())
      return self->protocolError(problem);
    if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) == 0) {
      if (post == nullptr && length >= kHoldFromBytes &&
          (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) != 0) {
        // UCX lets us keep its buffer: the receiver reads the message there, one copy fewer.
        fifo.landedHeld(seq, data);
        return UCS_INPROGRESS;
      }
      if (post == nullptr) {
        if (length > 0) std::memcpy(at, data, length);
      } else {
        const auto* from = static_cast<const std::uint8_t*>(data);
        for (std::uint32_t i = 0; i < post->pieces; ++i, from += post->pieceBytes)
          std::memcpy(reinterpret_cast<void*>(post->address + i * post->stride), from,
                      post->pieceBytes);
      }
      fifo.landed(seq, post != nullptr);
      return UCS_OK;
    }
    // Rendezvous: UCP fetches the payload into the slot or the posted region, then onReceived
    // marks it landed.
    auto pending = std::make_unique<PendingReceive>();
    *pending = {self, &fifo, seq, post != nullptr, {}};
    ucp_request_param_t receive{};
    receive.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    receive.cb.recv_am = &UcxConnections::onReceived;
    receive.user_data = pending.get();
    void* buffer = at;
    std::size_t count = length;
    if (post != nullptr && contiguous(*post)) {
      buffer = reinterpret_cast<void*>(post->address);
      self->withRegistration(*post, &receive, &pending->registration);
    } else if (post != nullptr) {
      regionIov(*post, &pending->iov);
      receive.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
      receive.datatype = UCP_DATATYPE_IOV;
      buffer = pending->iov.data();
      count = pending->iov.size();
    }
    const ucs_status_ptr_t request =
        ucp_am_recv_data_nbx(self->worker_, data, buffer, count, &receive);
    if (request == nullptr || UCS_PTR_IS_ERR(request))
      self->registrations_->release(pending->registration);
    if (request == nullptr) {
      fifo.landed(seq, post != nullptr);
    } else if (UCS_PTR_IS_ERR(request)) {
      self->lost(static_cast<int>(h.from), UCS_PTR_STATUS(request));
    } else {
      if (post != nullptr) ++fifo.fetchingIntoPosts;
      pending.release();  // onReceived frees it
    }
    return UCS_INPROGRESS;
  }

  static void onReceived(void* request, ucs_status_t status, std::size_t, void* user) {
    std::unique_ptr<PendingReceive> pending(static_cast<PendingReceive*>(user));
    if (pending->posted) --pending->fifo->fetchingIntoPosts;
    pending->owner->registrations_->release(pending->registration);
    if (status == UCS_OK)
      pending->fifo->landed(pending->seq, pending->posted);
    else
      pending->owner->lost(pending->fifo->peer(), status);
    ucp_request_free(request);
  }

  static ucs_status_t onCredit(void* arg, const void* header, std::size_t headerBytes, void*,
                               std::size_t, const ucp_am_recv_param_t*) {
    auto* self = static_cast<UcxConnections*>(arg);
    CreditHeader h;
    if (headerBytes != sizeof h) return self->protocolError("a credit message with a bad header");
    std::memcpy(&h, header, sizeof h);
    if (h.from >= static_cast<std::uint32_t>(self->nranks_) || h.channel >= (1u << 16))
      return self->protocolError("a credit naming no rank or channel of this group");
    if (std::string problem = self->addCredits(h.from, h.channel, h.count); !problem.empty())
      return self->protocolError(problem);
    return UCS_OK;
  }

  static ucs_status_t onControl(void* arg, const void* header, std::size_t headerBytes, void* data,
                                std::size_t length, const ucp_am_recv_param_t* param) {
    auto* self = static_cast<UcxConnections*>(arg);
    ControlHeader h;
    if (headerBytes != sizeof h || length > kMaxControlText ||
        (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0)
      return self->protocolError("a control message with a bad header or size");
    std::memcpy(&h, header, sizeof h);
    if (h.from >= static_cast<std::uint32_t>(self->nranks_))
      return self->protocolError("a control message from no rank of this group");
    std::string text(static_cast<const char*>(data), length);
    switch (h.kind) {
      case Control::call: {
        std::lock_guard lock(self->failureMutex_);
        self->peerCalls_[h.from] = std::move(text);
        self->peerNumbers_[h.from] = h.value;
        break;
      }
      case Control::abort:
        self->fail(text);
        break;
      case Control::bye:
        if (std::string reason = self->departures_.peerLeft(static_cast<int>(h.from), h.value);
            !reason.empty())
          self->fail(reason);
        break;
      default:
        return self->protocolError(
            fmt::format("a control message of unknown kind {}", static_cast<unsigned>(h.kind)));
    }
    return UCS_OK;
  }

  static void onSlotSent(void* request, ucs_status_t status, void* user) {
    auto* slot = static_cast<UcxSlotSend*>(user);
    if (status != UCS_OK) static_cast<UcxConnections*>(slot->owner)->lost(slot->peer, status);
    slotSent(slot);
    ucp_request_free(request);
  }

  // Under the worker lock: UCP is done with the slot's message (sent, or never to be).
  static void slotSent(UcxSlotSend* slot) {
    static_cast<UcxConnections*>(slot->owner)
        ->registrations_->release(std::exchange(slot->registration, 0));
    slot->done.store(slot->ticket, std::memory_order_release);
    slot->busy.store(false, std::memory_order_release);
  }

  static void onOwnedSent(void* request, ucs_status_t status, void* user) {
    std::unique_ptr<OwnedSend> owned(static_cast<OwnedSend*>(user));
    if (status != UCS_OK && status != UCS_ERR_CANCELED) owned->owner->lost(owned->peer, status);
    owned->owner->ownedInFlight_.fetch_sub(1, std::memory_order_relaxed);
    ucp_request_free(request);
  }

  static void onEndpointError(void* arg, ucp_ep_h, ucs_status_t status) {
    auto* ep = static_cast<EpArg*>(arg);
    ep->self->lost(ep->peer, status);
  }

  ucs_status_t protocolError(const std::string& problem) {
    fail(
        fmt::format("ucx transport: rank {} received {}: a peer runs another chorus version or "
                    "another group shares this worker",
                    rank_, problem));
    return UCS_OK;
  }

  const int rank_;
  const int nranks_;
  const UcxOptions options_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::unique_ptr<UcxRegistrations> registrations_;  // worker lock
  int efd_ = -1;
  int wakePipe_[2] = {-1, -1};
  std::vector<ucp_ep_h> eps_;
  std::vector<EpArg> epArgs_;
  std::mutex workerMutex_;

  std::mutex creditQueueMutex_;
  std::vector<UcxRecvFifo*> creditQueue_;    // creditQueueMutex_: FIFOs with credits to return
  std::vector<UcxRecvFifo*> creditsToSend_;  // worker lock: the queue being sent

  std::mutex fifoMutex_;
  std::map<std::pair<int, int>, std::unique_ptr<UcxSendFifo>> sends_;
  std::map<std::pair<int, int>, std::unique_ptr<UcxRecvFifo>> recvs_;

  mutable std::mutex failureMutex_;
  mutable std::atomic<bool> failed_{false};
  mutable std::string failure_;
  // Peers on this host in another process, watched so one that exits fails the group at once
  // (UCX's shared-memory transports report no peer failure); null when there are none.
  std::unique_ptr<PeerLiveness> liveness_;
  mutable std::mutex livenessMutex_;  // held by the thread running the check
  mutable std::atomic<std::chrono::steady_clock::rep> nextLivenessCheck_{0};
  std::vector<std::string> peerCalls_;      // failureMutex_
  std::vector<std::uint64_t> peerNumbers_;  // failureMutex_: their collective + 1
  Departures departures_;  // peers that said bye, and the collective this rank runs
  std::atomic<std::uint64_t> currentCall_{0};
  std::uint64_t shapeKey_ = 0;  // the calling thread's

  std::atomic<int> ownedInFlight_{0};  // control and credit messages not yet sent

  bool eagerOnly_ = false;  // every message eager (no RDMA device, UCX_RNDV_THRESH unset)
  int ranksOnThisHost_ = 1;
  std::vector<int> hostOfRank_;
  std::atomic<bool> stopping_{false};
  std::thread progress_;
  std::atomic<std::chrono::steady_clock::rep> lastPoke_{0};  // when a FIFO call last polled
};

}  // namespace

std::unique_ptr<ConnectionSet> connectUcx(Store& store, int rank, int nranks,
                                          const UcxOptions& options) {
  if (nranks < 1 || rank < 0 || rank >= nranks)
    throw OptionError(fmt::format("ucx transport: rank {} of {} is not a rank", rank, nranks));
  if (options.fifo.slots < 1 || options.fifo.slotBytes < 64)
    throw OptionError("ucx transport: FIFOs need at least 1 slot of at least 64 bytes");
  if (!options.peers.empty() && options.peers.size() != static_cast<std::size_t>(nranks))
    throw OptionError(fmt::format("ucx transport: the peer list has {} entries for {} ranks",
                                  options.peers.size(), nranks));
  auto connections = std::make_unique<UcxConnections>(rank, nranks, options);
  connections->connect(store);
  return connections;
}

}  // namespace chorus::transport
