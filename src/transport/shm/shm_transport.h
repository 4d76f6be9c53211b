// Shared-memory transport: the ranks of a group are processes on one host. Each connection
// (sender -> receiver on a channel) is a FIFO of slots in its own /dev/shm segment, created on
// first use by whichever end gets there first; a group segment holds the abort flag and each
// rank's published call. Peers that exit are noticed while waiting (abortReason()).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "transport/connections.h"
#include "transport/fifo.h"
#include "transport/store.h"

namespace chorus::transport {

struct ShmOptions {
  FifoOptions fifo;
  // Unique per communicator and the same on every rank, e.g. "chorus-<nonce hex>-<comm id>";
  // segment names are "/<prefix>-..." so several communicators (and jobs) never clash.
  std::string namePrefix;
  std::chrono::milliseconds timeout{300'000};  // rendezvous and segment set-up
  // Named in the error when /dev/shm lacks room for a segment (the API's variables).
  std::string slotsVariable = "CHORUS_SLOTS";
  std::string slotBytesVariable = "CHORUS_SLOT_BYTES";
  // The ranks' numbers in messages, by rank of this group (empty = the same numbers): the
  // mixed transport's per-host groups name ranks by their global number.
  std::vector<int> rankNames;
};

// Collective: every rank of the group calls it with the same store namespace, prefix and FIFO
// shape. Exchanges host identity and process ids through `store` (CommError if the ranks are
// not all on this host), creates or opens the group segment, and returns this rank's view
// (used by one thread at a time; `store` is not kept). A segment's name is removed as soon as
// both ends have mapped it. Destroying the view marks the rank as gone cleanly (so peers do
// not report its exit), unmaps everything and removes the names of its connections that no
// rank will open any more; a segment holding messages for a peer that has not opened it yet
// stays until that peer maps it or leaves. It never waits for peers.
std::unique_ptr<ConnectionSet> connectShm(Store& store, int rank, int nranks,
                                          const ShmOptions& options);

}  // namespace chorus::transport
