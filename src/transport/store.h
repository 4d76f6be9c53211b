// Store: the key-value rendezvous shared by all ranks of a communicator (runtime bootstrap),
// plus PrefixStore (one namespace per communicator on a shared store) and byte helpers.
// Backends: in_memory_store.h (threads), file_store.h (shared directory), tcp_store.h (hosts).
#pragma once

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "support/error.h"

namespace chorus::transport {

// Key-value rendezvous. Every implementation is thread-safe. Counters written by add() are
// stored as their decimal text, so get() on a counter key returns e.g. "42".
class Store {
 public:
  virtual ~Store() = default;

  // Creates or overwrites `key`.
  virtual void set(const std::string& key, const std::vector<std::uint8_t>& value) = 0;
  // Blocks until `key` exists and returns its value; throws TimeoutError naming the key and the
  // timeout when it does not appear within `timeout`.
  virtual std::vector<std::uint8_t> get(const std::string& key,
                                        std::chrono::milliseconds timeout) = 0;
  // Atomically adds `delta` to the integer counter `key` (created at 0) and returns the new
  // value. Throws OptionError if `key` holds something that is not a decimal integer.
  virtual std::int64_t add(const std::string& key, std::int64_t delta) = 0;
  // True if every key exists now (no waiting).
  virtual bool check(const std::vector<std::string>& keys) = 0;
  // Blocks until every key exists; throws TimeoutError naming the missing ones.
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
};

// A view of `base` whose keys are "<prefix>/<key>", so several communicators (or runs) can
// share one store without clashing. Thread-safe if `base` is.
class PrefixStore : public Store {
 public:
  PrefixStore(std::shared_ptr<Store> base, std::string prefix)
      : base_(std::move(base)), prefix_(std::move(prefix)) {}

  void set(const std::string& key, const std::vector<std::uint8_t>& value) override {
    base_->set(join(key), value);
  }
  std::vector<std::uint8_t> get(const std::string& key,
                                std::chrono::milliseconds timeout) override {
    return base_->get(join(key), timeout);
  }
  std::int64_t add(const std::string& key, std::int64_t delta) override {
    return base_->add(join(key), delta);
  }
  bool check(const std::vector<std::string>& keys) override { return base_->check(joinAll(keys)); }
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    base_->wait(joinAll(keys), timeout);
  }

  const std::string& prefix() const { return prefix_; }

 private:
  std::string join(const std::string& key) const { return prefix_ + "/" + key; }
  std::vector<std::string> joinAll(const std::vector<std::string>& keys) const {
    std::vector<std::string> joined;
    joined.reserve(keys.size());
    for (const auto& key : keys)
      joined.push_back(join(key));
    return joined;
  }

  std::shared_ptr<Store> base_;
  std::string prefix_;
};

inline std::string toString(const std::vector<std::uint8_t>& bytes) {
  return std::string(bytes.begin(), bytes.end());
}

inline std::vector<std::uint8_t> toBytes(std::string_view text) {
  return std::vector<std::uint8_t>(text.begin(), text.end());
}

// For Store implementations: throws the TimeoutError every backend reports when `missing` keys
// did not appear within `timeout`. `backend` names the store (e.g. "FileStore /tmp/x").
[[noreturn]] inline void throwStoreTimeout(std::string_view backend, std::string_view operation,
                                           const std::vector<std::string>& missing,
                                           std::chrono::milliseconds timeout) {
  std::string keys;
  for (const auto& key : missing)
    keys += fmt::format("{}'{}'", keys.empty() ? "" : ", ", key);
  throw TimeoutError(fmt::format(
      "{}: {} timed out after {} ms waiting for key{} {} that no rank has set; check that every "
      "rank reaches the same rendezvous (same ranks, same prefix) or raise the timeout "
      "(CHORUS_TIMEOUT)",
      backend, operation, timeout.count(), missing.size() == 1 ? "" : "s", keys));
}

// For Store implementations: now + `timeout`, saturating instead of overflowing for huge
// timeouts; a negative timeout means "already expired".
inline std::chrono::steady_clock::time_point deadlineAfter(std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  auto now = Clock::now();
  auto room = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now);
  if (timeout >= room) return Clock::time_point::max();
  return now + std::max(timeout, std::chrono::milliseconds(0));
}

// For Store implementations: the counter stored in `value` (decimal text), or nullopt if
// `value` is not a decimal int64.
inline std::optional<std::int64_t> parseCounter(const std::vector<std::uint8_t>& value) {
  std::int64_t result = 0;
  const char* begin = reinterpret_cast<const char*>(value.data());
  const char* end = begin + value.size();
  auto [ptr, ec] = std::from_chars(begin, end, result);
  if (value.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return result;
}

// For Store implementations: the message of the OptionError add() throws on a non-counter key.
inline std::string nonCounterMessage(std::string_view backend, std::string_view key) {
  return fmt::format(
      "{}: add('{}') found a value that is not a decimal integer; add() only works on counter "
      "keys, so use a different key for set() and add()",
      backend, key);
}

}  // namespace chorus::transport
