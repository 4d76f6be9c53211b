#include "transport/mixed_transport.h"

#include <fmt/format.h>

#include <algorithm>

#include "support/index.h"
#include "support/log.h"
#include "transport/peer_join.h"
#include "transport/process_identity.h"
#include "transport/tcp/tcp_bootstrap.h"
#include "transport/ucx/ucx_devices.h"

namespace chorus::transport {
namespace {

// Peers on this host over `local` (ranks renumbered: hostRanks[i] is local rank i), the others
// over `remote` (global ranks).
class MixedConnections final : public ConnectionSet {
 public:
  MixedConnections(int rank, int nranks, std::vector<int> hostRanks, std::vector<int> hostOfRank,
                   std::unique_ptr<ConnectionSet> local, std::unique_ptr<ConnectionSet> remote)
      : rank_(rank),
        nranks_(nranks),
        hostSize_(static_cast<int>(hostRanks.size())),
        localIndex_(ix(nranks), -1),
        hostOfRank_(std::move(hostOfRank)),
        local_(std::move(local)),
        remote_(std::move(remote)) {
    for (std::size_t i = 0; i < hostRanks.size(); ++i)
      localIndex_[ix(hostRanks[i])] = static_cast<int>(i);
  }

  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }

  Fifo& sendFifo(int peer, int channel) override {
    const int local = localOf(peer);
    return local >= 0 ? local_->sendFifo(local, channel) : remote_->sendFifo(peer, channel);
  }
  Fifo& recvFifo(int peer, int channel) override {
    const int local = localOf(peer);
    return local >= 0 ? local_->recvFifo(local, channel) : remote_->recvFifo(peer, channel);
  }
  void abort(const std::string& reason) override {
    if (local_) local_->abort(reason);
    remote_->abort(reason);
  }
  std::string abortReason() const override {
    if (local_) {
      std::string reason = local_->abortReason();
      if (!reason.empty()) return reason;
    }
    return remote_->abortReason();
  }
  bool aborted() const override { return (local_ && local_->aborted()) || remote_->aborted(); }
  void publishCall(std::string_view description) override {
    if (local_) local_->publishCall(description);
    remote_->publishCall(description);
  }
  void publishNumberedCall(std::uint64_t shapeKey, std::string_view name, std::uint64_t number,
                           std::string_view details) override {
    if (local_) local_->publishNumberedCall(shapeKey, name, number, details);
    remote_->publishNumberedCall(shapeKey, name, number, details);
  }
  bool peerDeparted(int peer) const override {
    const int local = localOf(peer);
    return local >= 0 ? local_->peerDeparted(local) : remote_->peerDeparted(peer);
  }
  std::vector<int> hostOfRank() const override { return hostOfRank_; }
  int ranksOnThisHost() const override { return hostSize_; }
  int progressThreads() const override {
    return (local_ ? local_->progressThreads() : 0) + remote_->progressThreads();
  }
  std::string peerCall(int peer) const override {
    const int local = localOf(peer);
    return local >= 0 ? local_->peerCall(local) : remote_->peerCall(peer);
  }

 private:
  // The peer's rank on this host's shm group, or -1 when it is reached over tcp or ucx.
  int localOf(int peer) const {
    if (peer < 0 || peer >= nranks_ || !local_) return -1;
    return localIndex_[ix(peer)];
  }

  int rank_;
  int nranks_;
  int hostSize_;  // ranks on this host, this one included
  std::vector<int> localIndex_;
  std::vector<int> hostOfRank_;
  std::unique_ptr<ConnectionSet> local_;  // null when this rank is alone on its host
  std::unique_ptr<ConnectionSet> remote_;
};

// Every rank's wish for reaching other hosts, through the store: one choice for all.
RemoteDecision agreeOnRemote(Store& store, int rank, int nranks, const MixedOptions& options,
                             std::chrono::steady_clock::time_point deadline) {
  RemoteWish mine{options.remote, {}};
  if (mine.asked == RemoteTransport::automatic)
    for (const UcxDevice& device : ucxRdmaDevicesHere())
      mine.rdmaDevices += (mine.rdmaDevices.empty() ? "" : ",") + device.name();
  const std::string& prefix = options.shm.namePrefix;
  store.set(fmt::format("mixed/{}/remote/{}", prefix, rank), toBytes(encodeRemoteWish(mine)));
  std::vector<RemoteWish> wishes;
  for (int r = 0; r < nranks; ++r) {
    const auto left = std::max(std::chrono::milliseconds(0),
                               std::chrono::duration_cast<std::chrono::milliseconds>(
                                   deadline - std::chrono::steady_clock::now()));
    wishes.push_back(decodeRemoteWish(
        toString(store.get(fmt::format("mixed/{}/remote/{}", prefix, r), left)), r));
  }
  return decideRemote(wishes);
}

}  // namespace

std::unique_ptr<ConnectionSet> connectMixed(Store& store, int rank, int nranks,
                                            const MixedOptions& options) {
  const std::string& prefix = options.shm.namePrefix;
  const auto deadline = deadlineAfter(options.shm.timeout);
  const std::string here = networkNamespaceId();
  store.set(fmt::format("mixed/{}/where/{}", prefix, rank), toBytes(here));
  std::vector<int> hostRanks;   // the ranks on this host
  std::vector<int> hostOfRank;  // every rank's host, numbered by lowest rank
  std::vector<std::string> hosts;
  for (int r = 0; r < nranks; ++r) {
    const std::string where =
        toString(awaitPeerJoin(store, fmt::format("mixed/{}/where/{}", prefix, r), r, nranks, rank,
                               deadline, options.shm.timeout));
    if (where == here) hostRanks.push_back(r);
    const auto known = std::find(hosts.begin(), hosts.end(), where);
    hostOfRank.push_back(static_cast<int>(known - hosts.begin()));
    if (known == hosts.end()) hosts.push_back(where);
  }
  const int hostSize = static_cast<int>(hostRanks.size());
  if (hostSize == nranks) return connectShm(store, rank, nranks, options.shm);

  const RemoteDecision remote = agreeOnRemote(store, rank, nranks, options, deadline);
  if (logEnabled(LogLevel::info))
    logLine(LogLevel::info,
            fmt::format("rank {}: auto transport: shm within this host ({} ranks), {} to the {} "
                        "ranks on other hosts ({})",
                        rank, hostSize, remote.ucx ? "ucx" : "tcp", nranks - hostSize, remote.why));
  std::vector<bool> remotePeers(ix(nranks), true);
  for (int r : hostRanks)
    remotePeers[ix(r)] = false;
  // The remote transport's options as the shm group's: one group id, timeout and FIFO shape.
  const auto sharing = [&](auto remoteOptions) {
    remoteOptions.groupId = prefix;
    remoteOptions.timeout = options.shm.timeout;
    remoteOptions.fifo = options.shm.fifo;
    remoteOptions.peers = remotePeers;
    return remoteOptions;
  };
  const auto connectRemote = [&] {
    return remote.ucx ? connectUcx(store, rank, nranks, sharing(options.ucx))
                      : connectTcp(store, rank, nranks, sharing(options.tcp));
  };
  if (hostSize == 1)  // alone on this host: remote only, but the hosts are still known
    return std::make_unique<MixedConnections>(rank, nranks, std::move(hostRanks),
                                              std::move(hostOfRank), nullptr, connectRemote());

  // This host's ranks form their own shm group: its own store keys and /dev/shm names.
  const std::uint64_t hostHash = groupTag(here);
  ShmOptions shm = options.shm;
  shm.namePrefix = fmt::format("{}-h{:08x}", prefix, static_cast<std::uint32_t>(hostHash));
  shm.rankNames = hostRanks;
  PrefixStore hostStore(std::shared_ptr<Store>(&store, [](Store*) {}),
                        fmt::format("mixed/{}/host{:016x}", prefix, hostHash));
  const int localRank =
      static_cast<int>(std::find(hostRanks.begin(), hostRanks.end(), rank) - hostRanks.begin());
  auto local = connectShm(hostStore, localRank, hostSize, shm);
  return std::make_unique<MixedConnections>(
      rank, nranks, std::move(hostRanks), std::move(hostOfRank), std::move(local), connectRemote());
}

}  // namespace chorus::transport
