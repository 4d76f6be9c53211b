// The transport registry (transport layer): every transport by name, with a one-line
// description, what it supports, whose tuning tables apply and its factory. Configuration, the
// communicator factory, the process runner and the CLI find transports here instead of naming
// them; the built-in ones (thread, shm, tcp, auto, ucx) are listed in registry.cpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "transport/connections.h"
#include "transport/fifo.h"
#include "transport/remote_choice.h"
#include "transport/store.h"

namespace chorus::transport {

// Where the ranks of one group run, narrowest first.
enum class TransportReach : std::uint8_t {
  oneProcess,  // threads of one process only
  oneHost,     // processes (or threads) on one host
  anyHosts,    // processes on any hosts that reach each other
};

// What a transport supports.
struct TransportSupport {
  TransportReach reach = TransportReach::oneProcess;  // the widest placement it connects
  // Peers on this host map registered memory (chorus::memAlloc, the workspace's buffers), so a
  // message sent from it crosses with a single copy (shm/registered_memory.h).
  bool registeredSingleCopy = false;
  // It picks another transport per peer from where the ranks run (shm within a host, tcp
  // across), so it is for ranks in separate processes only; threads of one process name the
  // transport they use.
  bool choosesPerPeer = false;
};

// Whose tuning tables (selection/tuning_table.h) apply to a communicator on this transport:
// `withinHost`'s while ranks share a host, `acrossHosts`'s when every rank has a host of its
// own. Usually the transport's own name twice.
struct TuningTables {
  std::string withinHost;
  std::string acrossHosts;
};

// What every transport is created with. Each factory maps it onto its own options (ShmOptions,
// TcpOptions) and ignores what it has no use for.
struct TransportOptions {
  FifoOptions fifo;
  // Unique per communicator and the same on every rank, e.g. "chorus-<nonce hex>-<comm id>":
  // names the shm segments and store keys, and is the tcp group id.
  std::string groupName;
  std::chrono::milliseconds timeout{300'000};  // rendezvous and connection set-up
  std::string authToken;        // a secret every tcp peer presents (CHORUS_AUTH_TOKEN); "": none
  std::string interfaceFilter;  // tcp interfaces (CHORUS_SOCKET_IFNAME); "": the default choice
  int socketsPerPeer = 1;       // tcp connections per pair of ranks (CHORUS_SOCKETS_PER_PEER)
  // How the auto transport reaches other hosts (CHORUS_REMOTE_TRANSPORT).
  RemoteTransport remoteTransport = RemoteTransport::automatic;
};

// Makes all `nranks` ranks of a group at once, as threads of this process: element r is rank
// r's view, used from rank r's thread only, and keeps the group alive.
using GroupFactory = std::function<std::vector<std::shared_ptr<ConnectionSet>>(
    int nranks, const TransportOptions& options)>;
// Connects one rank. Collective: every rank of the group calls it with the same store
// namespace and options (the ranks may be threads or processes). Throws CommError or
// TimeoutError as the transport's connect function does.
using RankFactory = std::function<std::unique_ptr<ConnectionSet>(Store& store, int rank, int nranks,
                                                                 const TransportOptions& options)>;

// One registered transport. Exactly one of the factories is set.
struct TransportEntry {
  std::string name;         // "shm": CHORUS_TRANSPORT, CommConfig::transport, --transport
  std::string description;  // one line, e.g. "processes on one host, over shared memory"
  TransportSupport supports;
  TuningTables tuning;
  GroupFactory makeGroup;   // a group made whole in one process (ranks are threads)
  RankFactory connectRank;  // each rank connects on its own, through a store
  // Whether Communicator::initAll may use it (ranks that are threads of one process).
  bool runsThreads() const { return !supports.choosesPerPeer; }
  // Whether ranks in separate processes may use it.
  bool runsProcesses() const { return connectRank != nullptr; }
};

// Which transports a listing or a lookup accepts.
using TransportFilter = bool (*)(const TransportEntry& entry);

// Every registered transport: the built-in ones in a fixed order (thread, shm, tcp, auto, ucx),
// then those registerTransport() added, in order. The entries live as long as the process.
// Thread-safe.
std::vector<const TransportEntry*> listTransports();

// The transport named `name`, or nullptr. Thread-safe.
const TransportEntry* findTransport(std::string_view name);

// The transport named `name`; else OptionError "<what>='<name>' is not a transport; choose
// 'thread', 'shm', 'tcp' or 'auto' (thread: ...; shm: ...)<hint>", every registered name with
// its description.
const TransportEntry& requireTransport(std::string_view name, std::string_view what,
                                       std::string_view hint = {});

// The transport ranks use when none is named: for threads of one process "thread", for
// processes on one host "shm", for processes that may span hosts "auto".
const TransportEntry& defaultTransport(TransportReach where);

// "thread, shm or tcp" (with quote "'": "'thread', 'shm' or 'tcp'"): the names of the
// registered transports `filter` accepts (all when null), in registry order.
std::string transportNames(TransportFilter filter = nullptr, std::string_view quote = {});

// "thread: ranks are threads of one process; shm: processes on one host, ...": the same
// transports, each with its description.
std::string describeTransports(TransportFilter filter = nullptr);

// Adds a transport (tests, plug-ins). OptionError if the name is empty or taken, or if not
// exactly one factory is set. Thread-safe; entries are never removed.
void registerTransport(TransportEntry entry);

}  // namespace chorus::transport
