// How the ranks of a device group swap the descriptors of their mailboxes (device layer): each
// rank gives one short text (an address, a /dev/shm name, a CUDA IPC handle) and gets every
// rank's back, like NCCL's bootstrap allgather. Two ways: through a rendezvous store (the
// groups the tests and runners make), or over the communicator's own connections on a channel
// no plan uses (the device executors, which have connections and no store).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "transport/connections.h"
#include "transport/store.h"

namespace chorus::device {

// Gathers one descriptor from every rank: the result's element r is rank r's. Every rank must
// call it the same number of times, each round a barrier of the whole group. Throws
// TimeoutError when a peer does not answer in time, CommError when the group failed.
using PeerExchange = std::function<std::vector<std::string>(const std::string& mine)>;

// Rounds through `store` under "<prefix>/<round>/<rank>" (the store outlives the exchange).
PeerExchange storeExchange(transport::Store& store, std::string prefix, int rank, int nranks,
                           std::chrono::milliseconds timeout);

// The channel of the communicator's connections the device executors swap descriptors on:
// above every plan's channels, and not point-to-point's (1000, api/p2p.cpp).
inline constexpr int kDeviceSetupChannel = 1001;

// Rounds over `connections` (which outlive the exchange): one message to and from every peer
// on kDeviceSetupChannel. `what` names the exchange in errors ("executor 'device'").
PeerExchange connectionExchange(transport::ConnectionSet& connections, std::string what,
                                std::chrono::milliseconds timeout);

}  // namespace chorus::device
