// C10dStore: forwards to c10d::Store; c10d's timeouts become chorus TimeoutErrors.
#include "torch/c10d_store.h"

#include <algorithm>
#include <exception>

namespace chorus::torch_backend {

C10dStore::C10dStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}

void C10dStore::set(const std::string& key, const std::vector<std::uint8_t>& value) {
  store_->set(key, value);
}

std::vector<std::uint8_t> C10dStore::get(const std::string& key,
                                         std::chrono::milliseconds timeout) {
  wait({key}, timeout);
  return store_->get(key);
}

std::int64_t C10dStore::add(const std::string& key, std::int64_t delta) {
  return store_->add(key, delta);
}

bool C10dStore::check(const std::vector<std::string>& keys) {
  return store_->check(keys);
}

void C10dStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  // c10d reads a zero timeout as "no timeout"; chorus means "already expired".
  const auto bounded = std::max(timeout, std::chrono::milliseconds(1));
  try {
    store_->wait(keys, bounded);
    return;
  } catch (const std::exception& error) {
    // Name the keys still missing; a store that cannot even answer that is named as such.
    std::vector<std::string> missing;
    try {
      for (const auto& key : keys)
        if (!store_->check({key})) missing.push_back(key);
    } catch (const std::exception&) {
      missing = keys;
    }
    if (missing.empty()) return;  // they appeared just as the wait gave up
    transport::throwStoreTimeout(fmt::format("torch.distributed store ({})", error.what()), "wait",
                                 missing, timeout);
  }
}

}  // namespace chorus::torch_backend
