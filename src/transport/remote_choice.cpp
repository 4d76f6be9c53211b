#include "transport/remote_choice.h"

#include <fmt/format.h>

#include "chorus/error.h"

namespace chorus::transport {

RemoteTransport parseRemoteTransport(std::string_view text, std::string_view what) {
  if (text == "auto") return RemoteTransport::automatic;
  if (text == "tcp") return RemoteTransport::tcp;
  if (text == "ucx") return RemoteTransport::ucx;
  throw OptionError(fmt::format(
      "{}='{}' is not a way to reach other hosts; choose auto (ucx where every rank's UCX finds "
      "an RDMA device, else tcp), tcp or ucx",
      what, text));
}

const char* remoteTransportName(RemoteTransport remote) {
  switch (remote) {
    case RemoteTransport::tcp:
      return "tcp";
    case RemoteTransport::ucx:
      return "ucx";
    case RemoteTransport::automatic:
      break;
  }
  return "auto";
}

std::string encodeRemoteWish(const RemoteWish& wish) {
  return fmt::format("{} {}", remoteTransportName(wish.asked), wish.rdmaDevices);
}

RemoteWish decodeRemoteWish(std::string_view text, int rank) {
  const std::size_t space = text.find(' ');
  RemoteWish wish;
  try {
    if (space == std::string_view::npos) throw OptionError("no separator");
    wish.asked = parseRemoteTransport(text.substr(0, space), "");
  } catch (const OptionError&) {
    throw CommError(fmt::format(
        "rank {} published '{}' as its way to reach other hosts, which this chorus cannot "
        "read: do all ranks run the same chorus version?",
        rank, text.substr(0, 80)));
  }
  wish.rdmaDevices = std::string(text.substr(space + 1));
  return wish;
}

RemoteDecision decideRemote(const std::vector<RemoteWish>& wishes) {
  int explicitRank = -1;
  for (int r = 0; r < static_cast<int>(wishes.size()); ++r) {
    const RemoteTransport asked = wishes[static_cast<std::size_t>(r)].asked;
    if (asked == RemoteTransport::automatic) continue;
    if (explicitRank >= 0 && wishes[static_cast<std::size_t>(explicitRank)].asked != asked)
      throw OptionError(fmt::format(
          "rank {} has CHORUS_REMOTE_TRANSPORT={} but rank {} has {}: set the same value on "
          "every rank (or leave it unset)",
          explicitRank, remoteTransportName(wishes[static_cast<std::size_t>(explicitRank)].asked),
          r, remoteTransportName(asked)));
    explicitRank = r;
  }
  if (explicitRank >= 0) {
    const RemoteTransport asked = wishes[static_cast<std::size_t>(explicitRank)].asked;
    return {asked == RemoteTransport::ucx,
            fmt::format("CHORUS_REMOTE_TRANSPORT={}", remoteTransportName(asked))};
  }
  for (int r = 0; r < static_cast<int>(wishes.size()); ++r)
    if (wishes[static_cast<std::size_t>(r)].rdmaDevices.empty())
      return {false, fmt::format("rank {}'s UCX finds no RDMA device", r)};
  return {true, fmt::format("every rank's UCX finds an RDMA device (rank 0: {})",
                            wishes.front().rdmaDevices)};
}

}  // namespace chorus::transport
