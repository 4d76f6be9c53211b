#include "transport_option.h"

#include <fmt/format.h>

#include "support/error.h"

namespace chorus::cli {

bool runsOnThisHost(const transport::TransportEntry& entry) {
  return !entry.supports.choosesPerPeer;
}

std::string describeTransportOption() {
  const std::string loopback = transport::transportNames([](const transport::TransportEntry& e) {
    return runsOnThisHost(e) && e.supports.reach == transport::TransportReach::anyHosts;
  });
  return fmt::format("{} ({}; processes are forked on this host{})",
                     transport::transportNames(runsOnThisHost),
                     transport::describeTransports(runsOnThisHost),
                     loopback.empty() ? "" : fmt::format(", {} over loopback", loopback));
}

const transport::TransportEntry& parseTransportOption(const std::string& name) {
  const transport::TransportEntry* entry = transport::findTransport(name);
  if (entry == nullptr)
    throw OptionError(
        fmt::format("unknown --transport '{}'; use {}", name, describeTransportOption()));
  if (!runsOnThisHost(*entry))
    throw OptionError(fmt::format(
        "--transport {} chooses {} for ranks a launcher starts (chorus bench --launched); here "
        "use {}",
        name, entry->description, describeTransportOption()));
  return *entry;
}

}  // namespace chorus::cli
