#include "device/peer_exchange.h"

#include <cstring>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "support/error.h"

namespace chorus::device {

namespace {

// Marks a descriptor message on the setup channel ("CHDEVSET"), so a peer that sent something
// else there is reported rather than misread.
constexpr std::uint64_t kSetupTag = 0x5445'5356'4544'4843ull;

}  // namespace

PeerExchange storeExchange(transport::Store& store, std::string prefix, int rank, int nranks,
                           std::chrono::milliseconds timeout) {
  auto round = std::make_shared<int>(0);
  return
      [&store, prefix = std::move(prefix), rank, nranks, timeout, round](const std::string& mine) {
        const int r = (*round)++;
        store.set(fmt::format("{}/{}/{}", prefix, r, rank),
                  std::vector<std::uint8_t>(mine.begin(), mine.end()));
        std::vector<std::string> all(static_cast<std::size_t>(nranks));
        for (int peer = 0; peer < nranks; ++peer) {
          const std::vector<std::uint8_t> value =
              store.get(fmt::format("{}/{}/{}", prefix, r, peer), timeout);
          all[static_cast<std::size_t>(peer)].assign(value.begin(), value.end());
        }
        return all;
      };
}

PeerExchange connectionExchange(transport::ConnectionSet& connections, std::string what,
                                std::chrono::milliseconds timeout) {
  return [&connections, what = std::move(what), timeout](const std::string& mine) {
    const int rank = connections.rank();
    const int n = connections.nranks();
    std::vector<std::string> all(static_cast<std::size_t>(n));
    all[static_cast<std::size_t>(rank)] = mine;
    std::vector<bool> sent(static_cast<std::size_t>(n), false);
    std::vector<bool> received(static_cast<std::size_t>(n), false);
    sent[static_cast<std::size_t>(rank)] = received[static_cast<std::size_t>(rank)] = true;
    int pending = 2 * (n - 1);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (std::uint64_t spin = 0; pending > 0; ++spin) {
      for (int peer = 0; peer < n; ++peer) {
        const auto p = static_cast<std::size_t>(peer);
        if (!sent[p]) {
          transport::Fifo& fifo = connections.sendFifo(peer, kDeviceSetupChannel);
          if (mine.size() > fifo.slotBytes())
            throw OptionError(fmt::format(
                "{}: a mailbox descriptor of {} bytes does not fit a FIFO slot of {} bytes", what,
                mine.size(), fifo.slotBytes()));
          if (std::uint8_t* slot = fifo.trySendSlot()) {
            std::memcpy(slot, mine.data(), mine.size());
            fifo.commitSend(mine.size(), kSetupTag);
            sent[p] = true;
            --pending;
          }
        }
        if (!received[p]) {
          transport::Fifo& fifo = connections.recvFifo(peer, kDeviceSetupChannel);
          transport::RecvSlot slot;
          if (fifo.tryRecvSlot(&slot)) {
            if (slot.tag != kSetupTag || slot.data == nullptr)
              throw CommError(fmt::format(
                  "{}: rank {} sent rank {} something other than its mailbox on the device set-up "
                  "channel; every rank of the communicator must use the same executor",
                  what, peer, rank));
            all[p].assign(reinterpret_cast<const char*>(slot.data), slot.bytes);
            fifo.releaseRecv();
            received[p] = true;
            --pending;
          }
        }
      }
      if (pending == 0) break;
      if (spin % 64 == 63) {
        if (std::string reason = connections.abortReason(); !reason.empty())
          throw CommError(
              fmt::format("{}: rank {} stopped setting up its mailbox: {}", what, rank, reason));
        if (std::chrono::steady_clock::now() > deadline) {
          std::string missing;
          for (int peer = 0; peer < n; ++peer)
            if (!received[static_cast<std::size_t>(peer)])
              missing += fmt::format("{}{}", missing.empty() ? "" : ", ", peer);
          throw TimeoutError(fmt::format(
              "{}: rank {} waited {} ms for the mailboxes of rank(s) {}; every rank of the "
              "communicator must make the same calls with the same executor (CHORUS_EXECUTOR)",
              what, rank, timeout.count(), missing));
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
    return all;
  };
}

}  // namespace chorus::device
