// InMemoryStore: a Store for ranks that are threads of one process (runtime bootstrap and the
// thread-per-rank tests); a map guarded by a mutex, waiters sleep on a condition variable.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "transport/store.h"

namespace chorus::transport {

// Thread-safe; share one instance (e.g. through std::shared_ptr) among the rank threads.
class InMemoryStore : public Store {
 public:
  void set(const std::string& key, const std::vector<std::uint8_t>& value) override;
  std::vector<std::uint8_t> get(const std::string& key, std::chrono::milliseconds timeout) override;
  std::int64_t add(const std::string& key, std::int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;

 private:
  // Keys of `keys` not in the map; caller holds mutex_.
  std::vector<std::string> findMissing(const std::vector<std::string>& keys) const;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::unordered_map<std::string, std::vector<std::uint8_t>> values_;
};

}  // namespace chorus::transport
