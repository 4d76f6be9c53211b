#include "transport/tcp/tcp_bootstrap.h"

#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <thread>

#include "chorus/error.h"
#include "transport/peer_join.h"
#include "transport/process_identity.h"
#include "transport/tcp/net_interfaces.h"
#include "transport/tcp/tcp_frame.h"

namespace chorus::transport {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kHelloTimeout(10'000);
constexpr milliseconds kRefusedGrace(2'000);

milliseconds left(Clock::time_point deadline) {
  return std::max(milliseconds(0),
                  std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
}

std::string key(const TcpOptions& options, std::string_view what, int rank) {
  return fmt::format("tcp/{}/{}/{}", options.groupId, what, rank);
}

struct AddressRecord {
  std::string address;
  int port = 0;
  std::string host;
  std::string ifname;
};

// The address `peer` published; throws CommError when malformed.
AddressRecord peerAddress(Store& store, const TcpOptions& options, int peer,
                          Clock::time_point deadline) {
  const std::string record = toString(store.get(key(options, "addr", peer), left(deadline)));
  char address[128] = {}, host[256] = {}, ifname[64] = {};
  int port = 0;
  int sockets = 0;
  if (std::sscanf(record.c_str(), "%127s %d %255s %63s %d", address, &port, host, ifname,
                  &sockets) != 5 ||
      port <= 0 || port > 65535)
    throw CommError(fmt::format(
        "tcp transport: rank {} published a malformed address '{}'; every rank must run the "
        "same chorus",
        peer, record));
  if (sockets != options.socketsPerPeer)
    throw CommError(
        fmt::format("tcp transport: rank {} opens {} connections per peer and this rank {} "
                    "(CHORUS_SOCKETS_PER_PEER); set the same value on every rank",
                    peer, sockets, options.socketsPerPeer));
  return {address, port, host, ifname};
}

bool isLoopbackAddress(const std::string& address) {
  return address.starts_with("127.") || address == "::1";
}

// A listening socket on `address` (numeric), port chosen by the kernel.
SocketFd listenOn(const NetInterface& where, int backlog, int* port) {
  auto resolved = resolve(where.address, 0, true);
  if (auto* error = std::get_if<IoError>(&resolved))
    throw CommError(fmt::format("tcp transport: cannot resolve {} ({}): {}", where.address,
                                where.name, describe(*error)));
  const addrinfo* info = std::get<AddrInfoList>(resolved).get();
  SocketFd fd(::socket(info->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) throw CommError(fmt::format("tcp transport: socket: {}", std::strerror(errno)));
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd.get(), info->ai_addr, info->ai_addrlen) != 0 || ::listen(fd.get(), backlog) != 0)
    throw CommError(fmt::format("tcp transport: cannot listen on {} ({}): {}", where.address,
                                where.name, std::strerror(errno)));
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &length);
  *port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                      : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return fd;
}

// Connects to address:port, retrying until the deadline; but a peer publishes its address only
// once it listens, so a connection still refused (or the host unreachable) after
// kRefusedGrace means the address is wrong for this host: it gives up then.
SocketFd connectTo(const std::string& address, int port, Clock::time_point deadline,
                   std::string* lastError) {
  auto resolved = resolve(address, port, false);
  if (auto* error = std::get_if<IoError>(&resolved)) {
    *lastError = describe(*error);
    return {};
  }
  const addrinfo* info = std::get<AddrInfoList>(resolved).get();
  milliseconds pause(10);
  Clock::time_point firstRefusal = Clock::time_point::max();
  while (true) {
    SocketFd fd(::socket(info->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) {
      *lastError = describe(sysError("socket"));
      return {};
    }
    setNonBlocking(fd.get());
    int rc = ::connect(fd.get(), info->ai_addr, info->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      if (auto error = waitFor(fd.get(), POLLOUT, deadline, "connect")) {
        *lastError = describe(*error);
        return {};
      }
      int soError = 0;
      socklen_t length = sizeof(soError);
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &soError, &length);
      rc = soError == 0 ? 0 : -1;
      errno = soError;
    }
    if (rc == 0) return fd;
    const int error = errno;
    *lastError = describe(sysError("connect"));
    if (error == ECONNREFUSED || error == EHOSTUNREACH || error == ENETUNREACH) {
      if (firstRefusal == Clock::time_point::max()) firstRefusal = Clock::now();
      if (Clock::now() - firstRefusal >= kRefusedGrace) return {};
    }
    if (Clock::now() + pause >= deadline) return {};
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, milliseconds(500));
  }
}

void sendHello(int fd, int rank, int index, const TcpOptions& options, Clock::time_point deadline,
               const std::string& where) {
  std::array<std::uint8_t, kFrameHeaderBytes> header{};
  FrameHeader hello;
  hello.kind = FrameKind::hello;
  hello.count = static_cast<std::uint32_t>(rank);
  hello.channel = static_cast<std::uint32_t>(index);
  hello.tag = groupTag(options.groupId);
  hello.bytes = static_cast<std::uint32_t>(options.authToken.size());
  encodeFrameHeader(hello, header);
  std::vector<std::uint8_t> bytes(header.begin(), header.end());
  bytes.insert(bytes.end(), options.authToken.begin(), options.authToken.end());
  if (auto error = sendAll(fd, bytes, deadline))
    throw CommError(fmt::format("tcp transport: rank {} could not greet {}: {}", rank, where,
                                describe(*error)));
}

// Reads and checks a hello on a fresh connection; the sender's rank (and in `index` which of
// the pair's connections this is), or -1 with `why` set.
int readHello(int fd, int rank, int nranks, const TcpOptions& options, Clock::time_point deadline,
              int* index, std::string* why) {
  std::array<std::uint8_t, kFrameHeaderBytes> header{};
  const auto helloDeadline =
      std::min(deadline, Clock::now() + std::min(kHelloTimeout, options.timeout / 10));
  if (auto error = recvAll(fd, header, helloDeadline)) {
    *why = "no hello (" + describe(*error) + ")";
    return -1;
  }
  FrameHeader hello;
  const std::string problem = decodeFrameHeader(header, options.fifo.slotBytes, &hello);
  if (!problem.empty()) {
    *why = problem;
    return -1;
  }
  if (hello.kind != FrameKind::hello) {
    *why = fmt::format("first frame is {}, not hello",
                       frameKindName(static_cast<std::uint8_t>(hello.kind)));
    return -1;
  }
  std::vector<std::uint8_t> token(hello.bytes);
  if (auto error = recvAll(fd, token, helloDeadline)) {
    *why = "truncated hello (" + describe(*error) + ")";
    return -1;
  }
  if (hello.tag != groupTag(options.groupId)) {
    *why = "hello from another communicator or job (group id differs)";
    return -1;
  }
  if (!sameSecret(options.authToken, token)) {
    *why = "wrong or missing CHORUS_AUTH_TOKEN";
    return -1;
  }
  const int from = static_cast<int>(hello.count);
  if (from <= rank || from >= nranks) {
    *why =
        fmt::format("hello claims rank {}, which does not connect to rank {}", hello.count, rank);
    return -1;
  }
  if (hello.channel >= static_cast<std::uint32_t>(options.socketsPerPeer)) {
    *why = fmt::format("hello from rank {} for connection {} of {} per peer", from, hello.channel,
                       options.socketsPerPeer);
    return -1;
  }
  *index = static_cast<int>(hello.channel);
  return from;
}

}  // namespace

std::uint64_t groupTag(const std::string& groupId) {
  std::uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : groupId) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

std::vector<TcpPeerLink> establishTcpLinks(Store& store, int rank, int nranks,
                                           const TcpOptions& options) {
  const auto deadline = deadlineAfter(options.timeout);
  const RankIdentity identity = identifyThisProcess();
  const std::string here = networkNamespaceId(identity);
  store.set(key(options, "netns", rank), toBytes(here));
  std::vector<bool> elsewhere(static_cast<std::size_t>(nranks), false);  // another host
  for (int r = 0; r < nranks; ++r)
    elsewhere[static_cast<std::size_t>(r)] =
        toString(awaitPeerJoin(store, key(options, "netns", r), r, nranks, rank, deadline,
                               options.timeout)) != here;
  const bool remote = std::find(elsewhere.begin(), elsewhere.end(), true) != elsewhere.end();

  const NetInterface chosen = chooseInterface(listInterfaces(), options.ifname, remote);
  int port = 0;
  SocketFd listener = listenOn(chosen, std::max(nranks * options.socketsPerPeer, 16), &port);
  const std::string self = fmt::format("{} {} {} {} {}", chosen.address, port,
                                       identity.hostname.empty() ? "?" : identity.hostname,
                                       chosen.name, options.socketsPerPeer);
  store.set(key(options, "addr", rank), toBytes(self));

  const auto wanted = [&](int peer) {
    return options.peers.empty() || options.peers[static_cast<std::size_t>(peer)];
  };
  // Every peer's record first, so a mismatch (CHORUS_SOCKETS_PER_PEER) fails both sides now.
  std::vector<AddressRecord> addresses(static_cast<std::size_t>(nranks));
  for (int peer = 0; peer < nranks; ++peer) {
    if (peer == rank || !wanted(peer)) continue;
    const AddressRecord& a = addresses[static_cast<std::size_t>(peer)] =
        peerAddress(store, options, peer, deadline);
    // A loopback address on another host can never be reached from here: say so now.
    if (elsewhere[static_cast<std::size_t>(peer)] && isLoopbackAddress(a.address))
      throw CommError(fmt::format(
          "tcp transport: rank {} on {} listens on loopback ({} via {}), which rank {} on "
          "another host cannot reach; set CHORUS_SOCKET_IFNAME on every rank to an interface "
          "the hosts share (this rank listens on {} {})",
          peer, a.host, a.address, a.ifname, rank, chosen.name, chosen.address));
  }
  std::vector<TcpPeerLink> links(static_cast<std::size_t>(nranks));
  for (int peer = 0; peer < nranks; ++peer)
    links[static_cast<std::size_t>(peer)].sameHost = !elsewhere[static_cast<std::size_t>(peer)];
  for (int peer = 0; peer < rank; ++peer) {
    if (!wanted(peer)) continue;
    const AddressRecord& a = addresses[static_cast<std::size_t>(peer)];
    TcpPeerLink& link = links[static_cast<std::size_t>(peer)];
    link.where =
        fmt::format("rank {} on {} ({}:{} via {})", peer, a.host, a.address, a.port, a.ifname);
    for (int index = 0; index < options.socketsPerPeer; ++index) {
      std::string error;
      SocketFd fd = connectTo(a.address, a.port, deadline, &error);
      if (!fd)
        throw CommError(fmt::format(
            "tcp transport: rank {} cannot reach {}: {}; check that the hosts can reach each "
            "other on that address, or choose another interface with CHORUS_SOCKET_IFNAME "
            "(rank {} listens on {} {})",
            rank, link.where, error, rank, chosen.name, chosen.address));
      sendHello(fd.get(), rank, index, options, deadline, link.where);
      link.sockets.push_back(std::move(fd));
    }
  }

  int missing = 0;
  for (int peer = rank + 1; peer < nranks; ++peer) {
    if (!wanted(peer)) continue;
    missing += options.socketsPerPeer;
    links[static_cast<std::size_t>(peer)].sockets.resize(
        static_cast<std::size_t>(options.socketsPerPeer));
  }
  std::vector<std::string> refused;
  setNonBlocking(listener.get());
  while (missing > 0) {
    if (auto error = waitFor(listener.get(), POLLIN, deadline, "accept")) {
      std::vector<int> absent;
      for (int r = rank + 1; r < nranks; ++r) {
        const auto& sockets = links[static_cast<std::size_t>(r)].sockets;
        if (wanted(r) && std::any_of(sockets.begin(), sockets.end(),
                                     [](const SocketFd& socket) { return !socket; }))
          absent.push_back(r);
      }
      throw TimeoutError(
          fmt::format("tcp transport: rank {} waited {} ms for ranks {} to connect to {}:{}{}{}",
                      rank, options.timeout.count(), fmt::join(absent, ", "), chosen.address, port,
                      refused.empty() ? "" : "; refused connections: ", fmt::join(refused, "; ")));
    }
    sockaddr_storage from{};
    socklen_t length = sizeof(from);
    // Non-blocking, so a connection that never sends its hello costs at most the hello
    // timeout instead of hanging the rendezvous.
    SocketFd fd(::accept4(listener.get(), reinterpret_cast<sockaddr*>(&from), &length,
                          SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd) continue;
    std::string why;
    int index = 0;
    const int peer = readHello(fd.get(), rank, nranks, options, deadline, &index, &why);
    if (peer < 0 || !wanted(peer) ||
        links[static_cast<std::size_t>(peer)].sockets[static_cast<std::size_t>(index)]) {
      refused.push_back(why.empty() ? fmt::format("a connection claiming rank {}, which is "
                                                  "already connected or reached over shm",
                                                  peer)
                                    : why);
      continue;
    }
    TcpPeerLink& link = links[static_cast<std::size_t>(peer)];
    if (link.where.empty()) {
      const AddressRecord& a = addresses[static_cast<std::size_t>(peer)];
      link.where = fmt::format("rank {} on {} ({})", peer, a.host, a.address);
    }
    link.sockets[static_cast<std::size_t>(index)] = std::move(fd);
    --missing;
  }
  return links;
}

}  // namespace chorus::transport
