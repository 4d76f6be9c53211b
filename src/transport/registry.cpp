#include "transport/registry.h"

#include <deque>

#include <fmt/format.h>

#include "support/error.h"
#include "support/named_table.h"
#include "transport/mixed_transport.h"
#include "transport/shm/shm_transport.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/thread/thread_group.h"
#include "transport/ucx/ucx_transport.h"

namespace chorus::transport {
namespace {

ShmOptions shmOptionsOf(const TransportOptions& options) {
  ShmOptions shm;
  shm.fifo = options.fifo;
  shm.namePrefix = options.groupName;
  shm.timeout = options.timeout;
  return shm;
}

UcxOptions ucxOptionsOf(const TransportOptions& options) {
  UcxOptions ucx;
  ucx.fifo = options.fifo;
  ucx.groupId = options.groupName;
  ucx.timeout = options.timeout;
  return ucx;
}

TcpOptions tcpOptionsOf(const TransportOptions& options) {
  TcpOptions tcp;
  tcp.fifo = options.fifo;
  tcp.groupId = options.groupName;
  tcp.timeout = options.timeout;
  tcp.authToken = options.authToken;
  tcp.ifname = options.interfaceFilter;
  tcp.socketsPerPeer = options.socketsPerPeer;
  return tcp;
}

std::vector<std::shared_ptr<ConnectionSet>> makeThreadGroup(int nranks,
                                                            const TransportOptions& options) {
  auto group = std::make_shared<ThreadGroup>(nranks, options.fifo);
  std::vector<std::shared_ptr<ConnectionSet>> ranks;
  ranks.reserve(static_cast<std::size_t>(nranks));
  // Each rank's pointer shares the group's ownership; releasing it is the rank leaving.
  for (int r = 0; r < nranks; ++r)
    ranks.emplace_back(&group->rank(r), [group, r](ConnectionSet*) { group->leave(r); });
  return ranks;
}

// The built-in transports, in the order listings show them.
std::deque<TransportEntry> builtinTransports() {
  std::deque<TransportEntry> entries;
  entries.push_back({.name = "thread",
                     .description = "ranks are threads of one process",
                     .supports = {.reach = TransportReach::oneProcess},
                     .tuning = {"thread", "thread"},
                     .makeGroup = makeThreadGroup,
                     .connectRank = nullptr});
  entries.push_back(
      {.name = "shm",
       .description = "processes on one host, over shared memory",
       .supports = {.reach = TransportReach::oneHost, .registeredSingleCopy = true},
       .tuning = {"shm", "shm"},
       .makeGroup = nullptr,
       .connectRank = [](Store& store, int rank, int nranks, const TransportOptions& options) {
         return connectShm(store, rank, nranks, shmOptionsOf(options));
       }});
  entries.push_back(
      {.name = "tcp",
       .description = "processes on any hosts, every pair over tcp",
       .supports = {.reach = TransportReach::anyHosts},
       .tuning = {"tcp", "tcp"},
       .makeGroup = nullptr,
       .connectRank = [](Store& store, int rank, int nranks, const TransportOptions& options) {
         return connectTcp(store, rank, nranks, tcpOptionsOf(options));
       }});
  entries.push_back(
      {.name = "auto",
       .description = "shm or tcp per peer (shm within a host, tcp across hosts; ucx across "
                      "hosts where every rank's UCX finds an RDMA device)",
       .supports = {.reach = TransportReach::anyHosts,
                    .registeredSingleCopy = true,
                    .choosesPerPeer = true},
       .tuning = {"shm", "tcp"},
       .makeGroup = nullptr,
       .connectRank = [](Store& store, int rank, int nranks, const TransportOptions& options) {
         return connectMixed(store, rank, nranks,
                             {shmOptionsOf(options), tcpOptionsOf(options), ucxOptionsOf(options),
                              options.remoteTransport});
       }});
  entries.push_back(
      {.name = "ucx",
       .description = "processes on any hosts, every pair over UCX (RDMA where UCX finds it)",
       .supports = {.reach = TransportReach::anyHosts},
       .tuning = {"tcp", "tcp"},
       .makeGroup = nullptr,
       .connectRank = [](Store& store, int rank, int nranks, const TransportOptions& options) {
         return connectUcx(store, rank, nranks, ucxOptionsOf(options));
       }});
  return entries;
}

NamedTable<TransportEntry>& transportTable() {
  static NamedTable<TransportEntry> table("transport", builtinTransports());
  return table;
}

// The built-in transport `name` (an internal error if it is missing).
const TransportEntry& builtin(std::string_view name) {
  const TransportEntry* entry = findTransport(name);
  CHORUS_INTERNAL_ASSERT(entry != nullptr, "built-in transport missing from the registry");
  return *entry;
}

std::vector<const TransportEntry*> filtered(TransportFilter filter) {
  std::vector<const TransportEntry*> entries = listTransports();
  if (filter != nullptr)
    std::erase_if(entries, [&](const TransportEntry* e) { return !filter(*e); });
  return entries;
}

}  // namespace

std::vector<const TransportEntry*> listTransports() {
  return transportTable().list();
}

const TransportEntry* findTransport(std::string_view name) {
  return transportTable().find(name);
}

const TransportEntry& requireTransport(std::string_view name, std::string_view what,
                                       std::string_view hint) {
  if (const TransportEntry* entry = findTransport(name)) return *entry;
  throw OptionError(fmt::format("{}='{}' is not a transport; choose {} ({}){}", what, name,
                                transportNames(nullptr, "'"), describeTransports(), hint));
}

const TransportEntry& defaultTransport(TransportReach where) {
  switch (where) {
    case TransportReach::oneProcess:
      return builtin("thread");
    case TransportReach::oneHost:
      return builtin("shm");
    case TransportReach::anyHosts:
      break;
  }
  return builtin("auto");
}

std::string transportNames(TransportFilter filter, std::string_view quote) {
  const std::vector<const TransportEntry*> entries = filtered(filter);
  std::string text;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) text += i + 1 == entries.size() ? " or " : ", ";
    text += fmt::format("{}{}{}", quote, entries[i]->name, quote);
  }
  return text;
}

std::string describeTransports(TransportFilter filter) {
  std::string text;
  for (const TransportEntry* entry : filtered(filter))
    text += fmt::format("{}{}: {}", text.empty() ? "" : "; ", entry->name, entry->description);
  return text;
}

void registerTransport(TransportEntry entry) {
  if (!entry.name.empty() && (entry.makeGroup == nullptr) == (entry.connectRank == nullptr))
    throw OptionError(fmt::format(
        "registerTransport: transport '{}' needs exactly one factory: makeGroup (all ranks as "
        "threads of one process) or connectRank (each rank through a store)",
        entry.name));
  transportTable().add(std::move(entry), "registerTransport");
}

}  // namespace chorus::transport
