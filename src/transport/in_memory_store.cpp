#include "transport/in_memory_store.h"

#include <string_view>

namespace chorus::transport {

namespace {
constexpr std::string_view kBackend = "InMemoryStore";
}  // namespace

void InMemoryStore::set(const std::string& key, const std::vector<std::uint8_t>& value) {
  {
    std::lock_guard lock(mutex_);
    values_[key] = value;
  }
  changed_.notify_all();
}

std::vector<std::uint8_t> InMemoryStore::get(const std::string& key,
                                             std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  auto found = values_.end();
  bool ready = changed_.wait_until(lock, deadlineAfter(timeout), [&] {
    found = values_.find(key);
    return found != values_.end();
  });
  if (!ready) throwStoreTimeout(kBackend, fmt::format("get('{}')", key), {key}, timeout);
  return found->second;
}

std::int64_t InMemoryStore::add(const std::string& key, std::int64_t delta) {
  std::int64_t result = delta;
  {
    std::lock_guard lock(mutex_);
    auto found = values_.find(key);
    if (found != values_.end()) {
      auto current = parseCounter(found->second);
      if (!current) throw OptionError(nonCounterMessage(kBackend, key));
      result = *current + delta;
    }
    values_[key] = toBytes(std::to_string(result));
  }
  changed_.notify_all();
  return result;
}

bool InMemoryStore::check(const std::vector<std::string>& keys) {
  std::lock_guard lock(mutex_);
  return findMissing(keys).empty();
}

void InMemoryStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  bool ready =
      changed_.wait_until(lock, deadlineAfter(timeout), [&] { return findMissing(keys).empty(); });
  if (!ready) throwStoreTimeout(kBackend, "wait", findMissing(keys), timeout);
}

std::vector<std::string> InMemoryStore::findMissing(const std::vector<std::string>& keys) const {
  std::vector<std::string> missing;
  for (const auto& key : keys) {
    if (!values_.contains(key)) missing.push_back(key);
  }
  return missing;
}

}  // namespace chorus::transport
