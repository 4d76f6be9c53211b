// TcpStore: a Store served over TCP by rank 0 and reached by every rank (runtime bootstrap
// across hosts, the store behind a unique id). Protocol and server loop live in tcp_store.cpp.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport/store.h"

namespace chorus::transport {

// Rank 0 constructs it with isServer=true: it binds host:port (port 0 picks a free port; port()
// tells which) and serves the store from one background thread (a poll() loop; a blocked get()
// or wait() costs no thread). Every instance, the server's included, is also a client: each call
// takes a connection from a small pool (opening one if all are busy, retrying until
// `connectTimeout`), so concurrent calls on one object never wait for each other. The
// constructor connects once, so a client whose server is not up yet retries for up to
// `connectTimeout` and then throws CommError; once connected, a refused reconnect fails at once.
//
// Errors: socket failures throw CommError naming host:port, the operation, the errno text and a
// hint; a get()/wait() that the server times out throws TimeoutError; if the server goes away
// (its TcpStore destroyed or its process dead) pending and later calls throw CommError at once.
// set/add/check give up after 60 s without a reply. Destroying the server instance stops its
// thread and closes every connection. Thread-safe.
//
// `authToken` (CHORUS_AUTH_TOKEN): a client presents it in its hello, and a server with a
// non-empty token refuses every client that does not present the same one (CommError on the
// client: "wrong or missing CHORUS_AUTH_TOKEN"). The token travels in clear: it keeps out other
// jobs and stray clients, not an eavesdropper on the network (docs/multihost.md).
class TcpStore : public Store {
 public:
  TcpStore(const std::string& host, int port, bool isServer,
           std::chrono::milliseconds connectTimeout, std::string authToken = {});
  ~TcpStore() override;
  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  void set(const std::string& key, const std::vector<std::uint8_t>& value) override;
  std::vector<std::uint8_t> get(const std::string& key, std::chrono::milliseconds timeout) override;
  std::int64_t add(const std::string& key, std::int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;

  // The port the server listens on (the bound one when constructed with port 0).
  int port() const { return port_; }
  const std::string& host() const { return host_; }

 private:
  class Server;
  struct Reply;

  // Sends one request and returns the reply, waiting at most `replyTimeout` for it; throws
  // CommError naming `operation` on any socket or protocol failure.
  Reply call(const std::string& operation, const std::vector<std::uint8_t>& request,
             std::chrono::milliseconds replyTimeout);
  int takeConnection(const std::string& operation);
  void returnConnection(int fd);
  std::string endpoint() const;

  std::string host_;         // as given by the user
  std::string connectHost_;  // where clients connect (loopback if the server binds a wildcard)
  int port_ = 0;
  std::chrono::milliseconds connectTimeout_;
  std::string authToken_;
  std::unique_ptr<Server> server_;  // only on the server instance
  std::mutex poolMutex_;
  std::vector<int> idle_;  // connected sockets not in use by any call
  // Set once a connection has worked: from then on a refused connect means the server is gone,
  // so it fails at once instead of retrying until connectTimeout.
  std::atomic<bool> connectedOnce_{false};
};

}  // namespace chorus::transport
