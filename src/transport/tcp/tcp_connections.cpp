// The TCP transport's ConnectionSet (tcp_transport.h): per-peer non-blocking sockets (one or
// more "links" per peer; channel c's data and credits use link c % links, control frames link
// 0, and a bye goes on every link). Bytes move under ioMutex_, by whichever thread holds it:
//   * the interpreter, through its FIFO calls (TcpProgress): a commit (or a batch of released
//     slots) gathers and writes at once; an empty receive FIFO or a send FIFO out of credits
//     reads the sockets and returns every pending credit. No thread handoff on the fast path,
//     as in MPI progress engines. A credit that is not due yet leaves with the next frame
//     gathered for its connection.
//   * a progress thread otherwise (between calls, or when the lock was busy). One iteration:
//     1. Announce sleep (sleeping_ = true, by an exchange: see wake()), then gather: every
//        send FIFO's newly committed messages become data frames, every receive FIFO's
//        released slots a credit frame, and queued control frames (call, abort) move to their
//        peers.
//     2. Write each peer's queue with sendmsg until the socket would block.
//     3. poll() the sockets and an eventfd, without the lock: without delay when step 1
//        found work, else up to 100 ms. A FIFO call that finds the lock taken writes the
//        eventfd only when the thread announced sleep.
//     4. Read every readable socket: a header, then its payload, straight into the receive
//        FIFO's slot for data frames, or into the receiver's buffer where it posted for that
//        message (Fifo::postRecv).
// A peer that closes without a bye, resets, overruns its credits or sends a malformed frame
// fails the group on this rank (abortReason()).
#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "chorus/error.h"
#include "support/error.h"
#include "support/index.h"
#include "transport/departures.h"
#include "transport/remote_message.h"
#include "transport/tcp/tcp_bootstrap.h"
#include "transport/tcp/tcp_fifo.h"
#include "transport/tcp/tcp_frame.h"
#include "transport/tcp/tcp_transport.h"

namespace chorus::transport {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kIdlePollMs = 100;
// The progress thread leaves the sockets to the interpreter until this long after its last
// poll of an empty FIFO.
constexpr std::chrono::steady_clock::duration kHandOffAfter = std::chrono::milliseconds(2);
constexpr std::size_t kMaxCall = 200;
constexpr std::size_t kMaxReason = 4096;
constexpr auto kByeFlushLimit = std::chrono::seconds(5);
constexpr std::size_t kStageBytes = 16 << 10;

// One frame waiting to be written: its header and payload (borrowed from a send slot or, for a
// message by reference, the sender's buffers; owned for control frames).
struct Outgoing {
  std::array<std::uint8_t, kFrameHeaderBytes> header{};
  const std::uint8_t* payload = nullptr;
  std::size_t payloadBytes = 0;
  std::vector<std::uint8_t> owned;
  std::size_t written = 0;
  TcpSendFifo* fifo = nullptr;  // data frames: the FIFO told once the socket took them
  std::uint64_t ticket = 0;
  const RemoteRegion* region = nullptr;  // by reference: the payload's pieces (not `payload`)
  std::size_t total() const { return kFrameHeaderBytes + payloadBytes; }
};

Outgoing makeFrame(FrameKind kind, std::uint32_t channel, std::uint32_t count, std::uint64_t tag,
                   std::string_view text = {}) {
  Outgoing out;
  out.owned.assign(text.begin(), text.end());
  out.payload = out.owned.data();
  out.payloadBytes = out.owned.size();
  FrameHeader header;
  header.kind = kind;
  header.channel = channel;
  header.bytes = static_cast<std::uint32_t>(out.payloadBytes);
  header.count = count;
  header.tag = tag;
  encodeFrameHeader(header, out.header);
  return out;
}

// Where a peer's incoming byte stream is: inside a header, or inside a payload.
struct Incoming {
  std::array<std::uint8_t, kFrameHeaderBytes> header{};
  std::size_t headerBytes = 0;
  bool inPayload = false;
  FrameHeader frame;
  std::uint8_t* target = nullptr;  // the receive slot, or scratch
  std::vector<std::uint8_t> scratch;
  std::size_t payloadBytes = 0;
  TcpRecvFifo* fifo = nullptr;  // data frames
  bool delivered = false;       // a data frame read into `posted` instead of `target`
  RemoteRegion posted;
};

// One TCP connection to a peer; every field is guarded by TcpConnections::ioMutex_.
struct Link {
  SocketFd fd;
  std::deque<Outgoing> out;
  Incoming in;
  bool departed = false;      // the peer sent bye on it
  bool pauseReading = false;  // a payload just landed in a posted region: see readSome()
  bool closed = false;        // socket done with
  bool shutDown = false;      // leaving: our sending side is shut down
  // Received bytes not parsed yet: stage[stageBegin, stageEnd).
  std::vector<std::uint8_t> stage;
  std::size_t stageBegin = 0;
  std::size_t stageEnd = 0;
};

struct Peer {
  std::vector<Link> links;  // empty: not a tcp peer (this rank, or reached over shm)
  std::string where;
  // By channel; guarded by TcpConnections::fifoMutex_.
  std::vector<std::unique_ptr<TcpSendFifo>> send;
  std::vector<std::unique_ptr<TcpRecvFifo>> recv;
  Link& linkOf(std::uint32_t channel) { return links[channel % links.size()]; }
};

class TcpConnections final : public ConnectionSet, private TcpProgress {
 public:
  TcpConnections(int rank, int nranks, const TcpOptions& options, std::vector<TcpPeerLink> links)
      : rank_(rank),
        nranks_(nranks),
        fifo_(options.fifo),
        peers_(ix(nranks)),
        peerCalls_(ix(nranks)),
        departures_(rank, nranks) {
    for (int r = 0; r < nranks; ++r) {
      Peer& peer = peers_[ix(r)];
      if (r != rank && links[ix(r)].sameHost) ++ranksOnThisHost_;
      peer.where = std::move(links[ix(r)].where);
      for (SocketFd& fd : links[ix(r)].sockets) {
        setNonBlocking(fd.get());
        setNoDelay(fd.get());
        if (options.socketBufferBytes > 0) {
          const int bytes = options.socketBufferBytes;
          ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
          ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
        }
        peer.links.emplace_back().fd = std::move(fd);
      }
    }
    wakeFd_ = SocketFd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!wakeFd_) throw CommError(fmt::format("tcp transport: eventfd: {}", std::strerror(errno)));
    progress_ = std::thread([this] { progressLoop(); });
  }

  ~TcpConnections() override {
    stopping_.store(true, std::memory_order_release);
    wake(/*always=*/true);
    progress_.join();
  }

  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }

  Fifo& sendFifo(int peer, int channel) override {
    checkPeer(peer, channel);
    std::lock_guard lock(fifoMutex_);
    return findOrMake(peers_[ix(peer)].send, sends_, peer, channel);
  }

  Fifo& recvFifo(int peer, int channel) override {
    checkPeer(peer, channel);
    std::lock_guard lock(fifoMutex_);
    return recvFifoLocked(peer, channel);
  }

  void abort(const std::string& reason) override {
    if (!fail(reason)) return;
    std::lock_guard lock(controlMutex_);
    for (int r = 0; r < nranks_; ++r)
      if (!peers_[ix(r)].links.empty())
        control_.push_back({r, makeFrame(FrameKind::abort, 0, 0, 0,
                                         std::string_view(reason).substr(0, kMaxReason))});
    wake(true);
  }

  std::string abortReason() const override {
    if (!failed_.load(std::memory_order_acquire)) return {};
    std::lock_guard lock(failureMutex_);
    return failure_;
  }

  void publishCall(std::string_view description) override {
    departures_.otherCallStarts();  // publishNumberedCall() then says it is a collective
    {
      std::lock_guard lock(controlMutex_);
      for (int r = 0; r < nranks_; ++r)
        if (!peers_[ix(r)].links.empty())
          control_.push_back(
              {r, makeFrame(FrameKind::call, 0, 0, 0, description.substr(0, kMaxCall))});
    }
    // No send now: the frames leave with the call's first FIFO call (a commit or a poll of an
    // empty FIFO gathers them), in the same sendmsg as its data, instead of costing the
    // peer an extra segment and wake-up per call.
  }

  int progressThreads() const override { return 1; }
  int ranksOnThisHost() const override { return ranksOnThisHost_; }

  std::string peerCall(int peer) const override {
    checkPeer(peer, 0);
    std::lock_guard lock(failureMutex_);
    return peerCalls_[ix(peer)];
  }

  // A collective starts: a peer that left before starting it fails the group now (its bye
  // said how many it started), not at the timeout.
  void publishNumberedCall(std::uint64_t shapeKey, std::string_view name, std::uint64_t number,
                           std::string_view details) override {
    ConnectionSet::publishNumberedCall(shapeKey, name, number, details);  // publishCall()
    if (std::string reason = departures_.collectiveStarts(number); !reason.empty()) fail(reason);
  }

  bool peerDeparted(int peer) const override { return departures_.departed(peer); }

 private:
  template <typename FifoT>
  struct FifoEntry {
    int peer;
    int channel;
    FifoT* fifo;
  };
  using SendEntry = FifoEntry<TcpSendFifo>;
  using RecvEntry = FifoEntry<TcpRecvFifo>;

  void checkPeer(int peer, int channel) const {
    if (peer < 0 || peer >= nranks_ || peer == rank_)
      throw CommError(fmt::format("rank {}: peer {} is not another rank of this {}-rank group",
                                  rank_, peer, nranks_));
    if (peers_[ix(peer)].links.empty())
      throw CommError(
          fmt::format("rank {}: rank {} is not connected over tcp (the mixed "
                      "transport reaches it over shm)",
                      rank_, peer));
    if (channel < 0 || static_cast<std::uint32_t>(channel) >= kMaxTcpChannel)
      throw CommError(fmt::format("rank {}: channel {} to rank {} is out of range (0..{})", rank_,
                                  channel, peer, kMaxTcpChannel - 1));
  }

  TcpRecvFifo& recvFifoLocked(int peer, int channel) {
    return findOrMake(peers_[ix(peer)].recv, recvs_, peer, channel);
  }

  // The FIFO of `channel` in `byChannel`, made on first use and listed in `entries` for the
  // byte movers; caller holds fifoMutex_.
  template <typename FifoT>
  FifoT& findOrMake(std::vector<std::unique_ptr<FifoT>>& byChannel,
                    std::vector<FifoEntry<FifoT>>& entries, int peer, int channel) {
    if (ix(channel) >= byChannel.size()) byChannel.resize(ix(channel) + 1);
    auto& made = byChannel[ix(channel)];
    if (!made) {
      made = std::make_unique<FifoT>(fifo_, static_cast<TcpProgress&>(*this));
      entries.push_back({peer, channel, made.get()});
      fifoGeneration_.fetch_add(1, std::memory_order_release);
    }
    return *made;
  }

  // Records the group's first failure; false if one was recorded already.
  bool fail(const std::string& reason) {
    std::lock_guard lock(failureMutex_);
    if (failed_.load(std::memory_order_relaxed)) return false;
    failure_ = reason;
    failed_.store(true, std::memory_order_release);
    return true;
  }

  // Both sides update sleeping_ with read-modify-writes, so they are totally ordered: either
  // this exchange reads the thread's "sleeping" (and writes the eventfd), or the thread's next
  // exchange reads this one's value and so sees the work published before it.
  void wake(bool always) {
    if (sleeping_.exchange(false, std::memory_order_acq_rel) || always) {
      const std::uint64_t one = 1;
      [[maybe_unused]] const ssize_t n = ::write(wakeFd_.get(), &one, sizeof(one));
    }
  }

  // ---- moving bytes (under ioMutex_) -------------------------------------------------------

  void kick() override {
    std::unique_lock lock(ioMutex_, std::try_to_lock);
    if (!lock) return wake(false);
    guarded([&] {
      gather(/*allCredits=*/false);
      writeAll();
    });
  }

  void poke() override {
    lastPoke_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
    std::unique_lock lock(ioMutex_, std::try_to_lock);
    if (!lock) return;  // the holder is moving bytes
    guarded([&] {
      forEachLink([&](int r, std::size_t l) { readSome(r, l); });
      gather(/*allCredits=*/true);
      writeAll();
    });
  }

  std::mutex& bytesMutex() override { return ioMutex_; }

  void unpost(TcpRecvFifo& fifo) override {
    std::lock_guard lock(ioMutex_);
    fifo.dropPosts();
    forEachLink([&](int r, std::size_t l) {
      Incoming& in = peers_[ix(r)].links[l].in;
      if (!in.inPayload || in.fifo != &fifo || !in.delivered) return;
      copyFromRegion(in.posted, 0, in.target, in.payloadBytes);
      in.delivered = false;  // the rest follows into the slot
    });
  }

  void evict(TcpSendFifo& fifo, std::uint64_t ticket) override {
    std::lock_guard lock(ioMutex_);
    if (fifo.remoteSettled(ticket)) return;
    const std::uint8_t* slot = fifo.localize(ticket);
    // Already gathered: the frame now sends the slot's copy (same bytes, so a frame partly
    // written goes on where it stopped).
    forEachLink([&](int r, std::size_t l) {
      for (Outgoing& out : peers_[ix(r)].links[l].out)
        if (out.fifo == &fifo && out.ticket == ticket) {
          out.region = nullptr;
          out.payload = slot;
        }
    });
  }

  // Runs `work`; an unexpected failure fails the group instead of escaping into a FIFO call.
  template <typename F>
  void guarded(F work) {
    try {
      work();
    } catch (const std::exception& e) {
      fail(fmt::format("rank {}: tcp transport failed: {}", rank_, e.what()));
    }
  }

  // Calls f(peer, link index) for every link of every tcp peer.
  template <typename F>
  void forEachLink(F f) {
    for (int r = 0; r < nranks_; ++r)
      for (std::size_t l = 0; l < peers_[ix(r)].links.size(); ++l)
        f(r, l);
  }

  bool writeAll() {
    bool wrote = false;
    forEachLink([&](int r, std::size_t l) { wrote = writeSome(r, l) || wrote; });
    return wrote;
  }

  void progressLoop() {
    std::vector<pollfd> polls;
    while (true) {
      sleeping_.exchange(true, std::memory_order_acq_rel);
      bool busy = false;
      {
        std::lock_guard lock(ioMutex_);
        if (stopping_.load(std::memory_order_acquire)) {
          guarded([&] {
            gather(/*allCredits=*/true);
            sayGoodbye();
          });
          return;
        }
        guarded([&] {
          const bool gathered = gather(/*allCredits=*/true);
          busy = writeAll() || gathered;
        });
        polls.assign(1, pollfd{wakeFd_.get(), POLLIN, 0});
        // While the interpreter polls its FIFOs it reads the sockets itself: waking this
        // thread for every arriving frame would only steal a core from it.
        const auto sincePoke =
            Clock::now().time_since_epoch().count() - lastPoke_.load(std::memory_order_relaxed);
        const bool interpreterPolls = sincePoke < kHandOffAfter.count();
        if (!interpreterPolls) {
          forEachLink([&](int r, std::size_t l) {
            const Link& link = peers_[ix(r)].links[l];
            if (link.closed) return;
            polls.push_back(
                {link.fd.get(), static_cast<short>(POLLIN | (link.out.empty() ? 0 : POLLOUT)), 0});
          });
        }
      }
      const int ready = ::poll(polls.data(), polls.size(),
                               busy                ? 0
                               : polls.size() == 1 ? 1
                                                   : kIdlePollMs);
      sleeping_.store(false, std::memory_order_release);
      if (ready < 0 && errno != EINTR)
        fail(fmt::format("rank {}: tcp transport: poll: {}", rank_, std::strerror(errno)));
      if (ready <= 0) continue;
      if (polls[0].revents != 0) {
        std::uint64_t count = 0;
        [[maybe_unused]] const ssize_t n = ::read(wakeFd_.get(), &count, sizeof(count));
      }
      std::lock_guard lock(ioMutex_);
      guarded([&] {
        for (std::size_t i = 1; i < polls.size(); ++i) {
          if (polls[i].revents == 0) continue;
          const auto [r, l] = linkOfFd(polls[i].fd);
          if (polls[i].revents & (POLLIN | POLLHUP | POLLERR)) readSome(r, l);
          if (polls[i].revents & POLLOUT) writeSome(r, l);
        }
      });
    }
  }

  std::pair<int, std::size_t> linkOfFd(int fd) const {
    for (int r = 0; r < nranks_; ++r)
      for (std::size_t l = 0; l < peers_[ix(r)].links.size(); ++l)
        if (peers_[ix(r)].links[l].fd.get() == fd) return {r, l};
    CHORUS_INTERNAL_ASSERT(false, "poll returned an unknown socket");
    return {-1, 0};
  }

  // Step 1. True if it queued anything. Credits go back when `allCredits`, else only those due
  // (half the slots) or able to travel with a frame already queued for their connection.
  bool gather(bool allCredits) {
    if (fifoGeneration_.load(std::memory_order_acquire) != seenGeneration_) {
      std::lock_guard lock(fifoMutex_);
      seenGeneration_ = fifoGeneration_.load(std::memory_order_relaxed);
      sendSnapshot_ = sends_;
      recvSnapshot_ = recvs_;
    }
    bool queued = false;
    for (const SendEntry& e : sendSnapshot_) {
      TcpSendFifo::Outbound message;
      while (e.fifo->nextToSend(&message)) {
        Outgoing out;
        out.payload = message.data;
        out.payloadBytes = message.bytes;
        out.fifo = e.fifo;
        out.ticket = message.ticket;
        out.region = message.region;
        FrameHeader header;
        header.kind = FrameKind::data;
        header.channel = static_cast<std::uint32_t>(e.channel);
        header.bytes = static_cast<std::uint32_t>(message.bytes);
        header.tag = message.tag;
        encodeFrameHeader(header, out.header);
        peers_[ix(e.peer)].linkOf(header.channel).out.push_back(std::move(out));
        queued = true;
      }
    }
    {
      std::lock_guard lock(controlMutex_);
      for (auto& [peer, frame] : control_) {
        peers_[ix(peer)].links.front().out.push_back(std::move(frame));
        queued = true;
      }
      control_.clear();
    }
    for (const RecvEntry& e : recvSnapshot_) {
      const auto channel = static_cast<std::uint32_t>(e.channel);
      Link& link = peers_[ix(e.peer)].linkOf(channel);
      const std::uint64_t credits = e.fifo->takeCredits(allCredits || !link.out.empty());
      if (credits == 0) continue;
      link.out.push_back(
          makeFrame(FrameKind::credit, channel, static_cast<std::uint32_t>(credits), 0));
      queued = true;
    }
    return queued;
  }

  // Step 2 for one link. True if it wrote anything.
  bool writeSome(int r, std::size_t l) {
    Link& link = peers_[ix(r)].links[l];
    bool wrote = false;
    while (!link.out.empty() && !link.closed) {
      std::array<iovec, 64> iov{};
      std::size_t n = 0;
      for (auto it = link.out.begin(); it != link.out.end() && n + 2 <= iov.size(); ++it) {
        std::size_t skip = it->written;
        if (skip < kFrameHeaderBytes)
          iov[n++] = {it->header.data() + skip, kFrameHeaderBytes - skip};
        skip = skip > kFrameHeaderBytes ? skip - kFrameHeaderBytes : 0;
        if (it->payloadBytes <= skip) continue;
        if (it->region == nullptr) {
          iov[n++] = {const_cast<std::uint8_t*>(it->payload) + skip, it->payloadBytes - skip};
          continue;
        }
        // A message by reference: one entry per piece of the region, as many as fit; the
        // frames after it wait for the next sendmsg if it did not fit whole.
        const RegionIovecs pieces = regionIovecs(*it->region, skip, it->payloadBytes - skip,
                                                 iov.data() + n, iov.size() - n);
        n += pieces.count;
        if (!pieces.whole) break;
      }
      msghdr message{};
      message.msg_iov = iov.data();
      message.msg_iovlen = n;
      const ssize_t put = ::sendmsg(link.fd.get(), &message, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (put < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        lost(r, l, describe(sysError("send")));
        break;
      }
      wrote = true;
      std::size_t done = static_cast<std::size_t>(put);
      while (done > 0) {
        Outgoing& front = link.out.front();
        const std::size_t take = std::min(done, front.total() - front.written);
        front.written += take;
        done -= take;
        if (front.written == front.total()) {
          if (front.fifo != nullptr) front.fifo->frameWritten();
          link.out.pop_front();
        }
      }
    }
    return wrote;
  }

  // Step 4 for one link. Headers, small payloads and whatever follows them are read in one
  // recv into the link's staging buffer and parsed from there (one syscall for many small
  // frames); a payload with at least kStageBytes still to come is read straight into its
  // receive slot.
  void readSome(int r, std::size_t l) {
    Link& link = peers_[ix(r)].links[l];
    Incoming& in = link.in;
    while (!link.closed) {
      consumeStaged(r, l);
      if (link.closed) return;
      // After a payload that landed in a posted region, the next header stays in the socket
      // for now: its receiver gets the chance to take that message and post for the next one.
      if (std::exchange(link.pauseReading, false) && link.stageBegin == link.stageEnd) return;
      const std::size_t rest = in.inPayload ? in.frame.bytes - in.payloadBytes : 0;
      const bool direct = rest >= kStageBytes;
      if (!direct && link.stage.empty()) link.stage.resize(kStageBytes);
      // A posted payload is staged only up to its end, so that stop comes at a frame boundary.
      const ssize_t got =
          direct && in.delivered
              ? receiveIntoPost(link)
              : ::recv(link.fd.get(), direct ? in.target + in.payloadBytes : link.stage.data(),
                       direct || in.delivered ? rest : kStageBytes, MSG_DONTWAIT);
      if (got == 0) {
        if (link.departed) {
          link.closed = true;
          return;
        }
        lost(r, l,
             "it closed the connection before the group finished: it exited, crashed or was "
             "killed; see that rank's own error");
        return;
      }
      if (got < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        lost(r, l, describe(sysError("recv")));
        return;
      }
      if (!direct) {
        link.stageBegin = 0;
        link.stageEnd = static_cast<std::size_t>(got);
        continue;
      }
      in.payloadBytes += static_cast<std::size_t>(got);
      if (in.payloadBytes == in.frame.bytes) finishFrame(r, l);
    }
  }

  // One recvmsg of the rest of the link's payload into the pieces of its posted region.
  ssize_t receiveIntoPost(Link& link) {
    Incoming& in = link.in;
    std::array<iovec, 64> iov{};
    msghdr message{};
    message.msg_iov = iov.data();
    message.msg_iovlen = regionIovecs(in.posted, in.payloadBytes, in.frame.bytes - in.payloadBytes,
                                      iov.data(), iov.size())
                             .count;
    return ::recvmsg(link.fd.get(), &message, MSG_DONTWAIT);
  }

  // Moves the staged bytes into headers and payloads, handling each frame they complete.
  void consumeStaged(int r, std::size_t l) {
    Link& link = peers_[ix(r)].links[l];
    Incoming& in = link.in;
    while (link.stageBegin < link.stageEnd && !link.closed) {
      const std::uint8_t* from = link.stage.data() + link.stageBegin;
      const std::size_t available = link.stageEnd - link.stageBegin;
      if (!in.inPayload) {
        const std::size_t take = std::min(available, kFrameHeaderBytes - in.headerBytes);
        std::memcpy(in.header.data() + in.headerBytes, from, take);
        in.headerBytes += take;
        link.stageBegin += take;
        if (in.headerBytes == kFrameHeaderBytes) startFrame(r, l);
      } else {
        const std::size_t take = std::min(available, in.frame.bytes - in.payloadBytes);
        if (in.delivered)
          copyIntoRegion(in.posted, in.payloadBytes, from, take);
        else
          std::memcpy(in.target + in.payloadBytes, from, take);
        in.payloadBytes += take;
        link.stageBegin += take;
        if (in.payloadBytes == in.frame.bytes) finishFrame(r, l);
      }
    }
    if (link.stageBegin == link.stageEnd) link.stageBegin = link.stageEnd = 0;
  }

  void startFrame(int r, std::size_t l) {
    Peer& peer = peers_[ix(r)];
    Incoming& in = peer.links[l].in;
    const std::string problem = decodeFrameHeader(in.header, fifo_.slotBytes, &in.frame);
    if (!problem.empty()) return protocolError(r, l, problem);
    if (in.frame.kind == FrameKind::data || in.frame.kind == FrameKind::credit) {
      if (&peer.linkOf(in.frame.channel) != &peer.links[l])
        return protocolError(r, l,
                             fmt::format("{} frame for channel {} on connection {} of {}",
                                         frameKindName(static_cast<std::uint8_t>(in.frame.kind)),
                                         in.frame.channel, l, peer.links.size()));
    }
    in.inPayload = true;
    in.payloadBytes = 0;
    if (in.frame.kind == FrameKind::data) {
      {
        std::lock_guard lock(fifoMutex_);
        in.fifo = &recvFifoLocked(r, static_cast<int>(in.frame.channel));
      }
      in.target = in.fifo->arrivalSlot();
      if (in.target == nullptr)
        return protocolError(r, l,
                             fmt::format("it sent more than {} unreleased slots on channel {}",
                                         fifo_.slots, in.frame.channel));
      const RemoteRegion* posted = in.fifo->claimPost(in.frame.bytes, in.frame.tag);
      in.delivered = posted != nullptr;
      if (posted != nullptr) in.posted = *posted;
    } else {
      in.scratch.resize(in.frame.bytes);
      in.target = in.scratch.data();
    }
    if (in.frame.bytes == 0) finishFrame(r, l);
  }

  void finishFrame(int r, std::size_t l) {
    Peer& peer = peers_[ix(r)];
    Incoming& in = peer.links[l].in;
    in.inPayload = false;
    in.headerBytes = 0;
    const auto text = [&] { return std::string(in.scratch.begin(), in.scratch.end()); };
    switch (in.frame.kind) {
      case FrameKind::data:
        in.fifo->commitArrival(in.frame.bytes, in.frame.tag, in.delivered);
        peer.links[l].pauseReading = in.delivered;
        in.delivered = false;
        break;
      case FrameKind::credit: {
        TcpSendFifo* fifo = nullptr;
        {
          std::lock_guard lock(fifoMutex_);
          const auto& byChannel = peer.send;
          if (in.frame.channel < byChannel.size()) fifo = byChannel[in.frame.channel].get();
        }
        if (fifo == nullptr || in.frame.count > fifo->outstanding())
          return protocolError(r, l,
                               fmt::format("it returned {} credits on channel {} for slots "
                                           "never sent",
                                           in.frame.count, in.frame.channel));
        fifo->addCredits(in.frame.count);
        break;
      }
      case FrameKind::call: {
        std::lock_guard lock(failureMutex_);
        peerCalls_[ix(r)] = text();
        break;
      }
      case FrameKind::abort:
        fail(text());
        break;
      case FrameKind::bye: {
        peer.links[l].departed = true;
        if (std::string reason = departures_.peerLeft(r, in.frame.tag); !reason.empty())
          fail(reason);
        break;
      }
      case FrameKind::hello:
        return protocolError(r, l, "a second hello");
    }
  }

  void protocolError(int r, std::size_t l, const std::string& problem) {
    lost(r, l, "it sent a malformed frame: " + problem);
  }

  // A connection to a peer failed: the group fails on this rank (unless the peer left cleanly
  // on that connection).
  void lost(int r, std::size_t l, const std::string& why) {
    Peer& peer = peers_[ix(r)];
    Link& link = peer.links[l];
    link.closed = true;
    // Messages that will never be sent: their regions are the sender's again.
    for (const Outgoing& out : link.out)
      if (out.fifo != nullptr) out.fifo->frameWritten();
    link.out.clear();
    if (link.departed) return;
    fail(fmt::format("tcp transport: rank {} lost {}: {}", rank_, peer.where, why));
  }

  // Leaving: flushes everything queued and a bye to every peer, then shuts down the sending
  // side and keeps reading until each peer closed its side too (bounded by kByeFlushLimit).
  // Closing a socket with unread bytes would send a reset, and a reset can destroy data the
  // peer has not read yet; so a rank closes only once its peers have finished with it.
  void sayGoodbye() {
    forEachLink([&](int r, std::size_t l) {
      Link& link = peers_[ix(r)].links[l];
      if (!link.closed)
        link.out.push_back(makeFrame(FrameKind::bye, 0, 0, departures_.collectivesStarted()));
    });
    const auto deadline = Clock::now() + kByeFlushLimit;
    while (Clock::now() < deadline) {
      std::vector<pollfd> polls;
      forEachLink([&](int r, std::size_t l) {
        writeSome(r, l);
        Link& link = peers_[ix(r)].links[l];
        if (link.closed) return;
        if (link.out.empty() && !link.shutDown) {
          ::shutdown(link.fd.get(), SHUT_WR);
          link.shutDown = true;
        }
        polls.push_back(
            {link.fd.get(), static_cast<short>(POLLIN | (link.out.empty() ? 0 : POLLOUT)), 0});
      });
      if (polls.empty()) break;
      ::poll(polls.data(), polls.size(), 10);
      for (const pollfd& p : polls) {
        if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
          const auto [r, l] = linkOfFd(p.fd);
          readSome(r, l);
        }
      }
    }
  }

  int rank_;
  int nranks_;
  int ranksOnThisHost_ = 1;
  FifoOptions fifo_;
  std::mutex ioMutex_;       // whoever moves bytes: every Link; snapshots
  std::vector<Peer> peers_;  // the fifo vectors: fifoMutex_

  mutable std::mutex fifoMutex_;
  std::vector<SendEntry> sends_;
  std::vector<RecvEntry> recvs_;
  std::atomic<std::uint64_t> fifoGeneration_{0};
  std::uint64_t seenGeneration_ = ~0ull;  // ioMutex_
  std::vector<SendEntry> sendSnapshot_;   // ioMutex_
  std::vector<RecvEntry> recvSnapshot_;   // ioMutex_

  std::mutex controlMutex_;
  std::vector<std::pair<int, Outgoing>> control_;

  mutable std::mutex failureMutex_;
  std::atomic<bool> failed_{false};
  std::string failure_;
  std::vector<std::string> peerCalls_;
  Departures departures_;  // peers that said bye, and the collective this rank runs

  SocketFd wakeFd_;
  std::atomic<bool> sleeping_{false};
  std::atomic<Clock::rep> lastPoke_{0};  // when a FIFO call last polled (steady clock ticks)
  std::atomic<bool> stopping_{false};
  std::thread progress_;
};

}  // namespace

std::unique_ptr<ConnectionSet> connectTcp(Store& store, int rank, int nranks,
                                          const TcpOptions& options) {
  if (nranks < 1 || rank < 0 || rank >= nranks)
    throw OptionError(
        fmt::format("tcp transport: rank {} is not a rank of a {}-rank group", rank, nranks));
  if (options.groupId.empty())
    throw OptionError("tcp transport: TcpOptions::groupId must name the communicator");
  std::vector<TcpPeerLink> links = establishTcpLinks(store, rank, nranks, options);
  return std::make_unique<TcpConnections>(rank, nranks, options, std::move(links));
}

}  // namespace chorus::transport
