// `--transport NAME` of `chorus run`, `bench` and `tune`: the ranks are threads of this process
// or processes it forks on this host, over one transport of the registry
// (transport/registry.h). A transport that chooses per peer (auto) is left to launched ranks.
#pragma once

#include <string>

#include "transport/registry.h"

namespace chorus::cli {

// Whether `--transport` of run, bench and tune may name `entry`.
bool runsOnThisHost(const transport::TransportEntry& entry);

// "thread, shm or tcp (thread: ranks are threads of one process; ...; processes are forked on
// this host, tcp over loopback)": the choices, for --help texts and errors.
std::string describeTransportOption();

// The transport --transport `name` names; else OptionError "unknown --transport 'NAME'; use
// thread, shm or tcp (...)", or for a registered transport run, bench and tune cannot use, why.
const transport::TransportEntry& parseTransportOption(const std::string& name);

}  // namespace chorus::cli
