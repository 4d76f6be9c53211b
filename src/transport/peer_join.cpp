#include "transport/peer_join.h"

#include <algorithm>

#include <fmt/format.h>

#include "chorus/error.h"

namespace chorus::transport {

std::vector<std::uint8_t> awaitPeerJoin(Store& store, const std::string& key, int peer, int nranks,
                                        int rank, std::chrono::steady_clock::time_point deadline,
                                        std::chrono::milliseconds timeout) {
  const auto left =
      std::max(std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                 deadline - std::chrono::steady_clock::now()));
  try {
    return store.get(key, left);
  } catch (const TimeoutError&) {
    throw TimeoutError(fmt::format(
        "rank {} of {} did not join the communicator within {} ms, so rank {} stops waiting: "
        "it has not started, failed before creating its communicator, or joined another one "
        "(a different job id or communicator count); raise CHORUS_TIMEOUT if it is only slow",
        peer, nranks, timeout.count(), rank));
  } catch (const CommError& error) {
    throw CommError(fmt::format("waiting for rank {} of {} to join the communicator: {}", peer,
                                nranks, error.what()));
  }
}

}  // namespace chorus::transport
