// The mailboxes of this process's device ranks by address (device layer), for peers that are
// threads of one process: a rank publishes its mailbox's address, and each peer that maps it
// holds it, as a process holds a peer's /dev/shm segment or CUDA IPC mapping. That matters
// because the receiver of a rank's last message acks it in that rank's mailbox, possibly after
// that rank's call returned. `Mailbox` is the memory's owner (host or device bytes).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace chorus::device {

template <class Mailbox>
class MailboxRegistry {
 public:
  // Registers `mailbox`, whose memory starts at `address`; the registry does not keep it alive.
  void add(const std::shared_ptr<Mailbox>& mailbox, const void* address) {
    std::lock_guard lock(mutex_);
    std::erase_if(byAddress_, [](const auto& entry) { return entry.second.expired(); });
    byAddress_[reinterpret_cast<std::uintptr_t>(address)] = mailbox;
  }
  // The mailbox at `address`; null if none is registered there or it is gone.
  std::shared_ptr<Mailbox> find(std::uintptr_t address) {
    std::lock_guard lock(mutex_);
    const auto it = byAddress_.find(address);
    return it == byAddress_.end() ? nullptr : it->second.lock();
  }

 private:
  std::mutex mutex_;
  std::map<std::uintptr_t, std::weak_ptr<Mailbox>> byAddress_;
};

}  // namespace chorus::device
