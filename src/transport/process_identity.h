// Where this process runs, as the transports' bootstraps compare it between ranks: the host
// name, the kernel's boot id (different machines differ), and the pid and network namespaces
// (pids, and addresses such as loopback, mean the same only within one).
#pragma once

#include <sys/types.h>

#include <string>

namespace chorus::transport {

struct RankIdentity {
  std::string hostname;      // gethostname(); empty if it failed
  std::string bootId;        // /proc/sys/kernel/random/boot_id: differs between machines
  std::string pidNamespace;  // /proc/self/ns/pid: pids mean the same only within one
  std::string netNamespace;  // /proc/self/ns/net: one network stack (loopback, interfaces)
  pid_t pid = 0;
};

RankIdentity identifyThisProcess();

// "<boot id>/<network namespace>": equal for two processes exactly when they share one kernel
// and one network stack, i.e. when they are on one host as far as networking goes.
std::string networkNamespaceId();
std::string networkNamespaceId(const RankIdentity& identity);

}  // namespace chorus::transport
