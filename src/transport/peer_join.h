// Waiting for a peer's first key in a transport's rendezvous: a rank that never publishes it has
// not joined the communicator, and the error says so by rank rather than by store key.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "transport/store.h"

namespace chorus::transport {

// store.get(key) until `deadline`, where `key` is what rank `peer` of `nranks` publishes when it
// joins. Throws TimeoutError naming `peer` ("rank 2 of 4 did not join the communicator within
// 10000 ms, so rank 0 stops waiting: ...") when it never does, and CommError naming it when the
// store fails. `timeout` is the whole wait, for the message.
std::vector<std::uint8_t> awaitPeerJoin(Store& store, const std::string& key, int peer, int nranks,
                                        int rank, std::chrono::steady_clock::time_point deadline,
                                        std::chrono::milliseconds timeout);

}  // namespace chorus::transport
