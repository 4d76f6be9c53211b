#include "transport/shm/shm_bootstrap.h"

#include <unistd.h>

#include <charconv>
#include <iterator>
#include <map>

#include <fmt/format.h>

#include "support/error.h"

namespace chorus::transport {

namespace {

std::string formatRanks(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i)
    text += fmt::format("{}{}", i ? "," : "", ranks[i]);
  return text;
}

}  // namespace

std::string identityKey(std::string_view namePrefix, int rank) {
  return fmt::format("shm/{}/identity/{}", namePrefix, rank);
}

std::string formatIdentity(const RankIdentity& identity) {
  return fmt::format("host={}\nboot={}\npidns={}\npid={}\n", identity.hostname, identity.bootId,
                     identity.pidNamespace, identity.pid);
}

std::optional<RankIdentity> parseIdentity(std::string_view text) {
  RankIdentity identity;
  bool hasHost = false, hasBoot = false, hasPid = false;
  while (!text.empty()) {
    const auto end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    const auto equals = line.find('=');
    if (equals == std::string_view::npos) return std::nullopt;
    const std::string_view key = line.substr(0, equals), value = line.substr(equals + 1);
    if (key == "host") {
      identity.hostname = value;
      hasHost = true;
    } else if (key == "boot") {
      identity.bootId = value;
      hasBoot = true;
    } else if (key == "pidns") {
      identity.pidNamespace = value;
    } else if (key == "pid") {
      long pid = 0;
      const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), pid);
      if (ec != std::errc() || ptr != value.data() + value.size() || pid <= 0) return std::nullopt;
      identity.pid = static_cast<pid_t>(pid);
      hasPid = true;
    }
  }
  if (!hasHost || !hasBoot || !hasPid) return std::nullopt;
  return identity;
}

std::vector<RankIdentity> exchangeIdentities(Store& store, std::string_view namePrefix, int rank,
                                             int nranks, std::chrono::milliseconds timeout) {
  const RankIdentity self = identifyThisProcess();
  store.set(identityKey(namePrefix, rank), toBytes(formatIdentity(self)));
  const auto deadline = deadlineAfter(timeout);
  std::vector<RankIdentity> identities(nranks);
  for (int r = 0; r < nranks; ++r) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    const std::string text = toString(
        store.get(identityKey(namePrefix, r), std::max(left, std::chrono::milliseconds(0))));
    const auto identity = parseIdentity(text);
    if (!identity)
      throw CommError(fmt::format(
          "shm transport: rank {} published a malformed identity record '{}' under '{}'; every "
          "rank must run the same chorus build and use its own rank number",
          r, text, identityKey(namePrefix, r)));
    identities[r] = *identity;
  }
  // Group the ranks by machine; one machine is what shared memory needs.
  std::map<std::pair<std::string, std::string>, std::vector<int>> hosts;
  for (int r = 0; r < nranks; ++r)
    hosts[{identities[r].hostname, identities[r].bootId}].push_back(r);
  if (hosts.size() > 1) {
    std::string where;
    for (const auto& [host, ranks] : hosts)
      where += fmt::format("{}{} on host '{}' (boot id {})", where.empty() ? "" : "; ",
                           formatRanks(ranks), host.first, host.second);
    throw CommError(fmt::format(
        "shm transport: the ranks are not all on one host: {}. Shared memory needs every rank on "
        "one host; start them all on one machine, or use the TCP transport across hosts "
        "(CHORUS_TRANSPORT=tcp, or auto for shm within a host and tcp between hosts; "
        "docs/multihost.md)",
        where));
  }
  return identities;
}

}  // namespace chorus::transport
