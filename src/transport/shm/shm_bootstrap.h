// Set-up of the shm transport through the store: every rank publishes where it runs (host
// name, kernel boot id, pid namespace) and its pid, and all ranks check that they share one
// host before any shared memory is touched.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "transport/process_identity.h"
#include "transport/store.h"

namespace chorus::transport {

// The store key of `rank`'s identity for the group with segment prefix `namePrefix`, and the
// record's text ("key=value" lines). parseIdentity returns nullopt for malformed text.
std::string identityKey(std::string_view namePrefix, int rank);
std::string formatIdentity(const RankIdentity& identity);
std::optional<RankIdentity> parseIdentity(std::string_view text);

// Collective: publishes this rank's identity and returns every rank's, indexed by rank.
// Throws CommError naming the ranks and their hosts if they are not all on this host (or a
// record is malformed), and the store's TimeoutError if a rank never publishes.
std::vector<RankIdentity> exchangeIdentities(Store& store, std::string_view namePrefix, int rank,
                                             int nranks, std::chrono::milliseconds timeout);

}  // namespace chorus::transport
