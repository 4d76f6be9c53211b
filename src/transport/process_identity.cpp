#include "transport/process_identity.h"

#include <unistd.h>

#include <climits>
#include <fstream>

namespace chorus::transport {
namespace {

std::string readFirstLine(const char* path) {
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
  return line;
}

std::string readLink(const char* path) {
  char buffer[128] = {};
  const ssize_t length = ::readlink(path, buffer, sizeof(buffer) - 1);
  return length > 0 ? std::string(buffer, static_cast<std::size_t>(length)) : std::string();
}

}  // namespace

RankIdentity identifyThisProcess() {
  RankIdentity identity;
  char host[HOST_NAME_MAX + 1] = {};
  if (::gethostname(host, sizeof(host) - 1) == 0) identity.hostname = host;
  identity.bootId = readFirstLine("/proc/sys/kernel/random/boot_id");
  identity.pidNamespace = readLink("/proc/self/ns/pid");
  identity.netNamespace = readLink("/proc/self/ns/net");
  identity.pid = ::getpid();
  return identity;
}

std::string networkNamespaceId(const RankIdentity& identity) {
  return identity.bootId + "/" + identity.netNamespace;
}

std::string networkNamespaceId() {
  return networkNamespaceId(identifyThisProcess());
}

}  // namespace chorus::transport
