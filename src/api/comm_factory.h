// Communicators from parts (api layer): the caller picks the plan provider and the rendezvous;
// the public init functions (init.cpp) and the tests build on these.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "api/comm_config.h"
#include "chorus/chorus.h"
#include "runtime/plan_provider.h"
#include "transport/store.h"

namespace chorus::api {

// The plan provider of a communicator of `nranks` ranks: the selection layer over the
// algorithm library with `config`'s CHORUS_ALGO and CHORUS_ALGO_DIR (OptionError if bad).
// `tuningTransport`: whose tuning tables to use (empty: config.transport's).
std::shared_ptr<runtime::PlanProvider> selectPlans(int nranks, const ResolvedConfig& config,
                                                   std::string_view tuningTransport = {});

// How many communicators this process has created for `key` (a rendezvous and a rank) so far.
// Creation is collective and ordered, so every rank counts the same and the k-th communicator
// of every rank meets in the same store namespace. Thread-safe.
int nextCommunicatorIndex(const std::string& key);

// `nranks` communicators whose ranks are threads of this process: config.transport's group
// factory makes them all at once (thread), else each rank connects through an in-memory store
// (shm, tcp). Each rank runs its calls on the executor config.executor names (OptionError if
// none has that name).
std::vector<Communicator> makeInProcessCommunicators(int nranks, const ResolvedConfig& config,
                                                     std::shared_ptr<runtime::PlanProvider> plans);

// One rank of a communicator over config.transport, a transport whose ranks connect on their own
// (shm, tcp, or auto: shm within a host and tcp across hosts; OptionError for another), on the
// executor config.executor names. Collective: every rank calls it with a store namespace and
// `namePrefix` unique to this communicator (transport::TransportOptions::groupName).
Communicator makeProcessCommunicator(std::shared_ptr<transport::Store> store,
                                     const std::string& namePrefix, int rank, int nranks,
                                     const ResolvedConfig& config,
                                     std::shared_ptr<runtime::PlanProvider> plans);

}  // namespace chorus::api
